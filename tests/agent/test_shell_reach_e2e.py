"""The model's ``run_shell`` over HTTP, both providers: in plan mode (with every command allowed
by rule) a command that is not certainly read-only never runs, in acceptEdits a command whose
options name a folder outside asks, and a deny rule holds where the line hides what runs.
Nothing is written, and the model reads why."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_claude.permissions.asking import PermissionDecision, PermissionRequest
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.agent import PROVIDERS, Run, Runs, last_results, run_factory


class SaysNo:
    def __init__(self) -> None:
        self.requests: list[PermissionRequest] = []

    async def __call__(self, request: PermissionRequest) -> PermissionDecision:
        self.requests.append(request)
        return PermissionDecision(False, reason="not now")


def shell(command: str) -> Reply:
    return Reply("Running.", [ToolCall("run_shell", {"command": command})])


def results(run: Run) -> list[str]:
    return [r for request in run.model_requests()[1:] for r in last_results(request)]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("alpha\nbeta\n")
    evil = root / "evil.sh"
    evil.write_text("#!/bin/sh\necho ran > \"$(dirname \"$0\")/pwned\"\n")
    evil.chmod(0o755)
    return root


@pytest.fixture
def runs(simulator: Simulator, isolated_home: Path, project: Path) -> Iterator[Runs]:
    with run_factory(simulator, isolated_home, project) as made:
        yield made


def user_rules(**rules: list[str]) -> None:
    """The user's own ``~/.claude/settings.json`` (HOME is the test's own)."""
    settings = Path.home() / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"permissions": rules}))


PLAN_WRITERS = [
    "git --config-env=core.fsmonitor=EVIL status",
    "GIT_EXTERNAL_DIFF=./evil.sh git diff",
    "sort --compress-program=./evil.sh a.txt",
    "sort -uo sorted.txt a.txt",
    "uniq a.txt uniq.txt",
    "xxd a.txt dump.txt",
    "ls >& listing.txt",
    "git grep --open-files-in-pager=./evil.sh alpha",
]


def test_plan_mode_runs_reads_and_refuses_every_writer_with_the_reason(
    provider: str, simulator: Simulator, isolated_home: Path, project: Path, runs: Runs,
) -> None:
    user_rules(allow=["Bash"])
    simulator.policy = ScriptedPolicy([*(shell(c) for c in PLAN_WRITERS),
                                       shell("sort a.txt | uniq -c"), Reply("Planned.")])
    before = snapshot(project)
    run = runs(provider, mode_flag="plan")
    run.start()
    run.turn("look around")
    assert snapshot(project) == before  # nothing written, nothing ran
    told = results(run)
    for command, result in zip(PLAN_WRITERS, told, strict=False):
        assert result.startswith("Permission denied: plan mode is on"), command
        assert "not certainly read-only" in result, command
    assert "sort -o is not known to be safe here" in told[3]
    assert "uniq writes to its operand 'uniq.txt'" in told[4]
    assert "redirected into a file (>& listing.txt)" in told[6]
    assert "1 alpha" in told[len(PLAN_WRITERS)]  # an ordinary read still runs


ACCEPT_EDITS_ESCAPES = [
    "cp --target-directory={out} a.txt",
    "mv --target-directory={out} a.txt",
    "cp -t {out} a.txt",
    "mv -vt {out} a.txt",
    "install -t {out} a.txt",
    "ln -t {out} a.txt",
    "cp a.txt copy.txt >& {out}/log",
]


def test_accept_edits_asks_before_options_that_name_a_folder_outside(
    provider: str, simulator: Simulator, isolated_home: Path, project: Path, tmp_path: Path,
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    commands = [c.format(out=outside) for c in ACCEPT_EDITS_ESCAPES]
    simulator.policy = ScriptedPolicy([*(shell(c) for c in commands),
                                       shell("mkdir -p sub && cp --target-directory=sub a.txt"),
                                       Reply("Done.")])
    answers = SaysNo()
    run = Run(simulator, provider, isolated_home, project, approver=answers,
              mode_flag="acceptEdits")
    try:
        run.start()
        run.turn("copy it out")
    finally:
        run.close()
    assert list(outside.iterdir()) == []
    assert (project / "a.txt").read_text() == "alpha\nbeta\n"
    assert [r.summary for r in answers.requests] == commands  # asked, never run unasked
    told = results(run)
    assert all(r == "Permission denied by the user: not now" for r in told[:len(commands)])
    assert (project / "sub" / "a.txt").exists()  # the same option inside runs unasked


def test_deny_rules_hold_where_the_line_hides_what_runs(
    provider: str, simulator: Simulator, isolated_home: Path, project: Path, runs: Runs,
) -> None:
    user_rules(deny=["Bash(rm:*)"])
    hidden = ["/bin/r? a.txt", "env -S 'rm a.txt'", "flock lock rm a.txt",
              "trap 'rm a.txt' EXIT", "git -c alias.x='!rm a.txt' x", "script -qc 'rm a.txt'"]
    simulator.policy = ScriptedPolicy([*(shell(c) for c in hidden), Reply("Gave up.")])
    run = runs(provider, mode_flag="bypassPermissions")
    run.start()
    run.turn("delete a.txt")
    assert (project / "a.txt").read_text() == "alpha\nbeta\n"
    told = results(run)
    assert all(r.startswith("Permission denied by the rule 'Bash(rm:*)'") for r in told), told
    assert "the command word is only known when the line runs" in told[0]
