"""Named pipes, devices and sockets are refused before anything opens them.

Opening a FIFO for reading waits for a writer that may never come, and a
device such as ``/dev/zero`` never ends: either would hang the session. The
path is checked with ``stat`` first, and files are opened non-blocking and
checked again on the open descriptor, so a swap in between cannot slip through.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from mini_claude.tools.common import ToolError

_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def special_kind(mode: int) -> str | None:
    """What a file mode is when it is not a regular file or a folder."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return None


def _refusal(shown: str, kind: str) -> ToolError:
    return ToolError(f"{shown} is {kind}, not a regular file; it was not opened")


def refuse_special(path: Path, shown: str) -> None:
    """Raise when ``path`` (symlinks followed) is a pipe, device or socket."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # missing or unreadable: the caller's own checks say so
    kind = special_kind(mode)
    if kind is not None:
        raise _refusal(shown, kind)


def open_regular(path: Path, shown: str) -> BinaryIO:
    """Open a regular file for reading without ever blocking on a special one."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        kind = special_kind(os.fstat(fd).st_mode)
        if kind is not None:
            raise _refusal(shown, kind)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def refuse_file_parent(path: Path, root: Path, shown: str) -> None:
    """Raise when a would-be parent folder of ``path`` is a file (not the bare "File exists")."""
    for parent in path.parents:
        if not parent.exists():
            continue
        if not parent.is_dir():
            try:
                name = str(parent.relative_to(root))
            except ValueError:
                name = str(parent)
            raise ToolError(f"cannot write {shown}: {name} is a file, not a folder")
        return
