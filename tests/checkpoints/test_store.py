"""The checkpoint store and recorder: what a checkpoint keeps, and what pruning lets go."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mini_claude.checkpoints.recorder import Checkpointer
from mini_claude.checkpoints.restore import FileRestore, RestoreError, recover, restore_files
from mini_claude.checkpoints.store import CheckpointStore, content_id
from mini_claude.transcript import SessionInfo
from mini_claude.ui.commands import forks_under_origins


def recorder(store: CheckpointStore, session: str = "s1", *, max_file: int = 1000,
             max_store: int = 10**9) -> tuple[Checkpointer, list[dict[str, Any]]]:
    records: list[dict[str, Any]] = []
    return Checkpointer(store, session, records.append, max_file_bytes=max_file,
                        max_store_bytes=max_store), records


def test_a_checkpoint_keeps_content_and_mode_once_and_records_only_ids(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "store")
    checkpoints, records = recorder(store)
    script = tmp_path / "run.sh"
    script.write_text("echo secret-looking content\n")
    os.chmod(script, 0o750)
    checkpoints.before_write(script, "echo new\n")
    checkpoints.before_write(script, "echo newer\n")  # the same old content: stored once
    before = records[0]["before"]
    assert before == {"state": "content", "content": content_id(script.read_bytes()),
                      "mode": 0o750}
    assert records[0]["after"] == content_id(b"echo new\n")
    assert "secret-looking" not in str(records)
    assert store.get(before["content"]) == script.read_bytes()
    assert store.size().contents == 1


def test_new_and_too_large_files_are_recorded_as_such(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "store")
    checkpoints, records = recorder(store, max_file=10)
    checkpoints.before_write(tmp_path / "new.txt", b"x")
    big = tmp_path / "big.bin"
    big.write_bytes(b"y" * 11)
    checkpoints.before_write(big, b"z")
    assert records[0]["before"] == {"state": "absent"}
    assert records[1]["before"]["state"] == "not_checkpointed"
    assert "over" in records[1]["before"]["reason"]
    (notice,) = checkpoints.take_notices()
    assert "big.bin was not checkpointed" in notice
    assert checkpoints.take_notices() == []
    assert store.size().contents == 0


def test_pruning_drops_the_oldest_sessions_never_the_current_one(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "store")
    for number, session in enumerate(("old", "middle", "current")):
        checkpoints, _ = recorder(store, session, max_file=10_000)
        path = tmp_path / f"{session}.txt"
        path.write_bytes(os.urandom(4000))  # incompressible: each takes ~4 KB
        checkpoints.before_write(path, b"")
        stamp = time.time() - 1000 + number * 100
        os.utime(store.refs_path(session), (stamp, stamp))
    shared, _ = recorder(store, "middle")
    (tmp_path / "same.txt").write_bytes(b"shared by two sessions")
    shared.before_write(tmp_path / "same.txt", b"")
    os.utime(store.refs_path("middle"), (time.time() - 900, time.time() - 900))
    assert store.size().bytes > 12_000
    dropped = store.prune("old", 9_000)  # "old" is the session in use: it stays
    assert dropped == ["middle"]
    assert store.refs_path("old").exists() and store.refs_path("current").exists()
    assert store.size().bytes <= 9_000
    assert store.get(content_id((tmp_path / "old.txt").read_bytes())) is not None
    assert store.get(content_id((tmp_path / "middle.txt").read_bytes())) is None


def test_resume_lists_forks_under_their_origin() -> None:
    def info(name: str, origin: str = "") -> SessionInfo:
        return SessionInfo(name, Path(name), "/p", 0.0, "", origin)

    sessions = [info("fork-b", "origin"), info("other"), info("fork-a", "origin"),
                info("origin"), info("orphan", "gone")]
    ordered = [s.session_id for s in forks_under_origins(sessions)]
    assert ordered == ["other", "origin", "fork-b", "fork-a", "orphan"]


def test_a_journal_of_a_live_rewind_is_left_alone_and_a_dead_ones_undone(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "store")
    target = tmp_path / "a.txt"
    target.write_text("old\n")
    staged = FileRestore(target, content_id(b"new\n"), 0o644).temporary("r1")
    staged.write_text("new\n")
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as other:
        try:
            write_journal(store, other.pid, target)
            assert recover(store, tmp_path) is None  # that process may still be writing
            assert store.journal.exists() and staged.exists()
        finally:
            other.kill()
    other.wait()
    assert "undone" in (recover(store, tmp_path) or "")  # no rewind record: back to the old state
    assert not store.journal.exists() and not staged.exists()
    assert target.read_text() == "old\n"


def write_journal(store: CheckpointStore, pid: int, target: Path) -> None:
    store.folder.mkdir(parents=True, exist_ok=True)
    transcript = store.folder / "t.jsonl"
    transcript.write_text('{"type": "session", "id": "t"}\n')
    store.journal.write_text(json.dumps({
        "id": "r1", "pid": pid, "transcript": str(transcript),
        "files": [{"path": str(target), "content": content_id(b"new\n"), "mode": 0o644}]}))


def test_a_commit_that_fails_leaves_every_file_as_it_was(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "store")
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    first.write_text("first, now\n")
    second.write_text("second, now\n")
    digest, _ = store.put(b"earlier\n")
    changes = [FileRestore(first, digest, 0o644), FileRestore(second, None)]

    def commit(_placed: list[FileRestore]) -> None:
        raise RestoreError("the transcript could not be written")

    with pytest.raises(RestoreError):
        restore_files(store, "r2", tmp_path / "t.jsonl", changes, commit, root=tmp_path)
    assert first.read_text() == "first, now\n" and second.read_text() == "second, now\n"
    assert not list(tmp_path.glob(".*.tmp")) and not store.journal.exists()
