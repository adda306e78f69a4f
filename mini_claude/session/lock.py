"""One process per session: an advisory lock next to the transcript.

Two processes appending to one transcript interleave their turns (tool calls
answered by the other process's messages), and the APIs then refuse the history.
``flock`` is released by the kernel when the holder dies, so a killed session
never leaves a stale lock behind. The file itself is removed when the lock is
released, and :func:`sweep_stale_locks` removes those of killed processes, so
the transcripts folder does not fill with them. Removing a lock file while
another process waits on it is safe: whoever locks a file that is no longer at
the path tries again.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable
from pathlib import Path

ACQUIRE_ATTEMPTS = 5


class SessionBusy(Exception):
    """Another live process holds the session; the message says which and what to do."""


def lock_path(transcript: Path) -> Path:
    return transcript.with_suffix(".lock")


class SessionLock:
    """Held from :meth:`acquire` until :meth:`release` or the end of the process."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd
        self._users = 0

    @classmethod
    def acquire(cls, transcript: Path) -> SessionLock | None:
        """Lock the session of ``transcript``; None when the folder cannot hold a lock file
        (an unwritable home: the session then runs unsaved and there is nothing to guard)."""
        path = lock_path(transcript)
        for _attempt in range(ACQUIRE_ATTEMPTS):
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            except OSError:
                return None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_pid(fd)
                os.close(fd)
                who = f" (pid {holder})" if holder else ""
                raise SessionBusy(
                    f"session {transcript.stem} is in use by another mini-claude process{who}; "
                    "wait for it to finish, or start a new session (run without "
                    "--continue/--resume)"
                ) from None
            except OSError:
                os.close(fd)
                return None
            if _still_at(path, fd):
                break
            os.close(fd)  # its holder removed it as we opened it: take the new one
        else:
            return None
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(path, fd)

    def attach(self) -> Callable[[], None]:
        """A callback for one transcript's close; the last one closed lets the lock go."""
        self._users += 1

        def detach() -> None:
            self._users -= 1
            if self._users <= 0:
                self.release()

        return detach

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(OSError):
            if _still_at(self.path, fd):
                self.path.unlink()  # while still held, so nobody locks it in between
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        with contextlib.suppress(OSError):
            os.close(fd)


def sweep_stale_locks(folder: Path) -> int:
    """Remove the lock files no live process holds (left by killed sessions); returns how many."""
    removed = 0
    try:
        candidates = list(folder.glob("*.lock"))
    except OSError:
        return 0
    for path in candidates:
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if _still_at(path, fd):
                path.unlink()
                removed += 1
        except OSError:  # held by a live session, or already gone
            pass
        finally:
            os.close(fd)
    return removed


def _still_at(path: Path, fd: int) -> bool:
    """Whether the open file is still the one at ``path`` (not removed or replaced)."""
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except OSError:
        return False


def _read_pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).decode().strip())
    except (OSError, ValueError):
        return None
