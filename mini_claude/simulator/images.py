"""Image blocks as the real APIs take them: checked, measured, and priced.

Anthropic: ``{"type": "image", "source": {"type": "base64", "media_type", "data"}}``,
png/jpeg/gif/webp, at most 5 MB and 8000 pixels a side, ``width × height / 750``
tokens (the API itself shrinks an image past 1568 pixels on its long edge, or past about
1,600 tokens, first).
OpenAI: ``{"type": "image_url", "image_url": {"url": "data:<type>;base64,…"}}``, at
most 20 MB, 85 + 170 tokens per 512-pixel tile after fitting the image in 2048×2048
and its short side in 768. Written apart from the client's own formulas on purpose:
this is the ground truth the client's meter is checked against.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import re
from dataclasses import dataclass
from typing import Any

from PIL import Image, UnidentifiedImageError

from mini_claude.simulator.types import WireError

MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
ANTHROPIC_MAX_BYTES = 5 * 1024 * 1024
ANTHROPIC_MAX_SIDE = 8000
ANTHROPIC_RESIZE_EDGE = 1568
ANTHROPIC_RESIZE_PIXELS = 1600 * 750  # about 1,600 tokens
OPENAI_MAX_BYTES = 20 * 1024 * 1024
_DATA_URL = re.compile(r"^data:(image/[a-z+.-]+);base64,(.*)$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class SeenImage:
    media_type: str
    width: int
    height: int
    tokens: int


def _decode(data: Any, where: str, max_bytes: int) -> tuple[bytes, int, int]:
    if not isinstance(data, str) or not data:
        raise WireError(f"{where}: image data must be a non-empty base64 string")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise WireError(f"{where}: image data is not valid base64") from None
    if len(raw) > max_bytes:
        raise WireError(f"{where}: image exceeds {max_bytes // (1024 * 1024)} MB maximum: "
                        f"{len(raw)} bytes > {max_bytes} bytes")
    try:
        with Image.open(io.BytesIO(raw)) as image:
            width, height = image.size
    except (UnidentifiedImageError, OSError):
        raise WireError(f"{where}: Could not process image") from None
    return raw, width, height


def anthropic_image(block: dict[str, Any], where: str) -> SeenImage:
    source = block.get("source")
    if not isinstance(source, dict) or source.get("type") != "base64":
        raise WireError(f"{where}.source: only base64 image sources are accepted here")
    media_type = source.get("media_type")
    if media_type not in MEDIA_TYPES:
        raise WireError(f"{where}.source.media_type: Input should be {', '.join(MEDIA_TYPES)}")
    _, width, height = _decode(source.get("data"), f"{where}.source.data", ANTHROPIC_MAX_BYTES)
    if max(width, height) > ANTHROPIC_MAX_SIDE:
        raise WireError(f"{where}: image dimensions exceed max allowed size: "
                        f"{ANTHROPIC_MAX_SIDE} pixels")
    scale = min(1.0, ANTHROPIC_RESIZE_EDGE / max(width, height),
                math.sqrt(ANTHROPIC_RESIZE_PIXELS / (width * height)))
    tokens = math.ceil((width * scale) * (height * scale) / 750)
    return SeenImage(str(media_type), width, height, tokens)


def openai_image(part: dict[str, Any], where: str) -> SeenImage:
    holder = part.get("image_url")
    url = holder.get("url") if isinstance(holder, dict) else None
    match = _DATA_URL.match(url) if isinstance(url, str) else None
    if match is None:
        raise WireError(f"Invalid '{where}.image_url.url': expected a base64 data URL.")
    media_type, data = match.groups()
    if media_type not in MEDIA_TYPES:
        raise WireError(f"Invalid '{where}.image_url.url': unsupported image type {media_type}")
    _, width, height = _decode(data, f"{where}.image_url.url", OPENAI_MAX_BYTES)
    return SeenImage(media_type, width, height, _tiles(width, height))


def _tiles(width: int, height: int) -> int:
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        w, h = w * 2048 / max(w, h), h * 2048 / max(w, h)
    if min(w, h) > 768:
        w, h = w * 768 / min(w, h), h * 768 / min(w, h)
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)
