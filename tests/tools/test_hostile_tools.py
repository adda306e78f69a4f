"""Tools against an unlucky or hostile file system: cases 6-10 and 14 of the data-safety issue.

Each case runs a real session (SDK over HTTP to the strict simulator) where the
model's tool call meets the situation, plus a direct tool check where a race has
to be pinned down exactly.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_claude import events as ev
from mini_claude.permissions.asking import (
    PermissionDecision,
    PermissionRequest,
    allow_all,
    deny_all,
)
from mini_claude.providers import create_provider
from mini_claude.session.wiring import Session, SessionError
from mini_claude.settings import Settings
from mini_claude.simulator import Reply, ScriptedPolicy, SimConversation, Simulator, ToolCall
from mini_claude.tools.base import ToolContext
from mini_claude.tools.builtin.edit_file import EditFileTool
from mini_claude.tools.builtin.write_file import WriteFileTool
from mini_claude.tools.registry import default_registry
from tests.support.hostile import wait_for
from tests.support.reliability import (
    PROVIDERS,
    Provider,
    assert_history_valid,
    close_session,
    finished_text,
    make_project,
    of_kind,
    session_settings,
    turn,
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


@pytest.fixture
def opened() -> Iterator[list[Session]]:
    sessions: list[Session] = []
    yield sessions
    for session in sessions:
        close_session(session)


def start(
    sim: Simulator,
    provider: Provider,
    project: Path,
    home: Path,
    opened: list[Session],
    approver: object = allow_all,
    **changes: object,
) -> Session:
    settings = session_settings(sim, provider, home, **changes)
    session = Session(settings, project, create_provider(settings), approver)  # type: ignore[arg-type]
    session.start_new()
    opened.append(session)
    return session


def tool_errors(events: list[ev.Event]) -> list[str]:
    return [e.result.content for e in of_kind(events, ev.ToolFinished) if e.result.is_error]


def reads_result(seen: list[str], answer: str = "noted") -> object:
    def read(conv: SimConversation) -> Reply:
        seen.extend(r.content for r in conv.last_tool_results())
        return Reply(answer)

    return read


# ---- case 6: the change applied is the change approved ---------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_case6_an_edit_approved_on_a_file_that_then_changed_is_not_applied(
    provider: Provider, project: Path, simulator: Simulator, opened: list[Session],
    isolated_home: Path,
) -> None:
    """The user approves a diff; while the prompt was open the file changed so that the
    same call would now make another change. Nothing is written; the model is told."""
    target = project / "notes.txt"
    target.write_text("alpha\nbeta\n")

    async def approve_while_someone_edits(request: PermissionRequest) -> PermissionDecision:
        target.write_text("alpha\nbeta\ngamma\n")  # an editor saves during the prompt
        return PermissionDecision(True)

    seen: list[str] = []
    simulator.policy = ScriptedPolicy([
        Reply("", [ToolCall("edit_file", {"path": "notes.txt", "old": "beta", "new": "BETA"})]),
        reads_result(seen),  # type: ignore[list-item]
    ])
    session = start(simulator, provider, project, isolated_home, opened,
                    approve_while_someone_edits)
    events = turn(session.agent, "capitalise beta")
    assert finished_text(events) == "noted"
    assert target.read_text() == "alpha\nbeta\ngamma\n"
    assert "changed while the edit waited for approval" in seen[0]
    assert_history_valid(session.agent, simulator)


@pytest.mark.parametrize("tool", [EditFileTool(), WriteFileTool()])
def test_case6_a_call_that_needed_no_approval_because_it_failed_never_writes_later(
    project: Path, tool: EditFileTool | WriteFileTool
) -> None:
    """Planning failed (nothing to approve), then the file changed so the call would now
    work: it must still fail, not write unasked."""
    target = project / "notes.txt"
    target.mkdir()  # a folder: both tools refuse, so no approval is asked
    args = (
        {"path": "notes.txt", "old": "beta", "new": "BETA"}
        if isinstance(tool, EditFileTool)
        else {"path": "notes.txt", "content": "overwritten\n"}
    )
    ctx = ToolContext(root=project, settings=Settings(home=project.parent / "home"),
                      approve=deny_all)
    prepared = tool.permission(args, ctx)
    assert prepared.request is None
    target.rmdir()
    target.write_text("alpha\nbeta\n")  # now the call would apply
    result = asyncio.run(tool.run(args, ctx, prepared))
    assert result.is_error and "nothing was written" in result.content
    assert target.read_text() == "alpha\nbeta\n"


# ---- case 7: pipes, devices and sockets are refused; signals always stop ---------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_case7_pipes_and_devices_are_refused_without_being_opened(
    provider: Provider, project: Path, simulator: Simulator, opened: list[Session],
    isolated_home: Path,
) -> None:
    os.mkfifo(project / "pipe")
    os.mkfifo(project / ".gitignore")  # list_files and grep read ignore rules
    seen: list[str] = []
    simulator.policy = ScriptedPolicy([
        Reply("", [
            ToolCall("read_file", {"path": "pipe"}),
            ToolCall("read_file", {"path": "/dev/zero"}),
            ToolCall("grep_search", {"pattern": "x", "path": "pipe"}),
            ToolCall("grep_search", {"pattern": "add"}),
            ToolCall("list_files", {}),
            ToolCall("write_file", {"path": "pipe", "content": "x"}),
            ToolCall("edit_file", {"path": "pipe", "old": "a", "new": "b"}),
        ]),
        reads_result(seen),  # type: ignore[list-item]
    ])
    session = start(simulator, provider, project, isolated_home, opened)
    events = turn(session.agent, "read everything")
    assert finished_text(events) == "noted"
    pipe_read, zero, pipe_grep, grep_all, listing, pipe_write, pipe_edit = seen
    assert "named pipe" in pipe_read and "not opened" in pipe_read
    assert "character device" in zero
    assert "named pipe" in pipe_grep
    assert "core.py" in grep_all  # the search went on past the pipe
    assert "README.md" in listing
    assert "named pipe" in pipe_write and "named pipe" in pipe_edit
    assert_history_valid(session.agent, simulator)


STUCK_TOOL_SCRIPT = """
import os, sys, time
from mini_claude.tools.builtin.read_file import ReadFileTool
ReadFileTool._read = lambda self, args, ctx: (open("stuck", "w").close(), time.sleep(120))
from mini_claude.cli import main
sys.exit(main(["-p", "read it"]))
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_case7_a_signal_ends_print_mode_even_while_a_tool_thread_is_stuck(
    sig: signal.Signals, project: Path, simulator: Simulator, isolated_home: Path,
) -> None:
    """A read stuck in the kernel (a hung network mount, here a sleeping thread) cannot be
    interrupted; the process must end anyway, with the interrupted code."""
    simulator.policy = ScriptedPolicy([Reply("", [ToolCall("read_file", {"path": "x"})])])
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "OPENAI"))},
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": simulator.anthropic_base_url,
        "MINI_CLAUDE_MODEL": "sim-sonnet",
        "MINI_CLAUDE_HOME": str(isolated_home),
    }
    process = subprocess.Popen(
        [sys.executable, "-c", STUCK_TOOL_SCRIPT],
        cwd=project, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        wait_for(lambda: (project / "stuck").exists(), "the tool to get stuck")
        process.send_signal(sig)
        _, err = process.communicate(timeout=30)  # a hang detector, not a timing claim
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 128 + sig, err  # as Claude Code exits: 143 for SIGTERM
    assert "Traceback" not in err
    (transcript,) = (isolated_home / "transcripts").glob("*.jsonl")
    assert "interrupted" in err
    assert '"read it"' in transcript.read_text()  # written and flushed before the exit


# ---- case 8: write_file over a file changed since the model read it --------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_case8_write_over_a_file_changed_since_it_was_read_is_refused(
    provider: Provider, project: Path, simulator: Simulator, opened: list[Session],
    isolated_home: Path,
) -> None:
    target = project / "config.txt"
    target.write_text("setting = 1\n")
    seen: list[str] = []

    def after_read(conv: SimConversation) -> Reply:
        target.write_text("setting = 1\nuser_line = kept\n")  # the user edits meanwhile
        return Reply("", [ToolCall("write_file", {"path": "config.txt",
                                                   "content": "setting = 2\n"})])

    simulator.policy = ScriptedPolicy([
        Reply("", [ToolCall("read_file", {"path": "config.txt"})]),
        after_read,
        reads_result(seen, "I will read it again."),  # type: ignore[list-item]
        Reply("", [ToolCall("read_file", {"path": "config.txt"})]),
        Reply("", [ToolCall("write_file", {"path": "config.txt",
                                           "content": "setting = 2\nuser_line = kept\n"})]),
        Reply("", [ToolCall("write_file", {"path": "config.txt",
                                           "content": "setting = 3\nuser_line = kept\n"})]),
        Reply("done"),
    ])
    session = start(simulator, provider, project, isolated_home, opened)
    events = turn(session.agent, "bump the setting")
    assert finished_text(events) == "I will read it again."
    assert "changed on disk since you last read" in seen[0]
    assert target.read_text() == "setting = 1\nuser_line = kept\n"
    events = turn(session.agent, "go on")
    assert finished_text(events) == "done"
    assert not tool_errors(events)  # after reading again, and after its own write, it may
    assert target.read_text() == "setting = 3\nuser_line = kept\n"
    assert_history_valid(session.agent, simulator)


