"""Print mode: stream-json carries the plan as a typed line, valid against the shipped schema;
the text format narrates it on stderr."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_claude.cli import main
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.printing import PROVIDERS, parse_lines, point_at

TODOS = [{"content": "Read core.py", "status": "completed"},
         {"content": "Explain add", "status": "in_progress"}]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_stream_json_emits_the_plan_as_a_todos_line(
    provider: str,
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Planning.", [ToolCall("todo_write", {"todos": TODOS})]),
        Reply("add() returns a + b"),
    ])
    point_at(simulator, provider, monkeypatch)
    code = main(["-p", "explain add", "--output-format", "stream-json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = parse_lines(out)
    plans = [line for line in lines if line.get("subtype") == "todos"]
    assert [p["todos"] for p in plans] == [TODOS]
    kinds = [(line["type"], line.get("subtype")) for line in lines]
    assert kinds.index(("mini_claude", "todos")) < kinds.index(("result", "success"))
    assert "todo_write" in lines[0]["tools"] and "skill" not in lines[0]["tools"]


def test_text_mode_narrates_the_plan_on_stderr(
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Planning.", [ToolCall("todo_write", {"todos": TODOS})]),
        Reply("done"),
    ])
    point_at(simulator, "anthropic", monkeypatch)
    assert main(["-p", "explain add"]) == 0
    _, err = capsys.readouterr()
    assert "· todo list 1/2 done: Explain add" in err


def test_print_mode_does_not_run_unapproved_project_hooks_and_says_so(
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    marker = project / "hook-ran.txt"
    settings = project / ".mini-claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [
        {"hooks": [{"type": "command", "command": f"touch {marker}"}]}]}}))
    simulator.policy = ScriptedPolicy([
        Reply("Reading.", [ToolCall("read_file", {"path": "README.md"})]), Reply("done"),
    ])
    point_at(simulator, "openai", monkeypatch)
    assert main(["-p", "read the readme"]) == 0
    _, err = capsys.readouterr()
    assert "this project's settings (.mini-claude/settings.json) are not used" in err
    assert not marker.exists()
