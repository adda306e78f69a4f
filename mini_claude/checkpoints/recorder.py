"""What write_file and edit_file call right before they change a file, and what a command
(run_shell, a background shell, an MCP tool, `!cmd`) calls before and after it runs.

The file's previous content (or its absence) goes into the store; the session's
transcript gets a ``checkpoint`` record naming the content by its id, never the
content itself. A checkpoint never stops a write: when the content cannot be
stored (too large, unreadable, disk full) the record says "not checkpointed".
For commands, ``tree.ProjectTree`` finds which files changed.
"""

from __future__ import annotations

import asyncio
import os
import stat
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mini_claude.checkpoints.store import CheckpointStore, content_id
from mini_claude.checkpoints.tree import Capture, ProjectTree

Record = Callable[[dict[str, Any]], None]
ENCODING_ERRORS = "surrogateescape"  # how the file tools turn text into bytes


class Checkpoints:
    """The tools' side of checkpointing; this base records nothing (a bare tool context)."""

    def before_write(self, path: Path, new: bytes | str) -> None:
        """``path`` is about to hold ``new``; keep what it holds now."""

    def take_notices(self) -> list[str]:
        """Lines for the user about files that could not be checkpointed (once each)."""
        return []

    async def before_command(self, label: str) -> Capture | None:
        """A command that may change any file is about to run: keep what the project holds."""
        return None

    async def after_command(self, capture: Capture | None,
                            running: Callable[[], bool] | None = None) -> None:
        """The command returned; record what it changed. ``running``: it goes on in the
        background, and its later changes are recorded as it makes them."""

    def at_turn_boundary(self) -> None:
        """A turn starts (a background shell's changes so far belong to the turns before)."""


class Checkpointer(Checkpoints):
    """Keeps each file's content before every agent write, for one session."""

    def __init__(self, store: CheckpointStore, session_id: str, record: Record, *,
                 max_file_bytes: int, max_store_bytes: int, root: Path | None = None) -> None:
        self.store = store
        self.root = root
        self.session_id = session_id
        self.record = record
        self.max_file_bytes = max_file_bytes
        self.max_store_bytes = max_store_bytes
        self._lock = threading.Lock()  # sub-agents write from their own threads
        self._notices: list[str] = []
        # Bytes added since the store's size was last checked: the first write checks it.
        self._added = max_store_bytes // 20
        # The project's files around commands (None: commands are not checkpointed).
        self.tree = (ProjectTree(root, store, session_id, self._record_locked,
                                 max_file_bytes=max_file_bytes) if root is not None else None)

    def close(self) -> None:
        """Stop watching the project's folders (this checkpointer is no longer used)."""
        if self.tree is not None:
            self.tree.close()

    def _record_locked(self, record: dict[str, Any]) -> None:
        with self._lock:
            self.record(record)
            if record["before"].get("state") == "not_checkpointed":
                self._notices.append(f"{record['path']} was changed by {record['by']} but not "
                                     f"checkpointed ({record['before']['reason']}); /rewind "
                                     "cannot restore its earlier content")

    async def before_command(self, label: str) -> Capture | None:
        if self.tree is None:
            return None
        try:
            return await asyncio.to_thread(self.tree.before, label)
        except OSError as exc:
            self._note_failure(exc)
            return None

    async def after_command(self, capture: Capture | None,
                            running: Callable[[], bool] | None = None) -> None:
        if self.tree is None or capture is None:
            return
        try:
            await asyncio.to_thread(self._after, capture, running)
        except OSError as exc:
            self._note_failure(exc)

    def _after(self, capture: Capture, running: Callable[[], bool] | None) -> None:
        assert self.tree is not None
        self.tree.after(capture)
        if running is not None:
            self.tree.watch_background(running)
        self._count_tree_bytes()

    def at_turn_boundary(self) -> None:
        if self.tree is None:
            return
        try:
            self.tree.at_turn_boundary()
        except OSError as exc:
            self._note_failure(exc)
        self._count_tree_bytes()

    def _count_tree_bytes(self) -> None:
        assert self.tree is not None
        with self._lock:
            self._added += self.tree.added_bytes
            self.tree.added_bytes = 0
            self._keep_within_bound()

    def _note_failure(self, exc: OSError) -> None:
        with self._lock:
            self._notices.append(f"the project's files could not be checkpointed around a "
                                 f"command ({exc.strerror or exc}); /rewind cannot undo it")

    def before_write(self, path: Path, new: bytes | str) -> None:
        with self._lock:
            before = self._capture(path)
            record: dict[str, Any] = {
                "type": "checkpoint",
                "id": uuid.uuid4().hex[:12],
                "time": time.time(),
                "path": str(path),
                "before": before,
                "after": _after_id(new),
            }
            folders = _missing_folders(path, self.root)
            if folders:
                record["created_folders"] = folders
            self.record(record)
            if before.get("state") == "not_checkpointed":
                self._notices.append(f"{path} was not checkpointed ({before['reason']}); "
                                     "/rewind cannot restore its earlier content")
            self._keep_within_bound()

    def take_notices(self) -> list[str]:
        with self._lock:
            notices, self._notices = self._notices, []
        return notices

    def snapshot(self, path: Path, *, durable: bool = True) -> dict[str, Any]:
        """The file's state as a checkpoint records it (also what a rewind keeps first;
        ``durable=False``: the caller flushes the store to disk itself, once for all)."""
        with self._lock:
            return self._capture(path, durable=durable)

    def _capture(self, path: Path, *, durable: bool = True) -> dict[str, Any]:
        try:
            info = path.lstat()
        except FileNotFoundError:
            return {"state": "absent"}
        except OSError as exc:
            return _not_checkpointed(f"cannot be read: {exc.strerror or exc}")
        if not stat.S_ISREG(info.st_mode):
            return _not_checkpointed("not a regular file")
        if info.st_size > self.max_file_bytes:
            return _not_checkpointed(f"over {_megabytes(self.max_file_bytes)}")
        try:
            data = path.read_bytes()
            digest, added = self.store.put(data, durable=durable)
            self.store.refer(self.session_id, [digest])
        except OSError as exc:
            return _not_checkpointed(f"could not be stored: {exc.strerror or exc}")
        self._added += added
        return {"state": "content", "content": digest, "mode": stat.S_IMODE(info.st_mode)}

    def _keep_within_bound(self) -> None:
        """Prune once this session has added a twentieth of the bound since the last look."""
        if self._added * 20 < self.max_store_bytes:
            return
        self._added = 0
        self.store.prune(self.session_id, self.max_store_bytes)


def _after_id(new: bytes | str) -> str | None:
    """The id of what the tool is about to write, to tell later whether someone else changed it."""
    try:
        data = new if isinstance(new, bytes) else new.encode("utf-8", errors=ENCODING_ERRORS)
    except UnicodeEncodeError:
        return None
    return content_id(data)


def _missing_folders(path: Path, root: Path | None) -> list[str]:
    """The folders the write will create (a rewind past it removes them when empty)."""
    missing: list[str] = []
    folder = path.parent
    while folder != folder.parent and not os.path.lexists(folder):
        if root is not None and not folder.is_relative_to(root):
            break
        missing.append(str(folder))
        folder = folder.parent
    return missing


def _not_checkpointed(reason: str) -> dict[str, Any]:
    return {"state": "not_checkpointed", "reason": reason}


def _megabytes(size: int) -> str:
    megabytes = size / (1024 * 1024)
    return f"{megabytes:g} MB" if megabytes >= 1 else f"{size:,} bytes"
