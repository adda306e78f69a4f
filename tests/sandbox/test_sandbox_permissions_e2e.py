"""How the sandbox changes the questions, through the model's ``run_shell`` over HTTP on both
providers: sandboxed commands run unasked (``autoAllowBashIfSandboxed``) while deny and ask
rules hold; a command that asks to leave the sandbox asks with the model's reason, or is
refused when ``allowUnsandboxedCommands`` is false; ``excludedCommands`` ask as before; and
where bubblewrap is missing, one line says so and commands fall back to the questions
(``failIfUnavailable``: they do not run)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.ui.mode_view import SANDBOX_MARKER, mode_marker
from tests.sandbox.support import SaysNo, needs_bwrap
from tests.support.agent import PROVIDERS, Run, last_results

MISSING_BWRAP = "/nonexistent/bin/bwrap"


def shell(command: str, **extra: Any) -> Reply:
    return Reply("Running.", [ToolCall("run_shell", {"command": command, **extra})])


def user_settings(data: dict[str, Any]) -> None:
    """The user's own ``~/.claude/settings.json`` (HOME is the test's own)."""
    path = Path.home() / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def session(sim: Simulator, provider: str, home: Path, project: Path, replies: list[Reply],
            **settings: Any) -> tuple[Run, list[str], SaysNo]:
    sim.policy = ScriptedPolicy([*replies, Reply("Done.")])
    answers = SaysNo()
    run = Run(sim, provider, home, project, approver=answers, **settings)
    try:
        run.start()
        run.turn("go")
    finally:
        run.close()
    told = [r for request in run.model_requests()[1:] for r in last_results(request)]
    return run, told, answers


@needs_bwrap
def test_sandboxed_commands_run_unasked_but_deny_and_ask_rules_hold(
    provider: str, simulator: Simulator, isolated_home: Path, project: Path,
) -> None:
    user_settings({"permissions": {"deny": ["Bash(rm:*)"], "ask": ["Bash(git push:*)"]},
                   "sandbox": {"enabled": True, "excludedCommands": ["docker"]}})
    replies = [shell("echo one > one.txt"), shell("rm one.txt"), shell("git push origin"),
               shell("docker ps"),
               shell("touch ../out.txt", dangerouslyDisableSandbox=True,
                     reason="it writes beside the project")]
    run, told, answers = session(simulator, provider, isolated_home, project, replies)
    assert (project / "one.txt").exists()  # ran unasked; rm was denied
    assert told[0].endswith("[exit code 0]")
    assert told[1].startswith("Permission denied by")
    assert [r.summary for r in answers.requests] == [
        "git push origin  (asked by the rule 'Bash(git push:*)' from "
        f"{Path.home() / '.claude' / 'settings.json'})",
        "docker ps",
        "touch ../out.txt  (outside the sandbox: it writes beside the project)",
    ]
    assert not (project.parent / "out.txt").exists()
    assert SANDBOX_MARKER in mode_marker(run.session.permission_setup.permissions)


@needs_bwrap
def test_no_way_out_when_unsandboxed_commands_are_not_allowed(
    provider: str, simulator: Simulator, isolated_home: Path, project: Path,
) -> None:
    user_settings({"sandbox": {"enabled": True, "allowUnsandboxedCommands": False,
                               "autoAllowBashIfSandboxed": False}})
    replies = [shell("touch ../out.txt", dangerouslyDisableSandbox=True, reason="needed"),
               shell("echo hi")]
    _, told, answers = session(simulator, provider, isolated_home, project, replies,
                               mode_flag="bypassPermissions")
    assert "allowUnsandboxedCommands is false" in told[0]
    assert not (project.parent / "out.txt").exists()
    assert answers.requests == []  # bypassPermissions: the sandboxed one ran unasked
    assert "hi" in told[1]


def test_without_bubblewrap_one_line_says_so_and_commands_are_asked(
    provider: str, simulator: Simulator, isolated_home: Path, project: Path,
) -> None:
    run, told, answers = session(simulator, provider, isolated_home, project,
                                 [shell("echo hi > hi.txt")], sandbox=True,
                                 sandbox_bwrap_path=MISSING_BWRAP)
    lines = [w for w in run.session.warnings if w.startswith("sandbox unavailable")]
    assert lines == [f"sandbox unavailable: bubblewrap was not found ({MISSING_BWRAP}): "
                     "install bubblewrap (apt-get install bubblewrap); commands run "
                     "unsandboxed and are asked about as usual"]
    assert [r.summary for r in answers.requests] == ["echo hi > hi.txt"]
    assert told[0] == "Permission denied by the user: not now"
    permissions = run.session.permission_setup.permissions
    assert SANDBOX_MARKER not in mode_marker(permissions)
    assert permissions.sandbox is not None
    shown = permissions.sandbox.describe(permissions.mode, project, ())
    assert shown[0].startswith("Sandbox: wanted but unavailable")
    assert shown[1] == f"Missing: bubblewrap was not found ({MISSING_BWRAP}): install " \
                       "bubblewrap (apt-get install bubblewrap)"


def test_fail_if_unavailable_runs_nothing(
    provider: str, simulator: Simulator, isolated_home: Path, project: Path,
) -> None:
    user_settings({"sandbox": {"enabled": True, "failIfUnavailable": True}})
    run, told, answers = session(simulator, provider, isolated_home, project,
                                 [shell("echo hi > hi.txt")], mode_flag="bypassPermissions",
                                 sandbox_bwrap_path=MISSING_BWRAP)
    assert any("so no command will run" in w for w in run.session.warnings)
    assert told[0].startswith("Permission denied: the sandbox is required")
    assert answers.requests == []
    assert not (project / "hi.txt").exists()
