"""What a command did to the project's files: run_shell, a background shell, an MCP tool, `!cmd`.

Before the command the project is listed (path -> size, mtime_ns, inode, mode) and every
file whose content is not in the store yet goes in, so whatever the command then changes
or deletes can be put back. After it the project is listed again, and each file it
created, changed, deleted, renamed or re-moded gets a ``checkpoint`` record, as an edit
does: ``/rewind`` restores both alike.

The listing is kept on disk between sessions (``tree-index``): a file whose size, mtime
and inode are unchanged is never read again, so a command costs two listings, plus the
reading of what changed. Files .gitignore ignores (whole ignored folders are not entered),
files over the size limit and links are listed but not stored: a change to one is
recorded as "not checkpointed", with the reason, never skipped in silence.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import stat
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mini_claude.checkpoints.store import CheckpointStore
from mini_claude.project.ignore import ALWAYS_SKIPPED_DIRS, IgnoreRules

Record = Callable[[dict[str, Any]], None]
INDEX_NAME = "tree-index"
INDEX_VERSION = 1
NEVER_LISTED = frozenset({".git"})  # the repository's own database: not the project's files

# What a listed path is. Only FILE entries have their content in the store.
FILE, FOLDER, IGNORED_FILE, IGNORED_FOLDER = "f", "d", "i", "I"
LINK, LARGE, OTHER, UNREADABLE = "l", "L", "o", "u"
NOT_KEPT = {
    IGNORED_FILE: "ignored by .gitignore",
    IGNORED_FOLDER: "in a folder ignored by .gitignore (or never tracked)",
    LINK: "a symbolic link",
    OTHER: "not a regular file",
}

# path relative to the root -> (kind, size, mtime_ns, inode, mode, content id or "")
Entry = tuple[str, int, int, int, int, str]
Listing = dict[str, Entry]


@dataclass
class Capture:
    """The project as it stood before one command."""

    label: str
    listing: Listing
    started: float = field(default_factory=time.monotonic)


class ProjectTree:
    """The project's files as last seen, with their contents kept in the store."""

    def __init__(self, root: Path, store: CheckpointStore, session_id: str, record: Record, *,
                 max_file_bytes: int) -> None:
        self.root = root
        self.store = store
        self.session_id = session_id
        self.record = record
        self.max_file_bytes = max_file_bytes
        self.added_bytes = 0  # to the store, for the checkpointer's bound
        self._lock = threading.Lock()
        self._listing: Listing | None = None  # None: not loaded yet this session
        self._ignore_stamp: tuple[tuple[str, int, int], ...] = ()
        self._rules = IgnoreRules(root)
        self._verdicts: dict[str, bool] = {}
        self._dirty = False
        self.background: list[Callable[[], bool]] = []  # "still running?" of each shell

    # ---- the two calls around a command -----------------------------------------------

    def before(self, label: str) -> Capture:
        """List the project and keep in the store every content not there yet.

        What changed since the last look was done by someone else (the user, or a
        background shell, whose changes are recorded now, in the turn they happened)."""
        with self._lock:
            self._look("a background shell" if self._background_running() else None)
            assert self._listing is not None
            return Capture(label, dict(self._listing))

    def after(self, capture: Capture) -> int:
        """Record what the command changed; how many paths."""
        with self._lock:
            changed = self._look(capture.label, since=capture.listing)
            self._save_index()
            return changed

    def watch_background(self, running: Callable[[], bool]) -> None:
        """Changes found while this shell runs are recorded as the background shell's."""
        with self._lock:
            self.background = [r for r in self.background if r()] + [running]

    def at_turn_boundary(self) -> None:
        """A turn starts: a background shell's changes so far belong to the turns before."""
        with self._lock:
            if not self.background:
                return
            self._look("a background shell")
            self.background = [r for r in self.background if r()]
            self._save_index()

    # ---- listing ----------------------------------------------------------------------

    def _background_running(self) -> bool:
        running = [r for r in self.background if r()]
        had = bool(self.background)
        self.background = running
        return had  # one that ended since the last look still made those changes

    def _look(self, label: str | None, since: Listing | None = None) -> int:
        """List the project, store new contents, record the differences when ``label``."""
        first = self._listing is None
        if first:
            self._listing = self._load_index()
        assert self._listing is not None
        previous = since if since is not None else self._listing
        current = self._scan()
        fresh = self._keep_contents(current, self._listing, verify=first)
        changes = 0
        if label is not None and not first:
            changes = self._record_changes(previous, current, label)
        self._dirty = self._dirty or fresh or current != self._listing
        self._listing = current
        return changes

    def _scan(self) -> Listing:
        self._refresh_ignore_rules()
        listing: Listing = {}
        self._scan_folder(self.root, "", listing)
        return listing

    def _scan_folder(self, folder: Path, prefix: str, listing: Listing) -> None:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return
        for entry in entries:
            name = entry.name
            relative = prefix + name
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            mode = info.st_mode
            if stat.S_ISDIR(mode):
                if name in NEVER_LISTED:
                    continue
                if self._ignored(relative, is_dir=True):
                    listing[relative] = (IGNORED_FOLDER, 0, info.st_mtime_ns, info.st_ino,
                                         stat.S_IMODE(mode), "")
                    continue
                listing[relative] = (FOLDER, 0, 0, info.st_ino, stat.S_IMODE(mode), "")
                self._scan_folder(folder / name, relative + "/", listing)
                continue
            kind = FILE
            if stat.S_ISLNK(mode):
                kind = LINK
            elif not stat.S_ISREG(mode):
                kind = OTHER
            elif self._ignored(relative, is_dir=False):
                kind = IGNORED_FILE
            elif info.st_size > self.max_file_bytes:
                kind = LARGE
            listing[relative] = (kind, info.st_size, info.st_mtime_ns, info.st_ino,
                                 stat.S_IMODE(mode), "")

    def _ignored(self, relative: str, *, is_dir: bool) -> bool:
        key = relative + "/" if is_dir else relative
        verdict = self._verdicts.get(key)
        if verdict is None:
            name = relative.rsplit("/", 1)[-1]
            verdict = (is_dir and name in ALWAYS_SKIPPED_DIRS) or self._rules.ignored(
                self.root / relative, is_dir=is_dir)
            self._verdicts[key] = verdict
        return verdict

    def _refresh_ignore_rules(self) -> None:
        """The verdicts are kept while no ignore file changed (found by the last listing)."""
        names = [".git/info/exclude", ".gitignore"]
        if self._listing:
            names += [p for p in self._listing if p.endswith("/.gitignore")]
        stamp: list[tuple[str, int, int]] = []
        for name in names:
            with contextlib.suppress(OSError):
                info = os.stat(self.root / name)
                stamp.append((name, info.st_size, info.st_mtime_ns))
        if tuple(stamp) != self._ignore_stamp:
            self._ignore_stamp = tuple(stamp)
            self._rules = IgnoreRules(self.root)
            self._verdicts = {}

    # ---- contents ---------------------------------------------------------------------

    def _keep_contents(self, current: Listing, known: Listing, *, verify: bool) -> bool:
        """Each file's content id: the known one when size, mtime and inode say unchanged,
        else read and stored now. True when anything new was stored."""
        stored: list[str] = []
        for relative, entry in current.items():
            if entry[0] != FILE:
                continue
            old = known.get(relative)
            digest = old[5] if old is not None and old[:5] == entry[:5] else ""
            if digest and verify and not self.store.has(digest):
                digest = ""  # pruned since the index was written
            fresh = not digest
            if fresh:
                digest = self._store_file(relative)
                if not digest:
                    current[relative] = (UNREADABLE, *entry[1:5], "")
                    continue
            current[relative] = (*entry[:5], digest)
            if fresh or verify:
                stored.append(digest)
        if stored:
            self.store.refer(self.session_id, stored)
        return bool(stored)

    def _store_file(self, relative: str) -> str:
        try:
            fd = os.open(self.root / relative, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                         | os.O_CLOEXEC)
        except OSError:
            return ""
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return ""
            data = handle.read(self.max_file_bytes + 1)
        if len(data) > self.max_file_bytes:
            return ""
        try:
            digest, added = self.store.put(data, durable=False)
        except OSError:
            return ""
        self.added_bytes += added
        return digest

    # ---- the records ------------------------------------------------------------------

    def _record_changes(self, before: Listing, after: Listing, label: str) -> int:
        created_folders = sorted(p for p, e in after.items() if e[0] == FOLDER and (
            before.get(p) is None or before[p][0] != FOLDER))
        count = 0
        touched = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        for relative in touched:
            old, new = before.get(relative), after.get(relative)
            if old is not None and old[0] == FOLDER and (new is None or new[0] == FOLDER):
                continue  # a folder's own changes are its files' changes
            if new is not None and new[0] == FOLDER and old is None:
                continue
            if not _differs(old, new):
                continue
            record: dict[str, Any] = {
                "type": "checkpoint", "id": uuid.uuid4().hex[:12], "time": time.time(),
                "path": str(self.root / relative), "before": _state(old, new),
                "after": _after(new), "by": label,
            }
            folders = [str(self.root / f) for f in created_folders
                       if relative.startswith(f + "/")]
            if folders and old is None:
                record["created_folders"] = folders
                created_folders = [f for f in created_folders if str(self.root / f) not in folders]
            self.record(record)
            count += 1
        return count

    # ---- the index on disk --------------------------------------------------------------

    @property
    def index_path(self) -> Path:
        return self.store.folder / INDEX_NAME

    def _load_index(self) -> Listing:
        try:
            loaded = marshal.loads(self.index_path.read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return {}
        if not isinstance(loaded, dict) or loaded.get("version") != INDEX_VERSION:
            return {}
        if loaded.get("root") != str(self.root):
            return {}
        files = loaded.get("files")
        return files if isinstance(files, dict) else {}

    def _save_index(self) -> None:
        if not self._dirty or self._listing is None:
            return
        body = marshal.dumps({"version": INDEX_VERSION, "root": str(self.root),
                              "files": self._listing})
        temporary = self.index_path.with_name(f".{INDEX_NAME}.{os.getpid()}.tmp")
        try:
            self.store.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(body)
            os.replace(temporary, self.index_path)
        except OSError:
            return  # only a cache: the next session lists the project again
        self._dirty = False


def _differs(old: Entry | None, new: Entry | None) -> bool:
    if old is None or new is None:
        return old is not new
    if old[0] != new[0] or old[4] != new[4]:
        return True
    if old[0] == FILE:
        return old[5] != new[5]
    if old[0] == IGNORED_FOLDER:
        return old[2] != new[2]
    return old[1:4] != new[1:4]


def _state(old: Entry | None, new: Entry | None) -> dict[str, Any]:
    """What the path held before, as a checkpoint records it."""
    if old is None:
        if new is not None and new[0] != FILE:
            return _not_kept(new)
        return {"state": "absent"}
    if old[0] == FILE and old[5]:
        return {"state": "content", "content": old[5], "mode": old[4]}
    return _not_kept(old)


def _not_kept(entry: Entry) -> dict[str, Any]:
    kind = entry[0]
    if kind == LARGE:
        reason = "over the checkpoint size limit"
    else:
        reason = NOT_KEPT.get(kind, "could not be read")
    return {"state": "not_checkpointed", "reason": reason}


def _after(new: Entry | None) -> str | None:
    if new is None:
        return "absent"
    return new[5] if new[0] == FILE and new[5] else None
