"""Put files back as a rewind wants them, all or nothing, even if the process is killed.

1. The journal (which files, which contents) is written and flushed to disk.
2. Every new content is written to a temporary file beside its target, through the
   target's folder opened and checked to be inside the project (a file whose folder now
   leads elsewhere is left alone, and said so); then the project's and the store's file
   systems are flushed to disk once, not file by file.
3. The commit: the rewind record is appended to the transcript.
4. The temporary files are renamed over the targets; files to remove are removed.
5. The journal is deleted.

Killed before 3, the next start removes the temporary files: the old state. Killed
after 3, it finishes 4 from the journal: the new state. The transcript decides which.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mini_claude.atomic_files import atomic_write
from mini_claude.checkpoints.store import CheckpointStore
from mini_claude.live_processes import is_running
from mini_claude.private_dirs import make_private_dirs
from mini_claude.safe_read import kind_of
from mini_claude.transcript import read_records

JOURNAL_MODE = 0o600
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
_FOLDER = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_DIRECTORY", 0)


@dataclass(frozen=True, slots=True)
class FileRestore:
    """One file's new state: ``content`` (an id in the store) with ``mode``, or removed."""

    path: Path
    content: str | None
    mode: int | None = None

    def temporary(self, rewind_id: str) -> Path:
        return self.path.with_name(f".{self.path.name}.rewind-{rewind_id}.tmp")


@dataclass(frozen=True, slots=True)
class Refused:
    """A file the restore left as it was, and why (one line for the user)."""

    path: Path
    reason: str


class RestoreError(Exception):
    """Nothing was changed; one line for the user."""


class RestoreIncomplete(Exception):
    """The rewind was recorded but a file could not be put in place; the next start retries."""


class OutsideProject(Exception):
    """The file's real folder is not inside the project (a folder was swapped for a link)."""


Commit = Callable[[list[FileRestore]], None]


def restore_files(store: CheckpointStore, rewind_id: str, transcript: Path,
                  files: list[FileRestore], commit: Commit, *, root: Path) -> list[Refused]:
    """Bring every file to its new state, with ``commit`` (recording the rewind of the files
    that can be restored) in between; the files left alone because they lead out of ``root``.

    Each file's folder is opened and checked to be inside the project when the file is
    written, and the write goes through that open folder, so a folder swapped for a link
    to somewhere else is never written through.
    """
    _write_journal(store, rewind_id, transcript, files, root)
    refused: list[Refused] = []
    staged: list[FileRestore] = []
    folders = _OpenFolders(root)
    try:
        try:
            for change in files:
                try:
                    _stage(store, rewind_id, change, folders)
                    staged.append(change)
                except OutsideProject as exc:
                    refused.append(Refused(change.path, str(exc)))
            sync_to_disk([root, store.folder])  # what was staged, once for all, before the commit
            if refused:
                _write_journal(store, rewind_id, transcript, staged, root, replace=True)
            commit(staged)
        except BaseException:
            _roll_back_staged(rewind_id, staged, folders)
            _remove_journal(store)
            raise
        try:
            for change in staged:
                try:
                    _place(rewind_id, change, folders)
                except OutsideProject as exc:
                    refused.append(Refused(change.path, str(exc)))
        except OSError as exc:  # recorded: the journal stays, and the next start finishes it
            raise RestoreIncomplete(
                f"{exc.filename or change.path}: {exc.strerror or exc}") from None
    finally:
        folders.close()
    _remove_journal(store)
    return refused


