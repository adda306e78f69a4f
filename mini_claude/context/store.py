"""Full tool output on disk, so that whatever leaves the context can be read back.

Files are private to the user (folders 0700, files 0600): tool output may hold
secrets from the project. A failed write never raises; the caller then keeps the
text in context instead of losing it.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable
from pathlib import Path

from mini_claude.context.base import ResultStore
from mini_claude.conversation import ToolResultBlock
from mini_claude.private_dirs import make_private_dirs
from mini_claude.settings import Settings

PRIVATE_FILE_MODE = 0o600
SECONDS_PER_DAY = 86_400

_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")
_MAX_NAME_ATTEMPTS = 1_000


class DiskResultStore:
    """Writes each saved result to ``tool-results/<session>/<ms>-<seq>-<tool>.txt``."""

    def __init__(
        self,
        settings: Settings,
        session_id: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.folder = settings.tool_results_dir / _safe_name(session_id or "session")
        self._clock = clock
        self._seq = 0

    def save(self, tool_name: str, content: str) -> str | None:
        """Write ``content`` whole and return its path, or None when the disk refused."""
        try:
            make_private_dirs(self.folder)
            path = self._write_new_file(tool_name, _encode(content))
        except OSError:
            return None
        return str(path)

    def _write_new_file(self, tool_name: str, data: bytes) -> Path:
        stamp = int(self._clock() * 1000)
        name = _safe_name(tool_name or "tool")
        for _ in range(_MAX_NAME_ATTEMPTS):
            self._seq += 1
            path = self.folder / f"{stamp}-{self._seq}-{name}.txt"
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
            except FileExistsError:
                continue  # another store of the same session took this name
            _write_all(fd, path, data)
            return path
        raise FileExistsError(f"no free file name in {self.folder}")


def typical_saved_path(settings: Settings) -> str:
    """A path as long as a real saved result's, for sizing placeholders before saving."""
    return str(settings.tool_results_dir / ("s" * 36) / "1700000000000-1-read_file.txt")


def ensure_saved(block: ToolResultBlock, store: ResultStore) -> str | None:
    """Where the block's full text is on disk, writing it there first if needed."""
    if block.saved_path:
        return block.saved_path
    return store.save(block.tool_name or "tool", block.content)


def cleanup_old_results(settings: Settings, now: float) -> int:
    """Delete saved results older than the retention period; returns how many went.

    Runs at start-up. A retention of zero days or less keeps everything. Session
    folders left empty are removed too. Never raises.
    """
    if settings.result_retention_days <= 0:
        return 0
    cutoff = now - settings.result_retention_days * SECONDS_PER_DAY
    root = settings.tool_results_dir
    try:
        entries = list(root.iterdir())
    except OSError:
        return 0
    removed = 0
    for entry in entries:
        if entry.is_dir() and not entry.is_symlink():
            removed += _remove_older_files(entry, cutoff)
            _remove_if_empty(entry)
        else:
            removed += _remove_if_older(entry, cutoff)
    return removed


def _remove_older_files(folder: Path, cutoff: float) -> int:
    try:
        files = list(folder.iterdir())
    except OSError:
        return 0
    return sum(_remove_if_older(path, cutoff) for path in files)


def _remove_if_older(path: Path, cutoff: float) -> int:
    try:
        if path.is_dir() or path.lstat().st_mtime >= cutoff:
            return 0
        path.unlink()
    except OSError:
        return 0
    return 1


def _remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not empty, or not ours to remove
        folder.rmdir()


def _write_all(fd: int, path: Path, data: bytes) -> None:
    """Write every byte or leave no half-written file behind."""
    try:
        os.fchmod(fd, PRIVATE_FILE_MODE)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    except OSError:
        os.close(fd)
        _unlink_quietly(path)
        raise
    os.close(fd)


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def _encode(content: str) -> bytes:
    """UTF-8, keeping bytes that a tool decoded with ``surrogateescape`` as they were."""
    try:
        return content.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError:
        return content.encode("utf-8", errors="replace")


def _safe_name(name: str) -> str:
    return _UNSAFE_NAME_CHARS.sub("_", name)[:64] or "_"
