"""What a command did to the project's files: run_shell, a background shell, an MCP tool, `!cmd`.

Before the command the project is listed (path -> size, mtime_ns, inode, mode) and every
file whose content is not in the store yet goes in, so whatever the command then changes
or deletes can be put back. After it the project is listed again, and each file it
created, changed, deleted, renamed or re-moded gets a ``checkpoint`` record, as an edit
does: ``/rewind`` restores both alike.

The listing is kept on disk between sessions (``tree-index``): a file whose size, mtime
and inode are unchanged is never read again. After the first look of a session the folders
are watched (``watch.py``), so a command costs the listing of the folders it changed, plus
the reading of what changed; without notices it costs two listings of the whole project.
Files .gitignore ignores (whole ignored folders are not entered), files over the size limit
and links are listed but not stored: a change to one is recorded as "not checkpointed",
with the reason, never skipped in silence.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import stat
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mini_claude.checkpoints.store import CheckpointStore
from mini_claude.checkpoints.watch import FolderWatch
from mini_claude.project.ignore import ALWAYS_SKIPPED_DIRS, IgnoreRules

Record = Callable[[dict[str, Any]], None]
INDEX_NAME = "tree-index"
INDEX_VERSION = 1
KEPT_LOOKS = 64  # looks whose changed paths are remembered, for the commands running meanwhile
INDEX_SAVE_SECONDS = 30.0  # the index is a cache: rewritten at most this often, not per command
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
    generation: int = 0  # the tree's look count then: what changed after it is the command's
    started: float = field(default_factory=time.monotonic)


class ProjectTree:
    """The project's files as last seen, with their contents kept in the store.

    After the first look only the folders the kernel says changed are listed again
    (``watch.FolderWatch``); without notices every look lists the whole project."""

    def __init__(self, root: Path, store: CheckpointStore, session_id: str, record: Record, *,
                 max_file_bytes: int, watch: bool = True) -> None:
        self.root = root
        self.store = store
        self.session_id = session_id
        self.record = record
        self.max_file_bytes = max_file_bytes
        self.added_bytes = 0  # to the store, for the checkpointer's bound
        self.full_listings = 0  # how many looks listed the whole project
        self._lock = threading.Lock()
        self._listing: Listing | None = None  # None: not loaded yet this session
        self._children: dict[str, set[str]] = {}  # folder ("" the root) -> its entries
        self._changes: list[tuple[int, list[str]]] = []  # the last looks' changed paths
        self._generation = 0
        self._linked: set[str] = set()  # files with other hard links: changed unnoticed
        self._ignore_files: set[str] = set()  # the listed .gitignore files below the root
        self._ignore_stamp: tuple[tuple[str, int, int], ...] = ()
        self._rules = IgnoreRules(root)
        self._verdicts: dict[str, bool] = {}
        self._dirty = False
        self._saved_at: float | None = None  # monotonic; None: not saved this session
        self._wants_watch = watch
        self._watch: FolderWatch | None = None
        self.background: list[Callable[[], bool]] = []  # "still running?" of each shell

    # ---- the two calls around a command -----------------------------------------------

    def before(self, label: str) -> Capture:
        """List the project and keep in the store every content not there yet.

        What changed since the last look was done by someone else (the user, or a
        background shell, whose changes are recorded now, in the turn they happened)."""
        with self._lock:
            self._look("a background shell" if self._background_running() else None)
            assert self._listing is not None
            return Capture(label, dict(self._listing), self._generation)

    def after(self, capture: Capture) -> int:
        """Record what the command changed; how many paths."""
        with self._lock:
            changed = self._look(capture.label, since=capture)
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

    def close(self) -> None:
        """Stop watching the project (the next look, if any, lists it all); the listing
        not written yet is written now."""
        with self._lock:
            self._save_index(now=True)
            if self._watch is not None:
                self._watch.close()
                self._watch = None
            self._wants_watch = False

    # ---- looking ----------------------------------------------------------------------

    def _background_running(self) -> bool:
        running = [r for r in self.background if r()]
        had = bool(self.background)
        self.background = running
        return had  # one that ended since the last look still made those changes

    def _look(self, label: str | None, since: Capture | None = None) -> int:
        """Bring the listing up to date, store new contents, record the differences
        (since ``since``, or made by this look) when ``label``."""
        first = self._listing is None
        if first:
            self._listing = self._load_index()
            self._index_children()
        self._generation += 1
        previous = self._refresh(verify=first)
        if previous:
            self._changes = [*self._changes[-(KEPT_LOOKS - 1):], (self._generation, [*previous])]
        if label is None or first:
            return 0
        if since is None:
            return self._record_changes(previous, previous.keys(), label)
        return self._record_changes(since.listing, self._changed_since(since), label)

    def _changed_since(self, capture: Capture) -> Iterable[str]:
        """The paths changed by the looks after ``capture``'s (every path, when those looks
        are no longer all remembered)."""
        assert self._listing is not None
        if self._generation - capture.generation >= KEPT_LOOKS:
            return capture.listing.keys() | self._listing.keys()
        return {p for seen, paths in self._changes if seen > capture.generation for p in paths}

    def _refresh(self, *, verify: bool) -> dict[str, Entry | None]:
        """The listing brought up to date; what each changed path held before."""
        rules_changed = self._refresh_ignore_rules()
        notices = self._notices()
        forced = notices[1] if notices is not None else set()  # read again whatever happens
        if notices is None or verify or rules_changed:
            return self._apply(*self._list_all(), verify=verify, forced=forced)
        folders = notices[0]
        if not folders:
            return {}
        found, scope = self._relist(folders, deep=False)
        if any(p == ".gitignore" or p.endswith("/.gitignore") for p in found.keys() | scope
               if self._listing_differs(p, found)):
            self._refresh_ignore_rules()
            return self._apply(*self._list_all(), forced=forced)
        return self._apply(found, scope, forced=forced)

    def _listing_differs(self, relative: str, found: Listing) -> bool:
        assert self._listing is not None
        old, new = self._listing.get(relative), found.get(relative)
        return old is None or new is None or old[:5] != new[:5]

    def _notices(self) -> tuple[set[str], set[str]] | None:
        """The folders to list again and the files to read again; None: list everything."""
        if self._watch is None:
            if not self._wants_watch:
                return None
            try:
                self._watch = FolderWatch(self.root)
            except OSError:
                self._wants_watch = False  # not here: every look lists the whole project
            return None  # the listing that follows adds the watches
        changes = self._watch.take()
        if changes is None:
            return None
        folders = changes.folders | {p.rpartition("/")[0] for p in self._linked}
        return folders, changes.files

    def _list_all(self) -> tuple[Listing, set[str]]:
        self.full_listings += 1
        return self._relist({""}, deep=True)

    def _relist(self, folders: set[str], *, deep: bool) -> tuple[Listing, set[str]]:
        """List ``folders`` again (shallowest first): what is in them, and the paths the
        listing vouches for (what was in them before: any not found is gone). A folder
        that is new, replaced or re-moded is listed with everything under it."""
        found: Listing = {}
        scope: set[str] = set()
        done: set[str] = set()
        for folder in sorted(folders, key=lambda f: (f.count("/") if f else -1, f)):
            if folder not in done and self._still_folder(folder, found, scope):
                self._list_folder(folder, deep, found, scope, done)
        return found, scope

    def _still_folder(self, relative: str, found: Listing, scope: set[str]) -> bool:
        """Whether ``relative`` and every folder above it are (still) listed folders: never
        list through a folder swapped for a link."""
        assert self._listing is not None
        while relative:
            entry = found.get(relative)
            if entry is None:
                entry = None if relative in scope else self._listing.get(relative)
            if entry is None or entry[0] != FOLDER:
                return False
            relative = relative.rpartition("/")[0]
        return True

    def _list_folder(self, folder: str, deep: bool, found: Listing, scope: set[str],
                     done: set[str]) -> None:
        assert self._listing is not None
        done.add(folder)
        if self._watch is not None:
            self._watch.add(folder)  # before the listing: a later change sends a notice
        scope.update(self._children.get(folder, ()))
        try:
            entries = list(os.scandir(self.root / folder if folder else self.root))
        except OSError:
            return
        prefix = folder + "/" if folder else ""
        for entry in entries:
            relative = prefix + entry.name
            listed = self._entry(entry, relative)
            if listed is None:
                continue
            found[relative] = listed
            if listed[0] != FOLDER:
                continue
            old = self._listing.get(relative)
            if deep or old is None or old[0] != FOLDER or old[3:5] != listed[3:5]:
                self._list_folder(relative, True, found, scope, done)

    def _entry(self, entry: os.DirEntry[str], relative: str) -> Entry | None:
        """One path as the listing keeps it; None for what is never listed."""
        name = entry.name
        try:
            is_folder = entry.is_dir(follow_symlinks=False)
            if is_folder and name in NEVER_LISTED:
                return None
            ignored_folder = is_folder and self._ignored(relative, is_dir=True)
            if ignored_folder and self._watch is not None:
                self._watch.add(relative, ignored=True)  # before its mtime is read
            info = entry.stat(follow_symlinks=False)
        except OSError:
            return None
        mode = info.st_mode
        if stat.S_ISDIR(mode):
            if ignored_folder or (not is_folder and self._ignored(relative, is_dir=True)):
                return (IGNORED_FOLDER, 0, info.st_mtime_ns, info.st_ino, stat.S_IMODE(mode), "")
            return (FOLDER, 0, 0, info.st_ino, stat.S_IMODE(mode), "")
        kind = FILE
        if stat.S_ISLNK(mode):
            kind = LINK
        elif not stat.S_ISREG(mode):
            kind = OTHER
        elif self._ignored(relative, is_dir=False):
            kind = IGNORED_FILE
        elif info.st_size > self.max_file_bytes:
            kind = LARGE
        if kind == FILE and info.st_nlink > 1:
            self._linked.add(relative)
        else:
            self._linked.discard(relative)
        return (kind, info.st_size, info.st_mtime_ns, info.st_ino, stat.S_IMODE(mode), "")

    def _apply(self, found: Listing, scope: set[str], *, verify: bool = False,
               forced: frozenset[str] | set[str] = frozenset()) -> dict[str, Entry | None]:
        """Bring the listing to what was found: new contents stored, what is gone removed
        (with all under it); what each changed path held before."""
        listing = self._listing
        assert listing is not None
        updates: dict[str, Entry | None] = {}
        for relative, entry in found.items():
            old = listing.get(relative)
            if old is not None and old[0] == FOLDER and entry[0] != FOLDER:
                updates.update(dict.fromkeys(self._under(relative)))
            if old is not None and old[:5] == entry[:5] and relative not in forced and (
                    not verify or old[0] != FILE or self.store.has(old[5])):
                continue
            updates[relative] = entry
        for relative in scope - found.keys():
            updates[relative] = None
            updates.update(dict.fromkeys(self._under(relative)))
        self._keep_contents(updates)
        previous: dict[str, Entry | None] = {}
        for relative, update in updates.items():
            old = listing.get(relative)
            if update == old:
                continue
            previous[relative] = old
            self._set(relative, update)
        if verify:
            self.store.refer(self.session_id, [e[5] for e in listing.values() if e[0] == FILE])
        self._dirty = self._dirty or bool(previous) or verify
        return previous

    def _under(self, folder: str) -> list[str]:
        """Every path the listing has under ``folder``."""
        found: list[str] = []
        pending = [folder]
        while pending:
            for child in self._children.get(pending.pop(), ()):
                found.append(child)
                pending.append(child)
        return found

    def _set(self, relative: str, entry: Entry | None) -> None:
        assert self._listing is not None
        parent = relative.rpartition("/")[0]
        if relative.endswith("/.gitignore"):
            (self._ignore_files.discard if entry is None else self._ignore_files.add)(relative)
        if entry is None:
            self._listing.pop(relative, None)
            self._linked.discard(relative)
            siblings = self._children.get(parent)
            if siblings is not None:
                siblings.discard(relative)
            if not self._children.get(relative):
                self._children.pop(relative, None)
            return
        self._listing[relative] = entry
        self._children.setdefault(parent, set()).add(relative)

    def _index_children(self) -> None:
        assert self._listing is not None
        self._children = {}
        for relative in self._listing:
            self._children.setdefault(relative.rpartition("/")[0], set()).add(relative)
        self._ignore_files = {p for p in self._listing if p.endswith("/.gitignore")}

    def _ignored(self, relative: str, *, is_dir: bool) -> bool:
        key = relative + "/" if is_dir else relative
        verdict = self._verdicts.get(key)
        if verdict is None:
            parent, _, name = relative.rpartition("/")
            verdict = (is_dir and name in ALWAYS_SKIPPED_DIRS) or self._rules.ignored_name(
                self.root / parent if parent else self.root, name, is_dir=is_dir)
            self._verdicts[key] = verdict
        return verdict

    def _refresh_ignore_rules(self) -> bool:
        """The verdicts are kept while no ignore file changed; True when one did."""
        names = [".git/info/exclude", ".gitignore", *sorted(self._ignore_files)]
        stamp: list[tuple[str, int, int]] = []
        for name in names:
            with contextlib.suppress(OSError):
                info = os.stat(self.root / name)
                stamp.append((name, info.st_size, info.st_mtime_ns))
        if tuple(stamp) == self._ignore_stamp:
            return False
        self._ignore_stamp = tuple(stamp)
        self._rules = IgnoreRules(self.root)
        self._verdicts = {}
        return True

    # ---- contents ---------------------------------------------------------------------

    def _keep_contents(self, updates: dict[str, Entry | None]) -> None:
        """Each new or changed file's content read and stored now, its id in its entry."""
        stored: list[str] = []
        for relative, entry in updates.items():
            if entry is None or entry[0] != FILE:
                continue
            digest = self._store_file(relative)
            if not digest:
                updates[relative] = (UNREADABLE, *entry[1:5], "")
                continue
            updates[relative] = (*entry[:5], digest)
            stored.append(digest)
        if stored:
            self.store.refer(self.session_id, stored)

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

    def _record_changes(self, before: Listing | dict[str, Entry | None],
                        touched: Iterable[str], label: str) -> int:
        """A record for each of ``touched`` that differs between ``before`` and now."""
        after = self._listing
        assert after is not None
        touched = sorted(touched)
        created_folders = [p for p in touched if (after.get(p) or ("",))[0] == FOLDER
                           and (before.get(p) or ("",))[0] != FOLDER]
        count = 0
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

    def _save_index(self, *, now: bool = False) -> None:
        """Write the listing for the next session: after the first look, then at most every
        INDEX_SAVE_SECONDS (a stale index only means a few files are read again)."""
        if not self._dirty or self._listing is None:
            return
        if not now and self._saved_at is not None and (
                time.monotonic() - self._saved_at < INDEX_SAVE_SECONDS):
            return
        self._saved_at = time.monotonic()
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
