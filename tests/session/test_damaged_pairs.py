"""A damaged line never leaves a tool call without its result (or a result without its call)
in a resumed history: the next request is one the API accepts (over HTTP, both providers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mini_claude import events as ev
from mini_claude.conversation import LOST_RESULT, validate
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.agent import PROVIDERS, Runs


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    return root


def _session_with_a_tool_call(provider: str, runs: Runs, simulator: Simulator) -> Path:
    simulator.policy = ScriptedPolicy([
        Reply("Reading.", [ToolCall("read_file", {"path": "a.txt"})]),
        Reply("It says alpha."),
        Reply("Second answer."),
    ], final=Reply("Understood."))
    run = runs(provider)
    run.start()
    run.turn("what is in a.txt?")
    run.turn("and then?")
    path = run.agent.transcript.path
    run.close()
    return path


def _damage(path: Path, wanted: str) -> None:
    """Tear the message line that holds a block of kind ``wanted``."""
    lines = path.read_text(encoding="utf-8").split("\n")
    for number, line in enumerate(lines):
        if line and json.loads(line).get("type") == "message" and f'"kind": "{wanted}"' in line:
            lines[number] = line[: len(line) // 2]
            break
    else:
        raise AssertionError(f"no message with a {wanted} block")
    path.write_text("\n".join(lines), encoding="utf-8")


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("torn", ["tool_result", "tool_use"])
def test_a_torn_line_leaves_a_history_the_api_accepts(
    provider: str, torn: str, runs: Runs, simulator: Simulator
) -> None:
    path = _session_with_a_tool_call(provider, runs, simulator)
    _damage(path, torn)
    resumed = runs(provider)
    resumed.session.resume(None)
    history = resumed.agent.conversation.messages
    assert validate(history) == []
    assert any("damaged" in w for w in resumed.session.warnings)
    if torn == "tool_result":
        assert any(r.content == LOST_RESULT for m in history for r in m.tool_results)
    events = resumed.turn("go on")
    assert not [e for e in events if isinstance(e, ev.TurnError)]
    assert all(r.status == 200 for r in simulator.requests), [
        r.error for r in simulator.requests if r.status != 200]
