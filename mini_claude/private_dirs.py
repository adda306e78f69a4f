"""Folders only their owner can enter: everything we write under the home folder goes in one."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

PRIVATE_DIR_MODE = 0o700


def make_private_dirs(folder: Path) -> None:
    """Create missing folders one by one so each new level gets 0700 despite the umask."""
    missing: list[Path] = []
    current = folder
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for path in reversed(missing):
        try:
            path.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:
            continue
        os.chmod(path, PRIVATE_DIR_MODE)
    if not folder.is_dir():
        raise NotADirectoryError(str(folder))


def ensure_private_dir(folder: Path) -> None:
    """Like :func:`make_private_dirs`, and a folder that already existed is made private too."""
    make_private_dirs(folder)
    with contextlib.suppress(OSError):
        os.chmod(folder, PRIVATE_DIR_MODE)
