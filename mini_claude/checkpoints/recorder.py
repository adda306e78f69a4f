"""What write_file and edit_file call right before they change a file.

The file's previous content (or its absence) goes into the store; the session's
transcript gets a ``checkpoint`` record naming the content by its id, never the
content itself. A checkpoint never stops a write: when the content cannot be
stored (too large, unreadable, disk full) the record says "not checkpointed".
"""

from __future__ import annotations

import stat
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mini_claude.checkpoints.store import CheckpointStore, content_id

Record = Callable[[dict[str, Any]], None]
ENCODING_ERRORS = "surrogateescape"  # how the file tools turn text into bytes


class Checkpoints:
    """The tools' side of checkpointing; this base records nothing (a bare tool context)."""

    def before_write(self, path: Path, new: bytes | str) -> None:
        """``path`` is about to hold ``new``; keep what it holds now."""

    def take_notices(self) -> list[str]:
        """Lines for the user about files that could not be checkpointed (once each)."""
        return []


class Checkpointer(Checkpoints):
    """Keeps each file's content before every agent write, for one session."""

    def __init__(self, store: CheckpointStore, session_id: str, record: Record, *,
                 max_file_bytes: int, max_store_bytes: int) -> None:
        self.store = store
        self.session_id = session_id
        self.record = record
        self.max_file_bytes = max_file_bytes
        self.max_store_bytes = max_store_bytes
        self._lock = threading.Lock()  # sub-agents write from their own threads
        self._notices: list[str] = []
        # Bytes added since the store's size was last checked: the first write checks it.
        self._added = max_store_bytes // 20

    def before_write(self, path: Path, new: bytes | str) -> None:
        with self._lock:
            before = self._capture(path)
            self.record({
                "type": "checkpoint",
                "id": uuid.uuid4().hex[:12],
                "time": time.time(),
                "path": str(path),
                "before": before,
                "after": _after_id(new),
            })
            if before.get("state") == "not_checkpointed":
                self._notices.append(f"{path} was not checkpointed ({before['reason']}); "
                                     "/rewind cannot restore its earlier content")
            self._keep_within_bound()

    def take_notices(self) -> list[str]:
        with self._lock:
            notices, self._notices = self._notices, []
        return notices

    def snapshot(self, path: Path) -> dict[str, Any]:
        """The file's state as a checkpoint records it (also what a rewind keeps first)."""
        with self._lock:
            return self._capture(path)

    def _capture(self, path: Path) -> dict[str, Any]:
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
            digest, added = self.store.put(data)
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


def _not_checkpointed(reason: str) -> dict[str, Any]:
    return {"state": "not_checkpointed", "reason": reason}


def _megabytes(size: int) -> str:
    megabytes = size / (1024 * 1024)
    return f"{megabytes:g} MB" if megabytes >= 1 else f"{size:,} bytes"
