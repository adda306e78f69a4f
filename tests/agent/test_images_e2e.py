"""Images end to end over HTTP, both providers: read_file of a picture and an image sent with
the message reach the server as image blocks, priced as the API prices them; a summary request
carries a placeholder naming the file, never the image data."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from mini_claude import events as ev
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.tools.images import image_tokens, load_image
from tests.support.agent import PROVIDERS, Runs

WIDTH, HEIGHT = 800, 600


def picture() -> bytes:
    image = Image.new("RGB", (WIDTH, HEIGHT), (240, 240, 240))
    for x in range(100, 300):
        for y in range(100, 140):
            image.putpixel((x, y), (200, 30, 30))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "shot.png").write_bytes(picture())
    return root


@pytest.mark.parametrize("provider", PROVIDERS)
def test_read_file_of_a_picture_reaches_the_server_as_an_image_priced_by_formula(
    provider: str, runs: Runs, simulator: Simulator
) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Looking at the screenshot.", [ToolCall("read_file", {"path": "shot.png"})]),
        Reply("The red bar is misaligned."),
    ])
    run = runs(provider)
    run.start()
    events = run.turn("what is wrong in shot.png?")
    assert any(isinstance(e, ev.TurnFinished) for e in events)
    before, after = run.model_requests()[:2]
    assert after.conversation is not None
    [image] = [i for m in after.conversation.messages for i in m.images]
    expected = image_tokens(provider, WIDTH, HEIGHT)
    assert (image.width, image.height, image.tokens) == (WIDTH, HEIGHT, expected)
    body = json.dumps(after.body)
    if provider == "anthropic":
        assert '"type": "image"' in body and '"media_type": "image/png"' in body
    else:
        assert '"image_url"' in body and "data:image/png;base64," in body
    grown = after.prompt_tokens - before.prompt_tokens
    assert expected <= grown <= expected + 300  # the image, the call and its short result
    # The meter's estimate before the request counted the image by the same formula,
    # not by its base64 (which would be ~40x more).
    estimate = [e.status.tokens for e in events if isinstance(e, ev.ModelCallStarted)][1]
    assert abs(estimate - after.prompt_tokens) < 0.1 * after.prompt_tokens, (
        estimate, after.prompt_tokens)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_image_sent_with_the_message_and_no_image_data_in_the_summary_request(
    provider: str, runs: Runs, simulator: Simulator, project: Path
) -> None:
    simulator.policy = ScriptedPolicy([Reply("I see a red bar."), Reply("Still here.")])
    run = runs(provider)
    run.start()
    image = load_image(project / "shot.png", "shot.png", run.settings)

    async def send() -> list[ev.Event]:
        return [e async for e in run.agent.turn("what is this? @shot.png", images=[image])]

    run.run(send())
    [first] = run.model_requests()
    assert first.conversation is not None
    assert [(i.width, i.height) for i in first.conversation.messages[-1].images] == [
        (WIDTH, HEIGHT)
    ]
    compacted = run.compact()
    assert any(isinstance(e, ev.CompactionFinished) for e in compacted), compacted
    [summary] = run.summary_requests()
    body = json.dumps(summary.body)
    assert image.data[:40] not in body and "base64" not in body
    size = (project / "shot.png").stat().st_size
    assert f"[image shot.png: {WIDTH}×{HEIGHT}, {size:,} bytes; not included here]" in (
        body.encode().decode("unicode_escape")
    )
