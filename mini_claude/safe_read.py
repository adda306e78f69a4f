"""Reading a file a project or a flag names, without ever hanging or filling memory.

A repository may hold a FIFO, a device or a huge file where a settings file is
expected: opening a FIFO waits for a writer forever, ``/dev/zero`` never ends.
Every such file is opened non-blocking, checked on the open descriptor to be a
regular file, and read with a size limit. Problems are ``OSError`` subclasses with
a one-line message, so callers that already report unreadable files report these.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

DEFAULT_LIMIT = 1024 * 1024  # settings, server lists, agents, skills, prompts: far below this

_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


class UnsafeFile(OSError):
    """The file is not a regular file, or is larger than the limit; it was not read."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.strerror = message
        self.message = message

    def __str__(self) -> str:
        return self.message


def kind_of(mode: int) -> str | None:
    """What a mode is when it is not a regular file."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def read_limited(path: Path, limit: int = DEFAULT_LIMIT) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes.

    Raises FileNotFoundError when it is missing, UnsafeFile when it is special or too
    large, another OSError when it cannot be read. Never blocks on a pipe or device.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        kind = kind_of(info.st_mode)
        if kind is not None:
            raise UnsafeFile(f"{path} is {kind}, not a regular file; it was not read")
        if info.st_size > limit:
            raise UnsafeFile(f"{path} is larger than {limit:,} bytes; it was not read")
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(65_536, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:
        raise UnsafeFile(f"{path} is larger than {limit:,} bytes; it was not read")
    return b"".join(chunks)


def read_text_limited(path: Path, limit: int = DEFAULT_LIMIT) -> str:
    """The text of a regular UTF-8 file (undecodable bytes become U+FFFD); see read_limited."""
    return read_limited(path, limit).decode("utf-8", errors="replace")


def is_regular(path: Path) -> bool:
    """True for a regular file (symlinks followed); never opens it."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def is_regular_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False