# ---- case 9: the home is not free to read ----------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_case9_other_sessions_and_the_home_env_ask_but_own_results_do_not(
    provider: Provider, project: Path, simulator: Simulator, opened: list[Session],
    isolated_home: Path,
) -> None:
    other = isolated_home / "transcripts" / "20250101-000000-abcdef.jsonl"
    other.parent.mkdir(parents=True)
    other.write_text('{"type": "session", "cwd": "/elsewhere", "secret": "OTHER-SECRET"}\n')
    (isolated_home / ".env").write_text("ANTHROPIC_API_KEY=home-env-secret-value\n")
    asked: list[str] = []

    async def record(request: PermissionRequest) -> PermissionDecision:
        if request.tool_name == "run_shell":
            return PermissionDecision(True)
        asked.append(request.summary)
        return PermissionDecision(False, reason="no")

    big = "line of output\n" * 5_000  # persisted to this session's results folder
    seen: list[str] = []
    simulator.policy = ScriptedPolicy([
        Reply("", [ToolCall("run_shell", {"command": f"printf '{big[:15]}%.0s' $(seq 5000)"})]),
        Reply("", [
            ToolCall("grep_search", {"pattern": "SECRET", "path": str(isolated_home)}),
            ToolCall("read_file", {"path": str(isolated_home / ".env")}),
            ToolCall("read_file", {"path": str(other)}),
        ]),
        reads_result(seen),  # type: ignore[list-item]
    ])
    session = start(simulator, provider, project, isolated_home, opened, record,
                    persist_threshold_bytes=10_000)
    events = turn(session.agent, "look around")
    assert finished_text(events) == "noted"
    assert len(asked) == 3 and all("home" in a for a in asked)
    assert all("denied" in s.lower() for s in seen)
    assert "OTHER-SECRET" not in str(simulator.requests[-1].body)
    saved = [e.result.saved_path for e in of_kind(events, ev.ToolFinished) if e.result.saved_path]
    assert saved, "the big output was not persisted"
    ctx = session.agent.tool_context
    registry = default_registry()
    result = asyncio.run(registry.execute("read_file", {"path": saved[0]}, ctx))
    assert not result.is_error and "line of output" in result.content
    assert len(asked) == 3  # its own saved result was read without asking


