"""Deny rules on Read hold inside the sandbox too, as Claude Code merges them into denyRead:
a sandboxed ``cat`` cannot read what the Read tool may not (a folder's contents, a path in
the home, a pattern at any depth), while the rest of the project stays readable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.sandbox.support import SaysNo, needs_bwrap
from tests.support.agent import PROVIDERS, Run, last_results

pytestmark = needs_bwrap
SECRETS = {"secrets/api.key": "folder-secret-1", "deep/certs/site.pem": "pem-secret-2"}
HOME_SECRET = "home-private-secret-3"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_read_deny_rules_hide_their_paths_from_sandboxed_commands(
    provider: str, simulator: Simulator, isolated_home: Path, tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    for name, text in {**SECRETS, "notes.txt": "readable-notes"}.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text + "\n")
    Path.home().mkdir(parents=True, exist_ok=True)
    (Path.home() / "private").write_text(HOME_SECRET + "\n")
    settings = Path.home() / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({
        "sandbox": {"enabled": True},
        "permissions": {"deny": ["Read(./secrets/**)", "Read(~/private)", "Read(*.pem)"]}}))
    commands = ["cat secrets/api.key", "cat ~/private", "cat deep/certs/site.pem",
                "grep -r secret . ~/private; cat notes.txt"]
    simulator.policy = ScriptedPolicy([*(Reply("Running.", [ToolCall("run_shell",
                                                                     {"command": c})])
                                         for c in commands), Reply("Done.")])
    answers = SaysNo()
    run = Run(simulator, provider, isolated_home, project, approver=answers, sandbox=True)
    try:
        run.start()
        run.turn("read them")
    finally:
        run.close()
    told = [r for request in run.model_requests()[1:] for r in last_results(request)]
    assert answers.requests == []
    assert len(told) == len(commands)
    for command, result in zip(commands, told, strict=True):
        for secret in (*SECRETS.values(), HOME_SECRET):
            assert secret not in result, (command, result)
    assert "readable-notes" in told[-1]
