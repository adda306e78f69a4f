"""Put files back as a rewind wants them, all or nothing, even if the process is killed.

1. The journal (which files, which contents) is written and flushed to disk.
2. Every new content is written to a temporary file beside its target.
3. The commit: the rewind record is appended to the transcript.
4. The temporary files are renamed over the targets; files to remove are removed.
5. The journal is deleted.

Killed before 3, the next start removes the temporary files: the old state. Killed
after 3, it finishes 4 from the journal: the new state. The transcript decides which.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mini_claude.atomic_files import atomic_write
from mini_claude.checkpoints.store import CheckpointStore
from mini_claude.private_dirs import make_private_dirs
from mini_claude.transcript import read_records

JOURNAL_MODE = 0o600


@dataclass(frozen=True, slots=True)
class FileRestore:
    """One file's new state: ``content`` (an id in the store) with ``mode``, or removed."""

    path: Path
    content: str | None
    mode: int | None = None

    def temporary(self, rewind_id: str) -> Path:
        return self.path.with_name(f".{self.path.name}.rewind-{rewind_id}.tmp")


class RestoreError(Exception):
    """Nothing was changed; one line for the user."""


class RestoreIncomplete(Exception):
    """The rewind was recorded but a file could not be put in place; the next start retries."""


def restore_files(store: CheckpointStore, rewind_id: str, transcript: Path,
                  files: list[FileRestore], commit: Callable[[], None]) -> None:
    """Bring every file to its new state, with ``commit`` (recording the rewind) in between."""
    _write_journal(store, rewind_id, transcript, files)
    try:
        for change in files:
            if change.content is not None:
                _stage(store, rewind_id, change)
        commit()
    except BaseException:
        _roll_back(store, rewind_id, files)
        raise
    try:
        for change in files:
            _place(rewind_id, change)
    except OSError as exc:  # recorded: the journal stays, and the next start finishes it
        raise RestoreIncomplete(f"{exc.filename or ''}: {exc.strerror or exc}") from None
    _remove_journal(store)


def recover(store: CheckpointStore) -> str | None:
    """Finish or undo a rewind a killed process left half done; a line saying which, or None."""
    try:
        journal = json.loads(store.journal.read_text(encoding="utf-8"))
        rewind_id = str(journal["id"])
        transcript = Path(journal["transcript"])
        files = [FileRestore(Path(f["path"]), f.get("content"), f.get("mode"))
                 for f in journal["files"]]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        _remove_journal(store)
        return "a damaged rewind journal was removed"
    if _still_running(journal.get("pid")):
        return None  # another mini-claude in this project is rewinding right now
    if not _committed(transcript, rewind_id):
        _roll_back(store, rewind_id, files)
        return "a rewind interrupted before it changed any file was undone"
    for change in files:
        _finish(store, rewind_id, change)
    _remove_journal(store)
    return f"a rewind interrupted half-way was completed ({len(files)} files)"


def _write_journal(store: CheckpointStore, rewind_id: str, transcript: Path,
                   files: list[FileRestore]) -> None:
    if store.journal.exists():
        raise RestoreError("another rewind is under way (or was interrupted); start mini-claude "
                           "again in this project to finish it first")
    body: dict[str, Any] = {
        "id": rewind_id,
        "pid": os.getpid(),
        "transcript": str(transcript),
        "files": [{"path": str(f.path), "content": f.content, "mode": f.mode} for f in files],
    }
    make_private_dirs(store.folder)
    atomic_write(store.journal, json.dumps(body).encode("utf-8"), JOURNAL_MODE)


def _stage(store: CheckpointStore, rewind_id: str, change: FileRestore) -> None:
    assert change.content is not None
    data = store.get(change.content)
    if data is None:
        raise RestoreError(f"the content of {change.path} is no longer in the checkpoint store")
    change.path.parent.mkdir(parents=True, exist_ok=True)
    temporary = change.temporary(rewind_id)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fchmod(handle.fileno(), change.mode if change.mode is not None else 0o644)
        os.fsync(handle.fileno())


def _place(rewind_id: str, change: FileRestore) -> None:
    """The one step per file after the commit: a rename, or a removal."""
    if change.content is None:
        with contextlib.suppress(FileNotFoundError):
            change.path.unlink()
        return
    os.replace(change.temporary(rewind_id), change.path)


def _finish(store: CheckpointStore, rewind_id: str, change: FileRestore) -> None:
    """After a kill past the commit: a rename not done yet is done now."""
    if change.content is None or change.temporary(rewind_id).exists():
        _place(rewind_id, change)
        return
    data = store.get(change.content)
    with contextlib.suppress(OSError):
        if data is not None and change.path.read_bytes() != data:
            _stage(store, rewind_id, change)
            _place(rewind_id, change)


def _roll_back(store: CheckpointStore, rewind_id: str, files: list[FileRestore]) -> None:
    for change in files:
        with contextlib.suppress(OSError):
            change.temporary(rewind_id).unlink()
    _remove_journal(store)


def _remove_journal(store: CheckpointStore) -> None:
    with contextlib.suppress(FileNotFoundError):
        store.journal.unlink()


def _still_running(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _committed(transcript: Path, rewind_id: str) -> bool:
    try:
        records = read_records(transcript)
    except OSError:
        return False
    return any(isinstance(r, dict) and r.get("type") == "rewind" and r.get("id") == rewind_id
               for r in records)