# ---- case 14: small things that lost or hid data ---------------------------------------


def write_once(
    sim: Simulator, provider: Provider, project: Path, home: Path, opened: list[Session],
    path: str, content: str,
) -> str:
    """One write_file call by the model; returns the result it read back."""
    seen: list[str] = []
    sim.policy = ScriptedPolicy([
        Reply("", [ToolCall("write_file", {"path": path, "content": content})]),
        reads_result(seen),  # type: ignore[list-item]
    ])
    session = start(sim, provider, project, home, opened)
    assert finished_text(turn(session.agent, "write it")) == "noted"
    assert_history_valid(session.agent, sim)
    return seen[0]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_case14_writing_over_a_hard_link_keeps_the_link(
    provider: Provider, project: Path, simulator: Simulator, opened: list[Session],
    isolated_home: Path,
) -> None:
    linked = project / "linked.txt"
    linked.write_text("old\n")
    os.link(linked, project / "other-name.txt")
    result = write_once(simulator, provider, project, isolated_home, opened,
                        "linked.txt", "new\n")
    assert "Wrote linked.txt" in result
    assert (project / "other-name.txt").read_text() == "new\n"  # the link still shares it
    assert os.stat(linked).st_nlink == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_case14_a_parent_that_is_a_file_is_named(
    provider: Provider, project: Path, simulator: Simulator, opened: list[Session],
    isolated_home: Path,
) -> None:
    (project / "real.txt").write_text("a file\n")
    result = write_once(simulator, provider, project, isolated_home, opened,
                        "real.txt/x", "nested\n")
    assert "real.txt is a file, not a folder" in result
    assert "File exists" not in result


