"""What a file looked like when the model last read or wrote it.

A whole-file write over a file someone changed since would silently drop their
change; write_file compares the stamp and asks the model to read the file again.
"""

from __future__ import annotations

import os
from pathlib import Path

Stamp = tuple[int, int, int]  # inode, size, modification time in nanoseconds


def file_stamp(path: Path) -> Stamp | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)
