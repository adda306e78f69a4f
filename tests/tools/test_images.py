"""Images: loaded within each API's limits, priced by the provider's formula, refused for a
model without vision, and found in a message as @mentions or dropped paths."""

from __future__ import annotations

import base64
import io
import os
import threading
from pathlib import Path

import pytest
from PIL import Image

from mini_claude.models import ImageLimits
from mini_claude.session.mentions import image_paths_in
from mini_claude.settings import Settings
from mini_claude.tools.base import NOTHING_TO_ASK
from mini_claude.tools.builtin.read_file import ReadFileTool
from mini_claude.tools.common import ToolError
from mini_claude.tools.images import (
    _fitted,
    image_from_bytes,
    image_tokens,
    load_image,
)
from tests.support.tools import run, tool_context


def png(width: int, height: int, noisy: bool = False) -> bytes:
    image = Image.new("RGB", (width, height), (30, 120, 200))
    if noisy:
        image = Image.effect_noise((width, height), 80).convert("RGB")
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def test_the_provider_formulas() -> None:
    assert image_tokens("anthropic", 1000, 750) == 1000  # width × height / 750
    assert image_tokens("anthropic", 200, 200) == 54
    # OpenAI: 2048×4096 fits 1024×2048, short side to 768: 768×1536 = 2×3 tiles.
    assert image_tokens("openai", 2048, 4096) == 85 + 170 * 6
    assert image_tokens("openai", 512, 512) == 85 + 170


def test_a_large_screenshot_is_downscaled_to_the_anthropic_limit() -> None:
    block = image_from_bytes(png(4000, 3000), "shot.png", Settings(provider="anthropic"))
    assert (block.width, block.height) == (1264, 948)  # within ~1,600 tokens, as the API would
    assert block.tokens == image_tokens("anthropic", 1264, 948) == 1598
    assert block.media_type == "image/png"
    openai = image_from_bytes(png(4000, 3000), "shot.png", Settings(provider="openai"))
    assert (openai.width, openai.height) == (2048, 1536)


def test_an_image_too_big_in_bytes_becomes_a_jpeg_under_the_limit() -> None:
    raw = png(1500, 1500, noisy=True)
    assert len(raw) > 5 * 1024 * 1024  # noise compresses badly in PNG
    block = image_from_bytes(raw, "noise.png", Settings(provider="anthropic"))
    assert len(base64.b64decode(block.data)) <= 5 * 1024 * 1024
    assert block.original_bytes == len(raw)
    with Image.open(io.BytesIO(raw)) as image:
        fitted, data, media_type = _fitted(image, ImageLimits(400_000, 2048, 4_000_000))
    assert media_type == "image/jpeg" and len(data) <= 400_000
    assert fitted.width == fitted.height < 1500  # quality alone was not enough: smaller too


def test_a_small_png_is_sent_as_it_is(tmp_path: Path) -> None:
    raw = png(64, 32)
    (tmp_path / "icon.png").write_bytes(raw)
    block = load_image(tmp_path / "icon.png", "icon.png", Settings())
    assert base64.b64decode(block.data) == raw
    assert (block.width, block.height, block.tokens) == (64, 32, 3)


def test_an_image_path_that_is_a_pipe_is_refused_without_waiting(tmp_path: Path) -> None:
    """A FIFO named shot.png (or one swapped in after the checks) would block a plain
    read forever; the image is read non-blocking, as a regular file or not at all."""
    os.mkfifo(tmp_path / "shot.png")
    failures: list[str] = []

    def load() -> None:
        try:
            load_image(tmp_path / "shot.png", "shot.png", Settings())
        except ToolError as exc:
            failures.append(exc.message)

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert not reader.is_alive(), "reading the pipe blocked"
    assert failures and "a named pipe (FIFO), not a regular file" in failures[0]


def test_a_model_without_vision_gets_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(png(10, 10))
    with pytest.raises(ToolError, match="deepseek-chat does not accept images"):
        load_image(tmp_path / "shot.png", "shot.png", Settings(model="deepseek-chat"))
    blind = tool_context(tmp_path, vision=False)
    out = run(ReadFileTool().run({"path": "shot.png"}, blind, NOTHING_TO_ASK))
    assert out.is_error
    assert out.content == "cannot send shot.png: images are turned off for " \
        f"{Settings().model} (MINI_CLAUDE_VISION=0)"


