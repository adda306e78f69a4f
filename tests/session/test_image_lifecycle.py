"""A session that saw an image goes on living: resume, fork and rewind replay it whole, and
every later request is one the API accepts (over HTTP, both providers)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from mini_claude import events as ev
from mini_claude.conversation import ImageBlock, Message, message_to_dict
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.transcript import load_session
from tests.support.agent import PROVIDERS, Runs
from tests.support.rewind import point_for, rewinder


def picture() -> bytes:
    image = Image.new("RGB", (64, 48), (240, 240, 240))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "shot.png").write_bytes(picture())
    return root


def _replies() -> ScriptedPolicy:
    return ScriptedPolicy([
        Reply("Looking at it.", [ToolCall("read_file", {"path": "shot.png"})]),
        Reply("A grey picture."),
    ], final=Reply("Understood."))


def _accepted(events: list[ev.Event], simulator: Simulator) -> None:
    errors = [e for e in events if isinstance(e, ev.TurnError)]
    assert not errors, errors
    assert any(isinstance(e, ev.TurnFinished) for e in events)
    assert all(r.status == 200 for r in simulator.requests), [
        (r.status, r.error) for r in simulator.requests if r.status != 200]


def _history(messages: list[Message]) -> list[dict[str, Any]]:
    return [message_to_dict(m) for m in messages]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("fork", [False, True])
def test_a_session_that_read_an_image_resumes_whole(
    provider: str, fork: bool, runs: Runs, simulator: Simulator
) -> None:
    simulator.policy = _replies()
    first = runs(provider)
    first.start()
    _accepted(first.turn("what is in shot.png?"), simulator)
    before = _history(first.agent.conversation.messages)
    assert any(isinstance(b, ImageBlock) for m in first.agent.conversation for b in m.blocks)
    first.close()

    second = runs(provider)
    second.session.resume(None, fork=fork)
    assert second.session.warnings == []
    assert _history(second.agent.conversation.messages) == before
    _accepted(second.turn("and now?"), simulator)
    sent = json.dumps(simulator.requests[-1].body)
    assert ("image/png;base64," in sent) if provider == "openai" else ('"image"' in sent)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_rewind_in_a_live_session_after_an_image(
    provider: str, runs: Runs, simulator: Simulator
) -> None:
    simulator.policy = _replies()
    run = runs(provider)
    run.start()
    _accepted(run.turn("what is in shot.png?"), simulator)
    kept = _history(run.agent.conversation.messages)
    _accepted(run.turn("second question"), simulator)
    rewinder(run).rewind(point_for(run, "second question"), code=False, conversation=True)
    assert _history(run.agent.conversation.messages) == kept
    _accepted(run.turn("second question again"), simulator)
    assert load_session(run.agent.transcript.path).warnings == []


def test_a_compaction_after_an_image_and_thinking_is_accepted(
    runs: Runs, simulator: Simulator
) -> None:
    """The summary request stands a placeholder for the image, so thinking signed after the
    image no longer matches its history: it is left out, not sent to be refused."""
    simulator.policy = _replies()
    run = runs("anthropic", thinking_tokens=2048)
    run.start()
    _accepted(run.turn("what is in shot.png?"), simulator)
    _accepted(run.turn("and the colours?"), simulator)
    events = run.compact()
    assert any(isinstance(e, ev.CompactionFinished) for e in events), events
    assert len(run.summary_requests()) == 1
    _accepted(run.turn("go on"), simulator)
