"""Every way out of a sandboxed command, through the model's ``run_shell`` over HTTP on both
providers: writes outside the project (absolute, ``..``, a symlink, a hard link,
``--target-directory``), a git hook, reading ``~/.ssh/id_rsa`` and mini-claude's transcripts,
a server on the host's loopback, and, in plan mode, the four commands that run code. All
run without a question, none changes or reads what it must not, and the model reads why."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.sandbox.support import SaysNo, needs_bwrap
from tests.support.agent import PROVIDERS, Run, last_results

pytestmark = needs_bwrap
SECRET_KEY = "-----BEGIN OPENSSH PRIVATE KEY----- sandbox-test-secret"
TRANSCRIPT_MARK = "transcript-mark-5d1e"
SERVED = "loopback-server-reached-77"
SANDBOX_NOTE = "[The command ran in the sandbox"


def shell(command: str) -> Reply:
    return Reply("Running.", [ToolCall("run_shell", {"command": command})])


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.is_symlink()}


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def world(tmp_path: Path, isolated_home: Path) -> dict[str, Path]:
    project = tmp_path / "project"
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / ".git" / "config").write_text("[core]\n")
    (project / "a.txt").write_text("alpha\nbeta\n")
    evil = project / "evil.sh"
    evil.write_text("#!/bin/sh\necho ran > \"$(dirname \"$0\")/pwned\"\necho ran > /tmp/x\n")
    evil.chmod(0o755)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("untouched\n")
    ssh = Path.home() / ".ssh"
    ssh.mkdir(parents=True)
    (ssh / "id_rsa").write_text(SECRET_KEY + "\n")
    return {"project": project, "outside": outside, "home": isolated_home}


@pytest.fixture
def loopback_server() -> Iterator[int]:
    """A server on the host's 127.0.0.1 that answers every connection with ``SERVED``."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(SERVED.encode() + b"\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


def results(run: Run) -> list[str]:
    return [r for request in run.model_requests()[1:] for r in last_results(request)]


def run_session(sim: Simulator, provider: str, world: dict[str, Path], commands: list[str],
                mode: str | None = None, after: object = None) -> tuple[list[str], SaysNo]:
    sim.policy = ScriptedPolicy([*(shell(c) for c in commands), Reply("Done.")])
    answers = SaysNo()
    run = Run(sim, provider, world["home"], world["project"], approver=answers,
              mode_flag=mode, sandbox=True)  # type: ignore[arg-type]
    try:
        run.start()
        run.turn(f"try it {TRANSCRIPT_MARK}")
        if callable(after):
            after(run)
    finally:
        run.session.shells.stop_all(grace=0.5)
        run.close()
    return results(run), answers


def test_writes_outside_the_project_and_into_git_hooks_are_contained(
    provider: str, simulator: Simulator, world: dict[str, Path],
) -> None:
    out = world["outside"]
    writes = [
        f"echo x > {out}/absolute.txt",
        "echo x > ../outside/dots.txt",
        f"ln -s {out} link && echo x > link/symlink.txt",
        f"ln {out}/victim.txt hard.txt && echo pwned > hard.txt",
        f"cp --target-directory={out} a.txt",
        "echo 'echo pwned' > .git/hooks/post-checkout",
        "cp evil.sh .git/hooks/pre-commit",
        "git config core.hooksPath /tmp/hooks",
        "mkdir -p .claude/commands && echo evil > .claude/commands/x.md",
    ]
    outside_before = snapshot(out)
    project = world["project"]
    stand_in: list[list[Path]] = []

    def look(run: Run) -> None:  # while the session lives, .claude is held by an empty folder
        stand_in.append(list((project / ".claude").iterdir()))
        sandbox = run.session.permission_setup.permissions.sandbox
        assert sandbox is not None
        sandbox.close()

    told, answers = run_session(simulator, provider, world, [*writes, "echo ok > inside.txt"],
                                after=look)
    assert answers.requests == []  # sandboxed: not one question
    assert snapshot(out) == outside_before
    assert stand_in == [[]]
    assert list((project / ".git" / "hooks").iterdir()) == []
    assert (project / ".git" / "config").read_text() == "[core]\n"
    assert not (project / ".claude").exists()  # and its stand-in goes with the session
    for command, result in zip(writes, told, strict=False):
        assert SANDBOX_NOTE in result, (command, result)
        assert "dangerouslyDisableSandbox" in result
    assert "Read-only file system" in told[0]
    assert (project / "inside.txt").read_text() == "ok\n"  # the project itself is writable
    assert told[len(writes)].endswith("[exit code 0]")


def test_secrets_transcripts_and_loopback_are_out_of_reach(
    provider: str, simulator: Simulator, world: dict[str, Path], loopback_server: int,
) -> None:
    reads = [
        "cat ~/.ssh/id_rsa",
        f"cat {world['home']}/transcripts/*.jsonl",
        f"grep -r {TRANSCRIPT_MARK} {world['home']}",
        f"exec 3<>/dev/tcp/127.0.0.1/{loopback_server} && head -1 <&3",
        f"python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:"
        f"{loopback_server}', timeout=5).read())\"",
    ]
    told, answers = run_session(simulator, provider, world, reads)
    assert answers.requests == []
    assert len(told) == len(reads)
    for command, result in zip(reads, told, strict=True):
        assert SECRET_KEY not in result and TRANSCRIPT_MARK not in result, command
        assert SERVED not in result, command
        assert SANDBOX_NOTE in result, (command, result)


PLAN_CODE_RUNNERS = [
    "git --config-env=core.fsmonitor=EVIL status",
    "GIT_EXTERNAL_DIFF=./evil.sh git diff",
    "sort --compress-program=./evil.sh -S 1 --batch-size=2 a.txt a.txt a.txt",
    "git grep --open-files-in-pager=./evil.sh alpha",
    "sort --compress-program=sh a.txt",
    "echo planted > planted.txt",
]


def test_plan_mode_runs_any_command_and_none_can_change_anything(
    provider: str, simulator: Simulator, world: dict[str, Path],
) -> None:
    project = world["project"]
    (project / "a.txt").write_text("".join(f"line {i}\n" for i in range(2000)))
    before = snapshot(project)
    told, answers = run_session(simulator, provider, world,
                                [*PLAN_CODE_RUNNERS, "sort a.txt | uniq -c | head -1"], "plan")
    assert answers.requests == []
    assert snapshot(project) == before  # nothing written, though the code ran
    for command, result in zip(PLAN_CODE_RUNNERS, told, strict=False):
        assert not result.startswith("Permission denied"), command  # it ran, in the sandbox
    assert "Read-only file system" in told[-2]
    assert "nothing is writable (plan mode)" in told[-2]
    assert "1 line 0" in told[-1]