class _OpenFolders:
    """Each target folder made, opened and checked to be inside the project once per
    restore (not once per file), and checked again once before its files are put in place."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._open: dict[Path, int] = {}
        self._placing: dict[Path, OutsideProject | None] = {}  # checked again: the outcome

    def for_staging(self, path: Path) -> int:
        folder = self._open.get(path.parent)
        if folder is None:
            _make_folders(path, self.root)
            folder = open_folder_inside(path, self.root)
            self._open[path.parent] = folder
        return folder

    def for_placing(self, path: Path) -> int:
        """The folder, still inside the project and still the one ``path`` names."""
        folder = self._open.get(path.parent)
        if folder is None:
            folder = open_folder_inside(path, self.root)
            self._open[path.parent] = folder
        if path.parent not in self._placing:
            try:
                _check_still_inside(folder, path, self.root)
                self._placing[path.parent] = None
            except OutsideProject as exc:
                self._placing[path.parent] = exc
        refused = self._placing[path.parent]
        if refused is not None:
            raise OutsideProject(str(refused))
        return folder

    def staged_in(self, path: Path) -> int | None:
        return self._open.get(path.parent)

    def close(self) -> None:
        for folder in self._open.values():
            _close(folder)
        self._open.clear()


def recover(store: CheckpointStore, root: Path) -> str | None:
    """Finish or undo a rewind a killed process left half done; a line saying which, or None."""
    try:
        journal = json.loads(store.journal.read_text(encoding="utf-8"))
        rewind_id = str(journal["id"])
        transcript = Path(journal["transcript"])
        files = [FileRestore(Path(f["path"]), f.get("content"), f.get("mode"))
                 for f in journal["files"]]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        _remove_journal(store)
        return "a damaged rewind journal was removed"
    if _still_running(journal.get("pid")):
        return None  # another mini-claude in this project is rewinding right now
    if not _committed(transcript, rewind_id):
        for change in files:
            _remove_temporary(rewind_id, change, root)
        _remove_journal(store)
        return "a rewind interrupted before it changed any file was undone"
    left: list[str] = []
    for change in files:
        try:
            _finish(store, rewind_id, change, root)
        except OutsideProject as exc:
            left.append(f"{change.path} ({exc})")
    sync_to_disk([root])
    _remove_journal(store)
    done = f"a rewind interrupted half-way was completed ({len(files) - len(left)} files)"
    return done + (f"; left as they are: {', '.join(left)}" if left else "")


def _write_journal(store: CheckpointStore, rewind_id: str, transcript: Path,
                   files: list[FileRestore], root: Path, *, replace: bool = False) -> None:
    if store.journal.exists() and not replace:
        raise RestoreError("another rewind is under way (or was interrupted); start mini-claude "
                           "again in this project to finish it first")
    body: dict[str, Any] = {
        "id": rewind_id,
        "pid": os.getpid(),
        "transcript": str(transcript),
        "root": str(root),
        "files": [{"path": str(f.path), "content": f.content, "mode": f.mode} for f in files],
    }
    make_private_dirs(store.folder)
    atomic_write(store.journal, json.dumps(body).encode("utf-8"), JOURNAL_MODE)


def _stage(store: CheckpointStore, rewind_id: str, change: FileRestore,
           folders: _OpenFolders) -> None:
    """The new content written beside its target, through the target's open folder (kept
    open for the rename); a file to remove has nothing to stage."""
    if change.content is None:
        return
    data = store.get(change.content)
    if data is None:
        raise RestoreError(f"the content of {change.path} is no longer in the checkpoint store")
    folder = folders.for_staging(change.path)
    _write_temporary(folder, change.temporary(rewind_id).name, data, change.mode)


def sync_to_disk(paths: list[Path]) -> None:
    """Flush the file systems holding ``paths`` (each once): ``syncfs`` where the system
    has it, else a whole-system sync. What was written before is then on disk."""
    libc = _libc()
    done: set[int] = set()
    for path in paths:
        try:
            fd = os.open(path, _FOLDER)
        except OSError:
            continue
        try:
            device = os.fstat(fd).st_dev
            if device in done:
                continue
            done.add(device)
            if libc is None or libc.syncfs(fd) != 0:
                os.sync()
        finally:
            os.close(fd)


@functools.cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.syncfs.argtypes = [ctypes.c_int]
    except (OSError, AttributeError):
        return None
    return libc


def _write_temporary(folder: int, name: str, data: bytes, mode: int | None) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=folder)  # left by an earlier try of this very rewind
    fd = os.open(name, _CREATE, 0o600, dir_fd=folder)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fchmod(handle.fileno(), mode if mode is not None else 0o644)


def _place(rewind_id: str, change: FileRestore, folders: _OpenFolders) -> None:
    """The one step per file after the commit: a rename, or a removal, in the folder checked
    when it was staged and checked again now."""
    try:
        folder = folders.for_placing(change.path)
    except OutsideProject:
        staged_in = folders.staged_in(change.path)
        if change.content is not None and staged_in is not None:
            with contextlib.suppress(OSError):
                os.unlink(change.temporary(rewind_id).name, dir_fd=staged_in)
        raise
    if change.content is None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(change.path.name, dir_fd=folder)
        return
    temporary = change.temporary(rewind_id).name
    os.replace(temporary, change.path.name, src_dir_fd=folder, dst_dir_fd=folder)


def _finish(store: CheckpointStore, rewind_id: str, change: FileRestore, root: Path) -> None:
    """After a kill past the commit: a rename not done yet is done now."""
    folder = open_folder_inside(change.path, root)
    if change.content is None:
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(change.path.name, dir_fd=folder)
        finally:
            _close(folder)
        return
    try:
        temporary = change.temporary(rewind_id).name
        if not _exists_in(folder, temporary):
            data = store.get(change.content)
            if data is None or _regular_content(folder, change.path.name) == data:
                return
            _write_temporary(folder, temporary, data, change.mode)
        os.replace(temporary, change.path.name, src_dir_fd=folder, dst_dir_fd=folder)
    finally:
        _close(folder)


def open_folder_inside(path: Path, root: Path) -> int:
    """The folder ``path`` is in, opened, when its real place (every link followed, read off
    the open folder itself) is inside ``root``; OutsideProject otherwise."""
    folder = os.open(path.parent, _FOLDER)
    try:
        _check_inside(_real_path(folder, path.parent), root)
    except BaseException:
        os.close(folder)
        raise
    return folder


def _check_still_inside(folder: int, path: Path, root: Path) -> None:
    """The open folder is still inside ``root`` and still the one ``path`` names."""
    _check_inside(_real_path(folder, path.parent), root)
    try:
        named = os.stat(path.parent)
    except OSError:
        raise OutsideProject("its folder was moved away during the rewind") from None
    opened = os.fstat(folder)
    if (named.st_dev, named.st_ino) != (opened.st_dev, opened.st_ino):
        raise OutsideProject("its folder was replaced during the rewind") from None


def _check_inside(real: str, root: Path) -> None:
    real_root = os.path.realpath(root)
    if not Path(real).is_relative_to(real_root):
        raise OutsideProject(f"its folder leads outside the project, to {real}")


def _real_path(folder: int, fallback: Path) -> str:
    """Where an open folder really is (from the descriptor where the system says)."""
    try:
        return os.readlink(f"/proc/self/fd/{folder}")
    except OSError:
        return os.path.realpath(fallback)


def _make_folders(path: Path, root: Path) -> None:
    """Create the missing folders of ``path``, once the nearest existing one is in ``root``."""
    existing = path.parent
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    _check_inside(os.path.realpath(existing), root)
    path.parent.mkdir(parents=True, exist_ok=True)


def _exists_in(folder: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _regular_content(folder: int, name: str) -> bytes | None:
    """A regular file's bytes; None for a missing or special file (a FIFO is never opened
    for a blocking read)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if kind_of(os.fstat(fd).st_mode) is not None:
            return None
        os.set_blocking(fd, True)
        return handle.read()


