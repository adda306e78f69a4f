"""The checkpoint store of one project: file contents by their SHA-256, each kept once.

Layout under the home, beside ``tool-results/`` and ``transcripts/``::

    checkpoints/<project>/blobs/<2 hex>/<sha256>   the content, zlib-compressed, 0600
    checkpoints/<project>/sessions/<session>.refs   the contents a session refers to
    checkpoints/<project>/rewind-journal.json       a rewind under way (see restore.py)

A session's ``.refs`` file is what keeps its contents alive: pruning removes the
oldest sessions' files (never the current one's) and then every content no
session refers to any more.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

from mini_claude.atomic_files import atomic_write
from mini_claude.private_dirs import make_private_dirs

PRIVATE_FILE_MODE = 0o600
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_HEX = re.compile(r"^[0-9a-f]{64}$")


def content_id(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def project_folder(checkpoints_dir: Path, cwd: Path) -> Path:
    """One folder per project: its name, and a hash of its full path to keep them apart."""
    resolved = str(cwd.resolve())
    name = _UNSAFE.sub("_", cwd.name)[:40] or "root"
    return checkpoints_dir / f"{name}-{hashlib.sha256(resolved.encode()).hexdigest()[:12]}"


@dataclass(frozen=True, slots=True)
class StoreSize:
    bytes: int
    contents: int
    sessions: int


class CheckpointStore:
    """Content-addressed, deduplicated file contents, referenced per session."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.blobs = folder / "blobs"
        self.sessions = folder / "sessions"
        self.journal = folder / "rewind-journal.json"
        self._known: dict[str, set[str]] = {}

    # ---- contents -----------------------------------------------------------------------

    def blob_path(self, digest: str) -> Path:
        return self.blobs / digest[:2] / digest

    def put(self, data: bytes, *, durable: bool = True) -> tuple[str, int]:
        """Store ``data`` (once); its id and the bytes this call added to the store.

        ``durable=False`` skips the flush to disk: for contents kept in advance (a
        project's files before a command), where a blob lost to a power cut reads back
        as missing (``get`` checks every content against its id) rather than costing a
        disk flush per file on every command.
        """
        digest = content_id(data)
        path = self.blob_path(digest)
        if path.exists():
            return digest, 0
        make_private_dirs(path.parent)
        packed = zlib.compress(data, 1)
        if durable:
            atomic_write(path, packed, PRIVATE_FILE_MODE)
        else:
            _quick_write(path, packed)
        return digest, len(packed)

    def get(self, digest: str) -> bytes | None:
        """The content with this id, or None when it was pruned (or is damaged)."""
        if not _HEX.match(digest):
            return None
        try:
            data = zlib.decompress(self.blob_path(digest).read_bytes())
        except (OSError, zlib.error):
            return None
        return data if content_id(data) == digest else None

    def has(self, digest: str) -> bool:
        return bool(_HEX.match(digest)) and self.blob_path(digest).is_file()

    # ---- which session needs what -----------------------------------------------------

    def refs_path(self, session_id: str) -> Path:
        return self.sessions / f"{_UNSAFE.sub('_', session_id)[:120]}.refs"

    def refer(self, session_id: str, digests: list[str]) -> None:
        """Keep these contents for as long as the session is kept."""
        known = self._known.setdefault(session_id, set())
        new = [d for d in digests if d not in known]
        if not new:
            self._touch(session_id)
            return
        make_private_dirs(self.sessions)
        fd = os.open(self.refs_path(session_id), os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                     PRIVATE_FILE_MODE)
        with os.fdopen(fd, "a", encoding="ascii") as handle:
            handle.write("".join(f"{d}\n" for d in new))
        known.update(new)

    def copy_refs(self, origin: str, fork: str) -> None:
        """A fork needs everything its origin's history refers to."""
        self.refer(fork, sorted(self._read_refs(self.refs_path(origin))))

    def _touch(self, session_id: str) -> None:
        with contextlib.suppress(OSError):
            os.utime(self.refs_path(session_id))

    @staticmethod
    def _read_refs(path: Path) -> set[str]:
        try:
            text = path.read_text(encoding="ascii", errors="replace")
        except OSError:
            return set()
        return {line for line in text.split("\n") if _HEX.match(line)}

    # ---- size and pruning ---------------------------------------------------------------

    def size(self) -> StoreSize:
        total = contents = sessions = 0
        for path in _files(self.blobs):
            total += _size_of(path)
            contents += 1
        for path in _files(self.sessions):
            total += _size_of(path)
            sessions += 1
        return StoreSize(total, contents, sessions)

    def prune(self, keep_session: str, max_bytes: int) -> list[str]:
        """Drop the oldest sessions' checkpoints until the store fits; the sessions dropped."""
        if max_bytes <= 0 or self.size().bytes <= max_bytes:
            return []
        keep = self.refs_path(keep_session)
        refs = sorted((p for p in _files(self.sessions) if p != keep), key=_mtime)
        dropped: list[str] = []
        for path in refs:
            with contextlib.suppress(OSError):
                path.unlink()
            dropped.append(path.stem)
            self._collect_garbage()
            if self.size().bytes <= max_bytes:
                break
        return dropped

    def _collect_garbage(self) -> None:
        wanted: set[str] = set()
        for path in _files(self.sessions):
            wanted |= self._read_refs(path)
        for path in _files(self.blobs):
            if path.name not in wanted:
                with contextlib.suppress(OSError):
                    path.unlink()


def _quick_write(path: Path, data: bytes) -> None:
    """Written beside, then renamed into place: never half a blob under its name."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC,
                 PRIVATE_FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


def _files(folder: Path) -> list[Path]:
    found: list[Path] = []
    with contextlib.suppress(OSError):
        for root, _dirs, names in os.walk(folder):
            found.extend(Path(root) / n for n in names if not n.startswith("."))
    return found


def _size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
