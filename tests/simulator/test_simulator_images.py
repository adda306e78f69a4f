"""The simulator takes image blocks as the APIs do: checked (type, base64, size), and priced
by size, not by the length of their base64."""

from __future__ import annotations

import base64
import io
import math
from typing import Any

import anthropic
import openai
import pytest
from PIL import Image

from mini_claude.simulator import Simulator


def png_b64(width: int, height: int) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (1, 2, 3)).save(buffer, "PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def claude_image(data: str, media_type: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


@pytest.fixture
def sim() -> Any:
    with Simulator() as running:
        yield running


def claude_send(sim: Simulator, content: list[dict[str, Any]]) -> Any:
    client = anthropic.Anthropic(api_key="k", base_url=sim.url, max_retries=0)
    message: Any = {"role": "user", "content": content}  # raw blocks, as a peer would send
    return client.messages.create(model="sim", max_tokens=16, messages=[message])


def gpt_send(sim: Simulator, content: list[dict[str, Any]]) -> Any:
    client = openai.OpenAI(api_key="k", base_url=sim.openai_base_url, max_retries=0)
    message: Any = {"role": "user", "content": content}  # raw parts, as a peer would send
    return client.chat.completions.create(model="sim", max_completion_tokens=16,
                                          messages=[message])


def test_anthropic_prices_an_image_by_its_size(sim: Simulator) -> None:
    text = {"type": "text", "text": "what is this?"}
    plain = claude_send(sim, [text]).usage.input_tokens
    small = claude_send(sim, [text, claude_image(png_b64(300, 250))]).usage.input_tokens
    large = claude_send(sim, [text, claude_image(png_b64(3000, 2000))]).usage.input_tokens
    assert small - plain == 100 + 1  # 300 × 250 / 750, plus the block's framing
    shrunk = math.ceil(3000 * 2000 * (1600 * 750 / (3000 * 2000)) / 750)  # to ~1,600 tokens
    assert large - plain == shrunk + 1


def test_openai_prices_an_image_by_tiles(sim: Simulator) -> None:
    text = {"type": "text", "text": "what is this?"}
    url = f"data:image/png;base64,{png_b64(1024, 1024)}"
    plain = gpt_send(sim, [text]).usage.prompt_tokens
    with_image = gpt_send(sim, [text, {"type": "image_url", "image_url": {"url": url}}])
    assert with_image.usage.prompt_tokens - plain == 85 + 170 * 4  # 768×768: 2×2 tiles


def test_bad_images_are_refused(sim: Simulator) -> None:
    with pytest.raises(anthropic.BadRequestError, match="not valid base64"):
        claude_send(sim, [claude_image("!!not base64!!")])
    with pytest.raises(anthropic.BadRequestError, match="media_type"):
        claude_send(sim, [claude_image(png_b64(2, 2), "image/bmp")])
    with pytest.raises(anthropic.BadRequestError, match="Could not process image"):
        claude_send(sim, [claude_image(base64.b64encode(b"plain text").decode())])
    big = base64.b64encode(b"\x89PNG" + b"\0" * (5 * 1024 * 1024 + 10)).decode()
    with pytest.raises(anthropic.BadRequestError, match="exceeds 5 MB maximum"):
        claude_send(sim, [claude_image(big)])
    with pytest.raises(openai.BadRequestError, match="base64 data URL"):
        gpt_send(sim, [{"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}])
