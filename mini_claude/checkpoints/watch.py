"""Which of the project's folders changed since the last look, from Linux's inotify.

The checkpoints list the project around every command. Listing 10,000 files costs far
more than the command itself, so the folders are watched instead: after a command only
the folders the kernel named are listed again. When the kernel's queue overflowed, a
watch could not be added (the user's watch limit) or inotify is not there (another
system, or the user's instance limit), the answer is "unknown" and the caller lists the
whole project, as it would without a watch: a change is never missed for want of a notice.

Spoken to through ctypes: three system calls, no package to install.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import struct
import sys
import weakref
from dataclasses import dataclass, field
from pathlib import Path

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
WATCHED = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE
           | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)
CONTENT = IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB  # the file itself may differ, stat or not
SELF = IN_DELETE_SELF | IN_MOVE_SELF
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, length of the name that follows
_READ_BYTES = 64 * 1024
_NOT_THERE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EACCES})


@dataclass
class Changes:
    """Folders to list again (relative to the root, "" for the root itself), and files
    whose content may have changed even if their size and mtime say not."""

    folders: set[str] = field(default_factory=set)
    files: set[str] = field(default_factory=set)


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
    except (OSError, AttributeError):
        return None
    return libc


class FolderWatch:
    """The kernel's notices for the folders added, read without blocking."""

    def __init__(self, root: Path) -> None:
        """OSError when inotify cannot be had here (the caller then lists everything)."""
        libc = _libc()
        if libc is None:
            raise OSError("inotify is not available on this system")
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            number = ctypes.get_errno()
            raise OSError(number, os.strerror(number))
        self.root = Path(os.path.realpath(root))  # a link to the project is followed once here
        self._libc = libc
        self._fd = fd
        self._paths: dict[int, str] = {}  # watch -> folder relative to the root
        self._ignored: set[int] = set()  # watches of ignored folders: only their own entry
        self._lost = False  # a notice may be missing: the next look lists everything
        self._closer = weakref.finalize(self, _close_quietly, fd)

    def add(self, relative: str, *, ignored: bool = False) -> None:
        """Watch one folder (not its subfolders). Done before the folder is listed, so a
        change made while it is listed is either in the listing or in a notice."""
        path = os.fsencode(self.root / relative if relative else self.root)
        wd = self._libc.inotify_add_watch(self._fd, path, WATCHED)
        if wd < 0:
            # Gone or unreadable already: its parent's notices and listing say so. Any
            # other failure (the user's watch limit) loses notices: list everything next.
            missing = ctypes.get_errno() in _NOT_THERE and relative != ""
            self._lost = self._lost or not missing
            return
        self._paths[wd] = relative
        if ignored:
            self._ignored.add(wd)
        else:
            self._ignored.discard(wd)

    def take(self) -> Changes | None:
        """What changed since the last call; None when that cannot be known (list it all)."""
        changes = Changes()
        while True:
            try:
                data = os.read(self._fd, _READ_BYTES)
            except BlockingIOError:
                break
            except OSError:
                self._lost = True
                break
            if not data:
                break
            self._read_events(data, changes)
        if self._lost:
            self._lost = False
            return None
        return changes

    def close(self) -> None:
        self._closer()

    def _read_events(self, data: bytes, changes: Changes) -> None:
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
            name = data[offset + _EVENT.size:offset + _EVENT.size + length].rstrip(b"\0")
            offset += _EVENT.size + length
            self._note(wd, mask, os.fsdecode(name), changes)

    def _note(self, wd: int, mask: int, name: str, changes: Changes) -> None:
        if mask & IN_Q_OVERFLOW:
            self._lost = True
            return
        folder = self._paths.get(wd)
        if mask & IN_IGNORED:
            self._paths.pop(wd, None)
            self._ignored.discard(wd)
        if folder is None:
            return
        if wd in self._ignored:  # an ignored folder: only its own entry (its mtime) counts
            changes.folders.add(_parent(folder))
            return
        if name:
            changes.folders.add(folder)
            if mask & CONTENT:
                changes.files.add(f"{folder}/{name}" if folder else name)
            return
        if folder == "" and mask & SELF:
            self._lost = True  # the project folder itself moved or went
            return
        changes.folders.add(folder)
        if folder:
            changes.folders.add(_parent(folder))


def _parent(relative: str) -> str:
    return relative.rpartition("/")[0]


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
