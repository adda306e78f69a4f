"""Session locks: one process per session, and no lock file left behind once it ends."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mini_claude.cli import main
from mini_claude.session.lock import SessionBusy, SessionLock, lock_path, sweep_stale_locks
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator
from tests.support.printing import point_at

HOLDER = """\
import sys, time
from pathlib import Path
from mini_claude.session.lock import SessionLock
lock = SessionLock.acquire(Path(sys.argv[1]))
print("held" if lock is not None else "none", flush=True)
time.sleep(120)
"""


def test_released_lock_leaves_no_file(tmp_path: Path) -> None:
    transcript = tmp_path / "s1.jsonl"
    lock = SessionLock.acquire(transcript)
    assert lock is not None and lock_path(transcript).exists()
    with pytest.raises(SessionBusy):
        SessionLock.acquire(transcript)
    lock.release()
    assert not lock_path(transcript).exists()
    again = SessionLock.acquire(transcript)  # the session can be taken again at once
    assert again is not None
    again.release()


def test_sweep_removes_locks_of_killed_processes_and_keeps_live_ones(tmp_path: Path) -> None:
    killed, live = tmp_path / "killed.jsonl", tmp_path / "live.jsonl"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(killed)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        holder.kill()  # SIGKILL: no chance to clean up
        holder.wait(timeout=60)
    finally:
        if holder.poll() is None:
            holder.kill()
    assert lock_path(killed).exists()
    live_lock = SessionLock.acquire(live)
    assert live_lock is not None
    assert sweep_stale_locks(tmp_path) == 1
    assert not lock_path(killed).exists()
    assert lock_path(live).exists()
    with pytest.raises(SessionBusy):
        SessionLock.acquire(live)
    live_lock.release()


def test_a_session_that_ended_leaves_no_lock_file(
    project: Path,
    isolated_home: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = ScriptedPolicy([Reply("one"), Reply("two")])
    point_at(simulator, "anthropic", monkeypatch)
    for _ in range(2):
        assert main(["-p", "hello"]) == 0
    transcripts = isolated_home / "transcripts"
    assert len(list(transcripts.glob("*.jsonl"))) == 2
    assert list(transcripts.glob("*.lock")) == []
    capsys.readouterr()