@pytest.mark.parametrize("provider", PROVIDERS)
def test_case14_a_large_write_counts_the_lines_it_changed(
    provider: Provider, project: Path, simulator: Simulator, opened: list[Session],
    isolated_home: Path,
) -> None:
    big_old = "".join(f"row {i}\n" for i in range(250_000))  # over the diff size limit
    (project / "big.txt").write_text(big_old)
    result = write_once(simulator, provider, project, isolated_home, opened,
                        "big.txt", "row 7\nrow seven\n")
    assert "+1 -249999" in result and "+0 -0" not in result


KILLED_WRITER = """
import sys
from pathlib import Path
from mini_claude.atomic_files import atomic_write
data = b"x" * (16 << 20)
target = Path(sys.argv[1])
Path(sys.argv[2]).write_text("writing")
while True:
    atomic_write(target, data)
"""


def test_case14_a_kill_mid_write_leaves_no_temporary_file(project: Path) -> None:
    started = project / "started"
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(project / "big.bin"), str(started)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        wait_for(started.exists, "the writer to start")
        wait_for((project / "big.bin").exists, "the first write to land")
        process.kill()
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert not list(project.glob(".big.bin.*.tmp"))


def test_case14_a_temporary_left_by_an_older_crash_is_swept_on_the_next_write(
    project: Path,
) -> None:
    stale = project / ".notes.txt.0123456789ab.tmp"
    stale.write_text("half a write")
    os.utime(stale, (1_000_000_000, 1_000_000_000))
    fresh = project / ".notes.txt.ba9876543210.tmp"  # another writer's, in progress
    fresh.write_text("in progress")
    ctx = ToolContext(root=project, settings=Settings(home=project.parent / "home"),
                      approve=allow_all)
    args = {"path": "notes.txt", "content": "hi\n"}
    tool = WriteFileTool()
    result = asyncio.run(tool.run(args, ctx, tool.permission(args, ctx)))
    assert not result.is_error, result.content
    assert not stale.exists() and fresh.exists()


# ---- case 4, in one process: the lock follows the transcripts that use it --------------


def test_case4_the_lock_is_let_go_when_the_last_transcript_using_it_closes(
    project: Path, simulator: Simulator, isolated_home: Path,
) -> None:
    settings = session_settings(simulator, "anthropic", isolated_home)
    holder = Session(settings, project, create_provider(settings), allow_all)
    other = Session(settings, project, create_provider(settings), allow_all)
    first = holder.start_new()
    with pytest.raises(SessionError, match="in use by another mini-claude process"):
        other.resume(holder.session_id)
    again = holder.resume(holder.session_id)  # /resume of the session in use
    first.transcript.close()  # the old transcript closes; the resumed one still holds it
    with pytest.raises(SessionError, match="in use"):
        other.resume(holder.session_id)
    broken = isolated_home / "transcripts" / "20000101-000000-broken.jsonl"
    broken.mkdir()  # cannot be loaded: the session in use must stay held
    with pytest.raises(OSError):
        holder.resume(broken.stem)
    with pytest.raises(SessionError, match="in use"):
        other.resume(holder.session_id)
    again.transcript.close()
    resumed = other.resume(holder.session_id)
    assert resumed.conversation is not None
    resumed.transcript.close()
