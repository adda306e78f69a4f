"""A server's stderr into a private log file that never grows past a cap.

A stdio server writes its stderr straight to the file it is given, so a chatty or
hostile one could fill the disk (hundreds of megabytes in one run). It gets a pipe
instead; a thread copies the pipe into ``<name>.log`` and, once the file passes
:data:`LOG_CAP_BYTES`, moves it to ``<name>.log.1`` (replacing the older one) and
starts afresh: at most twice the cap per server, ever.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

LOG_CAP_BYTES = 5 * 1024 * 1024
LOG_FILE_MODE = 0o600
_CHUNK = 65_536


def _open(path: Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, LOG_FILE_MODE)


def rotate_if_full(path: Path, cap: int = LOG_CAP_BYTES) -> None:
    """Move a log past the cap to ``.1`` (the one older copy kept)."""
    with contextlib.suppress(OSError):
        if path.stat().st_size >= cap:
            os.replace(path, path.with_name(path.name + ".1"))


def _copy(read_fd: int, path: Path, cap: int) -> None:
    out = -1
    try:
        rotate_if_full(path, cap)
        out = _open(path)
        size = os.fstat(out).st_size
        while chunk := os.read(read_fd, _CHUNK):
            if size + len(chunk) > cap:
                os.close(out)
                out = -1
                os.replace(path, path.with_name(path.name + ".1"))
                out = _open(path)
                size = 0
            size += os.write(out, chunk[: cap])
    except OSError:
        while os.read(read_fd, _CHUNK):  # the disk failed: keep the server unblocked
            pass
    finally:
        os.close(read_fd)
        if out >= 0:
            os.close(out)


@contextlib.contextmanager
def capped_log(path: Path, cap: int = LOG_CAP_BYTES) -> Iterator[TextIO]:
    """A text stream for a child's stderr whose bytes reach ``path``, capped and rotated."""
    read_fd, write_fd = os.pipe()
    os.set_inheritable(write_fd, True)
    thread = threading.Thread(target=_copy, args=(read_fd, path, cap), daemon=True,
                              name=f"mcp-log-{path.stem}")
    thread.start()
    stream = os.fdopen(write_fd, "w", encoding="utf-8")
    try:
        yield stream
    finally:
        stream.close()  # the thread ends once the server's copy of the pipe closes too