def test_read_file_of_an_image_returns_the_image(tmp_path: Path) -> None:
    (tmp_path / "ui.png").write_bytes(png(300, 150))
    out = run(ReadFileTool().run({"path": "ui.png"}, tool_context(tmp_path), NOTHING_TO_ASK))
    assert not out.is_error
    assert out.content.startswith("[image ui.png: 300×150 image/png, ")
    assert "about 60 tokens in context" in out.content
    assert [(i.name, i.width, i.height) for i in out.images] == [("ui.png", 300, 150)]
    (tmp_path / "fake.png").write_text("not a picture")
    bad = run(ReadFileTool().run({"path": "fake.png"}, tool_context(tmp_path), NOTHING_TO_ASK))
    assert bad.is_error and "is not an image that can be read" in bad.content


def test_mentions_and_dropped_paths_are_found(tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(png(4, 4))
    (tmp_path / "my shots").mkdir()
    (tmp_path / "my shots" / "bug 1.jpg").write_bytes(b"x")
    dropped = str(tmp_path / "my shots" / "bug 1.jpg")
    text = f"what is wrong in @shot.png and '{dropped}'? also @missing.png and notes.txt"
    assert image_paths_in(text, tmp_path) == ["shot.png", dropped]
    escaped = dropped.replace(" ", "\\ ")
    assert image_paths_in(f"look at {escaped}", tmp_path) == [dropped]


def huge_png(width: int, height: int) -> bytes:
    """A one-colour PNG written directly (rows of zeros compress to almost nothing), so
    building it costs the test no memory."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))

    compressor = zlib.compressobj(9)
    row = b"\0" * (1 + width * 3)  # filter byte, then black RGB pixels
    pixels = b"".join(compressor.compress(row) for _ in range(height)) + compressor.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels)
            + chunk(b"IEND", b""))


# Peak memory from VmHWM, this program's own: ru_maxrss would count the parent's at exec.
PEAK_MEMORY_SCRIPT = """
import re, sys
from pathlib import Path
from mini_claude.settings import Settings
from mini_claude.tools.common import ToolError
from mini_claude.tools.images import load_image
try:
    load_image(Path(sys.argv[1]), "bomb.png", Settings(provider="anthropic", model="m"))
    print("decoded")
except ToolError as exc:
    print(exc.message)
status = Path("/proc/self/status").read_text()
print(int(re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1)) // 1024)
"""


def test_a_small_png_of_huge_dimensions_is_refused_before_it_is_decoded(tmp_path: Path) -> None:
    """12000×12000 pixels in a few hundred kilobytes: decoding it would take half a
    gigabyte or more; the header alone says so, and the answer names the size."""
    import subprocess
    import sys

    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(huge_png(12_000, 12_000))
    assert bomb.stat().st_size < 1_000_000
    done = subprocess.run([sys.executable, "-c", PEAK_MEMORY_SCRIPT, str(bomb)],
                          capture_output=True, text=True, timeout=120)
    message, peak_mb = done.stdout.strip().splitlines()
    assert message == ("bomb.png is 12,000×12,000 pixels, more than the 36,000,000 decoded "
                       "(MINI_CLAUDE_IMAGE_MAX_PIXELS); use a smaller version of it"), done.stderr
    assert int(peak_mb) < 400
    ctx = tool_context(tmp_path)
    read = run(ReadFileTool().run({"path": "bomb.png"}, ctx, NOTHING_TO_ASK))
    assert read.is_error and "12,000×12,000 pixels" in read.content and not read.images


def test_a_large_jpeg_is_decoded_reduced(tmp_path: Path) -> None:
    """A JPEG over the pixel limit is decoded at a fraction of its size, then fitted."""
    buffer = io.BytesIO()
    Image.new("RGB", (8000, 6000), (200, 40, 40)).save(buffer, "JPEG", quality=50)
    settings = Settings(provider="anthropic", model="m", image_max_pixels=10_000_000)
    image = image_from_bytes(buffer.getvalue(), "photo.jpg", settings)
    assert max(image.width, image.height) <= 1568 and image.width * 3 == image.height * 4
    with pytest.raises(ToolError, match=r"scan.png is 8,000×6,000 pixels, more than the "):
        image_from_bytes(huge_png(8000, 6000), "scan.png", settings)  # no reduced decoding
