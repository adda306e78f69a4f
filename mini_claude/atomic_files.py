"""Replacing a file in one step: a reader, or a process killed mid-write, never sees half.

Shared by the file tools (an approved edit) and the checkpoint store (blobs and the
rewind journal), so it stands below both.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import secrets
import stat
import time
from pathlib import Path

STALE_TEMPORARY_SECONDS = 60.0


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` in one step: readers see the old file or the new one, never half.

    The temporary file lives beside the target (``os.replace`` cannot cross
    file systems) and is removed on any failure. ``mode`` keeps an existing
    file's permissions; a new file gets the usual ``0o666`` minus the umask.
    """
    try:
        info: os.stat_result | None = os.stat(path)
    except OSError:
        info = None
    if info is not None and info.st_nlink > 1 and stat.S_ISREG(info.st_mode):
        _write_in_place(path, data)  # a new inode would split the file from its other links
        return
    _remove_stale_temporaries(path)
    if _write_unnamed(path, data, mode):
        return
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _write_in_place(path: Path, data: bytes) -> None:
    """Overwrite the file's own inode, so every hard link sees the new content."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _write_unnamed(path: Path, data: bytes, mode: int | None) -> bool:
    """Write into a file with no name (``O_TMPFILE``) and name it only once complete.

    A kill mid-write then leaves nothing behind in the project. False when the
    system or file system cannot, and the caller uses a named temporary instead.
    """
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag:
        return False
    try:
        fd = os.open(path.parent, flag | os.O_WRONLY | os.O_CLOEXEC, 0o666)
    except OSError:
        return False
    try:
        _write_all(fd, data)
        if mode is not None:
            os.fchmod(fd, mode)
        os.fsync(fd)
        temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            os.link(f"/proc/self/fd/{fd}", temporary)
        except OSError:
            return False
        try:
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    finally:
        os.close(fd)
    return True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _remove_stale_temporaries(path: Path) -> None:
    """Temporaries of this file left by a process killed mid-write (older than a minute)."""
    pattern = re.compile(rf"\.{re.escape(path.name)}\.[0-9a-f]{{12}}\.tmp")
    try:
        candidates = list(path.parent.glob(f".{glob.escape(path.name)}.*.tmp"))
    except OSError:
        return
    now = time.time()
    for candidate in candidates:
        if not pattern.fullmatch(candidate.name):
            continue
        with contextlib.suppress(OSError):
            if now - candidate.lstat().st_mtime > STALE_TEMPORARY_SECONDS:
                candidate.unlink()