def _roll_back_staged(rewind_id: str, staged: list[FileRestore],
                      folders: _OpenFolders) -> None:
    for change in staged:
        folder = folders.staged_in(change.path)
        if folder is not None and change.content is not None:
            with contextlib.suppress(OSError):
                os.unlink(change.temporary(rewind_id).name, dir_fd=folder)


def _remove_temporary(rewind_id: str, change: FileRestore, root: Path) -> None:
    with contextlib.suppress(OSError, OutsideProject):
        folder = open_folder_inside(change.path, root)
        try:
            os.unlink(change.temporary(rewind_id).name, dir_fd=folder)
        finally:
            _close(folder)


def _close(folder: int | None) -> None:
    if folder is not None:
        with contextlib.suppress(OSError):
            os.close(folder)


def _remove_journal(store: CheckpointStore) -> None:
    with contextlib.suppress(FileNotFoundError):
        store.journal.unlink()


def _still_running(pid: object) -> bool:
    """Another process, still running, that wrote the journal."""
    if not isinstance(pid, int) or pid <= 0 or pid == os.getpid():
        return False
    return is_running(pid)


def _committed(transcript: Path, rewind_id: str) -> bool:
    try:
        records = read_records(transcript)
    except OSError:
        return False
    return any(isinstance(r, dict) and r.get("type") == "rewind" and r.get("id") == rewind_id
               for r in records)
