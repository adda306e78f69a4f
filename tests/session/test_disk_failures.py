"""A home folder that cannot be written: results are cut instead of saved, and the session goes on.

Tests run as root, where a 0500 folder is still writable, so an unwritable path is
made by putting a regular file where a folder should be, and a full disk by a file
size limit (``RLIMIT_FSIZE``) on a child process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mini_claude import events as ev
from mini_claude.conversation import ResultState, ToolResultBlock
from mini_claude.session.wiring import Session
from mini_claude.simulator import Reply, ScriptedPolicy, SimConversation, Simulator, ToolCall
from mini_claude.transcript import load_session
from tests.support.reliability import (
    PROVIDERS,
    Provider,
    assert_history_valid,
    closing_sessions,
    finished_text,
    make_project,
    of_kind,
    session_settings,
    start_session,
    turn,
)

# About 80 KB: over the 30 KB persist threshold and the 50,000-char cut, under run_shell's cap.
BIG_COMMAND = "seq 1 15000"
DISK_FAILED = "saving the full output to disk failed"


def results(session: Session) -> list[ToolResultBlock]:
    return [b for m in session.agent.conversation.messages for b in m.blocks
            if isinstance(b, ToolResultBlock)]


def report_what_arrived(conv: SimConversation) -> Reply:
    content = conv.last_tool_results()[0].content
    return Reply(f"I got {len(content)} chars; cut and said so: {DISK_FAILED in content}.")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


def block_path(path: Path) -> None:
    """Put a regular file where a folder is expected: no write under it can succeed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("a file where a folder should be\n")


@pytest.fixture
def unwritable_results(project: Path, simulator: Simulator) -> Iterator[Callable[..., Session]]:
    """Sessions whose ``tool-results`` folder cannot be created."""
    home = project.parent / "home"
    block_path(home / "tool-results")
    with closing_sessions() as opened:

        def start(provider: Provider, **changes: object) -> Session:
            opened.append(start_session(session_settings(simulator, provider, home, **changes),
                                        project))
            return opened[-1]

        yield start


@pytest.mark.parametrize("provider", PROVIDERS)
def test_tier_0_cuts_a_big_result_says_why_and_the_turn_goes_on(
    provider: Provider, simulator: Simulator, unwritable_results: Callable[..., Session]
) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("", [ToolCall("run_shell", {"command": BIG_COMMAND})]),
        report_what_arrived,
    ])
    session = unwritable_results(provider)
    events = turn(session.agent, "count to fifteen thousand")
    answer = finished_text(events)
    assert answer.endswith("cut and said so: True.")
    (report,) = [e.report for e in of_kind(events, ev.TierFired) if e.report.tier == "truncate"]
    assert "disk write failed" in report.describe()
    (result,) = results(session)
    limit = session.settings.truncate_chars
    assert len(result.content) <= limit and result.saved_path is None
    assert result.state == ResultState.BUDGETED
    assert result.content.startswith("1\n2\n3\n") and "15000" in result.content
    assert_history_valid(session.agent, simulator)
    # The transcript still has every line the command printed.
    original = load_session(session.agent.transcript.path).original_messages[-2]
    full = next(b for b in original.blocks if isinstance(b, ToolResultBlock)).content
    assert full.split("\n")[:15_000] == [str(n) for n in range(1, 15_001)]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_older_results_stay_in_context_when_they_cannot_be_saved(
    provider: Provider, simulator: Simulator, unwritable_results: Callable[..., Session]
) -> None:
    """After an idle gap microcompact would clear old results, but only once their text is
    on disk: with the disk refusing, they stay as they were and nothing fails."""
    simulator.policy = ScriptedPolicy(
        [step for n in range(5) for step in (
            Reply("", [ToolCall("run_shell", {"command": f"seq {n} 4000"})]), Reply(f"ran {n}"))]
    )
    now = [1_000.0]
    session = unwritable_results(provider, microcompact_idle_seconds=60.0)
    session.agent.clock = lambda: now[0]
    for n in range(5):
        now[0] += 600  # ten idle minutes before every turn
        events = turn(session.agent, f"run number {n}")
        assert finished_text(events) == f"ran {n}"
        assert not [e for e in of_kind(events, ev.TierFired) if e.report.tier == "microcompact"]
    assert all(r.state == ResultState.FULL for r in results(session))
    assert_history_valid(session.agent, simulator)


@pytest.mark.parametrize("blocked", ["transcripts", "."])
def test_a_home_that_cannot_be_written_still_answers_and_says_nothing_is_saved(
    blocked: str, project: Path, simulator: Simulator, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Neither a transcripts folder nor the home itself can be created: print mode still
    answers, and warns once, in one line, that this session is not being saved."""
    from mini_claude.cli import main

    home = project.parent / "home"
    block_path(home / blocked if blocked != "." else home)
    simulator.policy = ScriptedPolicy([Reply("Answered without a disk.")])
    monkeypatch.setenv("MINI_CLAUDE_HOME", str(home))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", simulator.anthropic_base_url)
    monkeypatch.setenv("MINI_CLAUDE_MODEL", "sim-sonnet")
    monkeypatch.chdir(project)
    with open(os.devnull) as nothing:
        monkeypatch.setattr(sys, "stdin", nothing)
        code = main(["-p", "hello"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.strip() == "Answered without a disk."
    warnings = [line for line in err.splitlines() if "not be saved" in line]
    assert len(warnings) == 1, err
    assert "Traceback" not in err and "internal error" not in err


def test_a_full_disk_cuts_results_and_the_session_finishes(
    project: Path, simulator: Simulator
) -> None:
    """A file size limit in a child process plays a full disk: saving the big output fails,
    tier 0 cuts it and says so, the transcript stops growing and the user is told, and the
    turn still ends with the model's answer."""
    simulator.policy = ScriptedPolicy([
        Reply("", [ToolCall("run_shell", {"command": BIG_COMMAND})]),
        report_what_arrived,
    ])
    limit = 64 * 1024
    launcher = (
        "import resource, runpy, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))\n"
        "sys.argv = ['mini-claude', '-p', 'count to fifteen thousand', '--yes']\n"
        "runpy.run_module('mini_claude.cli', run_name='__main__')\n"
    )
    env = {
        **os.environ,
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": simulator.anthropic_base_url,
        "MINI_CLAUDE_HOME": str(project.parent / "home"),
        "MINI_CLAUDE_MODEL": "sim-sonnet",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    done = subprocess.run([sys.executable, "-c", launcher], cwd=project, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("cut and said so: True.")
    assert "disk write failed" in done.stderr
    assert "not be saved" in done.stderr or "could not be written" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    saved = list((project.parent / "home" / "tool-results").rglob("*.txt"))
    assert not saved, "a half-written result file was left behind"
