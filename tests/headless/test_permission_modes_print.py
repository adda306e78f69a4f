"""Print mode and permission modes: ``--permission-mode plan`` returns the plan and changes
nothing, the mode is reported in the init line, a project's ``defaultMode`` counts only once
approved, and contradicting flags are a usage error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mini_claude.cli import main
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.printing import PROVIDERS, parse_lines, point_at

PLAN = "1. Make add() check its types\n2. Test it"


def plan_policy() -> ScriptedPolicy:
    return ScriptedPolicy([
        Reply("Reading.", [ToolCall("read_file", {"path": "pkg/core.py"})]),
        Reply("Trying.", [ToolCall("edit_file", {"path": "pkg/core.py", "old": "a + b",
                                                 "new": "a - b"})]),
        Reply("Plan ready.", [ToolCall("exit_plan_mode", {"plan": PLAN})]),
        lambda conv: Reply(PLAN if "final answer" in conv.last_tool_results()[0].content
                           else "no"),
    ])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_plan_mode_in_print_mode_returns_the_plan_and_changes_nothing(
    provider: str, project: Path, simulator: Simulator, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = plan_policy()
    point_at(simulator, provider, monkeypatch)
    code = main(["-p", "make add safer", "--permission-mode", "plan", "--output-format",
                 "stream-json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = parse_lines(out)
    assert lines[0]["permissionMode"] == "plan"
    result = lines[-1]
    assert result["result"] == PLAN and result["is_error"] is False
    assert [d["tool_name"] for d in result["permission_denials"]] == ["edit_file"]
    assert (project / "pkg" / "core.py").read_text().count("a + b") == 1


def test_yes_is_bypass_and_cannot_be_combined_with_another_mode(
    project: Path, simulator: Simulator, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    point_at(simulator, "anthropic", monkeypatch)
    assert main(["-p", "x", "--yes", "--permission-mode", "plan"]) == 2
    _, err = capsys.readouterr()
    assert err.count("\n") == 1 and "--yes means --permission-mode bypassPermissions" in err
    with pytest.raises(SystemExit) as exited:  # argparse's own usage error
        main(["-p", "x", "--permission-mode", "sideways"])
    assert exited.value.code == 2
    _, err = capsys.readouterr()
    assert "unknown permission mode 'sideways'" in err
    assert simulator.requests == []
    simulator.policy = ScriptedPolicy([Reply("ok")])
    assert main(["-p", "x", "--yes", "--output-format", "stream-json"]) == 0
    out, _ = capsys.readouterr()
    assert parse_lines(out)[0]["permissionMode"] == "bypassPermissions"


def test_a_projects_default_mode_counts_only_once_approved(
    project: Path, simulator: Simulator, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"defaultMode": "acceptEdits"}}))
    simulator.policy = ScriptedPolicy([
        Reply("Editing.", [ToolCall("edit_file", {"path": "README.md", "old": "demo",
                                                  "new": "edited"})]),
        Reply("done"),
    ])
    point_at(simulator, "openai", monkeypatch)
    assert main(["-p", "edit", "--output-format", "stream-json"]) == 0
    out, err = capsys.readouterr()
    assert parse_lines(out)[0]["permissionMode"] == "default"
    assert "(.claude/settings.json) are not used beyond their deny rules" in err
    assert (project / "README.md").read_text() == "# demo project\n"
    from mini_claude.project.trust import ProjectTrust
    from mini_claude.settings import from_environment

    home = from_environment(dict(__import__("os").environ)).home
    ProjectTrust(home).approve(project, settings, settings.read_bytes())
    simulator.policy = ScriptedPolicy([
        Reply("Editing.", [ToolCall("edit_file", {"path": "README.md", "old": "demo",
                                                  "new": "edited"})]),
        Reply("done"),
    ])
    assert main(["-p", "edit", "--output-format", "stream-json"]) == 0
    out, _ = capsys.readouterr()
    assert parse_lines(out)[0]["permissionMode"] == "acceptEdits"
    assert (project / "README.md").read_text() == "# edited project\n"
