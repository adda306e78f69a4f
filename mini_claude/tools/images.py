"""Images for the model: loaded with Pillow, kept within the provider's limits, priced.

Anthropic takes images up to 5 MB and bills ``width × height / 750`` tokens,
downscaling anything past 1568 pixels on the long edge or ~1,600 tokens itself; OpenAI takes up
to 20 MB, fits the image in 2048×2048, then its short side in 768, and bills
85 + 170 tokens per 512-pixel tile. We downscale first, so what we send is what
we count and a huge screenshot never costs more than the API would charge.
"""

from __future__ import annotations

import base64
import io
import math
from pathlib import Path
from typing import TYPE_CHECKING

from mini_claude.conversation import ImageBlock
from mini_claude.models import ImageLimits, provider_row
from mini_claude.safe_read import read_limited
from mini_claude.settings import Settings
from mini_claude.tools.common import ToolError

if TYPE_CHECKING:  # Pillow is imported when an image is first read: start-up stays fast
    from PIL import Image

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
SENT_AS_IS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
# Models known to take text only, by name prefix; MINI_CLAUDE_VISION=0 covers the rest.
TEXT_ONLY_MODELS = ("deepseek-", "o1-mini", "o3-mini", "qwen2.5-coder", "gpt-3.5")
MAX_SOURCE_BYTES = 50 * 1024 * 1024  # larger files are not even opened


def is_image_path(path: str | Path) -> bool:
    return str(path).lower().endswith(IMAGE_SUFFIXES)


def vision_refusal(settings: Settings) -> str | None:
    """Why this model cannot be sent an image, or None when it can."""
    model = settings.model.lower()
    if not settings.vision:
        return f"images are turned off for {settings.model} (MINI_CLAUDE_VISION=0)"
    if model.startswith(TEXT_ONLY_MODELS):
        return (
            f"{settings.model} does not accept images; use a model with vision, or set "
            "MINI_CLAUDE_VISION=1 if this one does"
        )
    return None


def image_tokens(provider: str, width: int, height: int) -> int:
    """What the provider charges for an image of this size, once sent."""
    if provider_row(provider).images.tokens == "tiles":
        scale = min(1.0, 2048 / max(width, height))
        w, h = width * scale, height * scale
        scale = min(1.0, 768 / min(w, h))
        w, h = w * scale, h * scale
        return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)
    return math.ceil(width * height / 750)


def load_image(path: Path, shown: str, settings: Settings) -> ImageBlock:
    """The image at ``path``, downscaled and re-encoded as needed for the provider."""
    refusal = vision_refusal(settings)
    if refusal is not None:
        raise ToolError(f"cannot send {shown}: {refusal}")
    try:
        size = path.stat().st_size
        if size > MAX_SOURCE_BYTES:
            raise ToolError(f"{shown} is {size:,} bytes; images over 50 MB are not read")
        raw = read_limited(path, MAX_SOURCE_BYTES)  # never blocks on a file swapped for a pipe
    except OSError as exc:
        raise ToolError(f"cannot read {shown}: {exc.strerror or exc}") from None
    return image_from_bytes(raw, shown, settings)


def image_from_bytes(raw: bytes, name: str, settings: Settings) -> ImageBlock:
    from PIL import UnidentifiedImageError

    limits = provider_row(settings.provider).images
    try:
        image = _opened(raw)  # the header only: nothing is decoded yet
        source_format = image.format or ""
        width, height = image.size  # a JPEG may be decoded smaller: it is then re-encoded
        _reduce_or_refuse(image, name, limits, settings.image_max_pixels)
        image.load()
    except (UnidentifiedImageError, OSError) as exc:
        raise ToolError(f"{name} is not an image that can be read: {exc}") from None
    data, media_type = raw, SENT_AS_IS.get(source_format)
    too_large = max(width, height) > limits.max_edge or width * height > limits.max_pixels
    if media_type is None or too_large or len(raw) > limits.max_bytes:
        image, data, media_type = _fitted(image, limits)
    width, height = image.size
    return ImageBlock(
        media_type=media_type,
        data=base64.b64encode(data).decode("ascii"),
        width=width,
        height=height,
        name=name,
        original_bytes=len(raw),
        tokens=image_tokens(settings.provider, width, height),
    )


def _opened(raw: bytes) -> Image.Image:
    """The image's header, read without decoding its pixels.

    Pillow's own decompression-bomb check is off: ``_reduce_or_refuse`` is the one
    limit, applied before any pixel is decoded, with a message that gives the size.
    """
    from PIL import Image

    Image.MAX_IMAGE_PIXELS = None
    return Image.open(io.BytesIO(raw))


def _reduce_or_refuse(image: Image.Image, name: str, limits: ImageLimits, max_pixels: int
                      ) -> None:
    """Decode a large JPEG at a fraction of its size; refuse what would still be too many
    pixels (a 560 KB PNG of 12000×12000 unpacks to half a gigabyte)."""
    width, height = image.size
    if image.format == "JPEG" and max(width, height) > limits.max_edge:
        scale = limits.max_edge / max(width, height)
        image.draft(image.mode, (math.ceil(width * scale), math.ceil(height * scale)))
    if image.width * image.height > max_pixels:
        raise ToolError(
            f"{name} is {width:,}×{height:,} pixels, more than the {max_pixels:,} decoded "
            "(MINI_CLAUDE_IMAGE_MAX_PIXELS); use a smaller version of it"
        )


def _fitted(image: Image.Image, limits: ImageLimits) -> tuple[Image.Image, bytes, str]:
    """Downscale to the long-edge limit and encode as PNG, or JPEG when PNG is too big."""
    from PIL import Image

    width, height = image.size
    scale = min(1.0, limits.max_edge / max(width, height),
                math.sqrt(limits.max_pixels / (width * height)))
    if scale < 1.0:
        size = (max(1, int(width * scale)), max(1, int(height * scale)))
        image = image.resize(size, Image.Resampling.LANCZOS)
    png = _encode(image, "PNG")
    if len(png) <= limits.max_bytes:
        return image, png, "image/png"
    while True:
        for quality in (85, 70, 55, 40):
            jpeg = _encode(image.convert("RGB"), "JPEG", quality=quality)
            if len(jpeg) <= limits.max_bytes:
                return image, jpeg, "image/jpeg"
        smaller = (max(1, image.width * 3 // 4), max(1, image.height * 3 // 4))
        image = image.resize(smaller, Image.Resampling.LANCZOS)  # still too big: smaller


def _encode(image: Image.Image, fmt: str, **options: int) -> bytes:
    if fmt == "PNG" and image.mode not in ("RGB", "RGBA", "L", "LA", "P"):
        image = image.convert("RGBA")
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def describe(image: ImageBlock) -> str:
    """The text a tool result carries beside the image itself."""
    return (
        f"[image {image.name}: {image.width}×{image.height} {image.media_type}, "
        f"{image.original_bytes:,} bytes; about {image.tokens:,} tokens in context]"
    )
