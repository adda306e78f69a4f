"""``@path`` imports in instruction files, as Claude Code's memory files write them.

``See @docs/style.md`` pulls ``docs/style.md`` (relative to the importing file;
``@~/x`` is under the home folder, ``@/x`` absolute) into the instructions, and
an imported file may import again, at most five hops deep. Nothing inside a
code span or a fenced block is an import; a file already loaded is not loaded
twice, so a cycle ends by itself. A missing, unreadable or oversized import is
one warning line, never an error.

A repository must not be able to pull ``~/.ssh/id_rsa`` or our own ``.env``
into the prompt (and so to the provider): an import made by a project file
that reaches outside the project, or into the home folder's private parts,
loads only once the user approved it (the project-trust record). The rule for
what is outside is :class:`~mini_claude.project.boundary.ProjectBoundary`'s, the
same for every file a project brings; a top-level instruction file that is a link
out is held for approval the same way as an import.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mini_claude.project.boundary import ProjectBoundary, real_path
from mini_claude.safe_read import UnsafeFile

MAX_IMPORT_DEPTH = 5
MAX_FILE_CHARS = 40_000
MAX_TOTAL_CHARS = 160_000
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
# ``@`` at the start of a line or after white space, then a path (``\ `` escapes a space).
REFERENCE = re.compile(r"(?:^|(?<=\s))@((?:\\ |[^\s`])+)")
TRAILING = ".,;:!?)]}'\""


@dataclass(frozen=True, slots=True)
class InstructionFile:
    """One file whose text goes into the instructions."""

    path: Path
    text: str
    kind: str  # "user", "project", "local", "rule", "import"
    imported_by: Path | None = None
    trusted: bool = False  # the user's own file: its imports need no approval


@dataclass(frozen=True, slots=True)
class HeldImport:
    """An import a project file makes (or the file a project's link reaches) that waits for
    the user's approval."""

    source: Path
    target: Path
    link: bool = False  # ``source`` is itself a link to ``target``


@dataclass
class ImportResult:
    files: list[InstructionFile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    held: list[HeldImport] = field(default_factory=list)


def references(text: str) -> list[str]:
    """The ``@path`` references of a Markdown text, outside code spans and fenced blocks."""
    found: list[str] = []
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for match in REFERENCE.finditer(CODE_SPAN.sub(" ", line)):
            reference = match.group(1).replace("\\ ", " ").rstrip(TRAILING)
            if reference:
                found.append(reference)
    return found


def resolve(reference: str, importing_file: Path, home: Path) -> Path:
    if reference.startswith("~/"):
        return home / reference[2:]
    path = Path(reference)
    return path if path.is_absolute() else importing_file.parent / path


def looks_like_a_path(reference: str) -> bool:
    """``@README.md`` or ``@docs/x``, not ``@alice`` or ``@decorator``: only those warn when
    missing, so prose that mentions someone is not a warning."""
    return "/" in reference or "." in reference.lstrip(".")


class ImportGate:
    """Whether a project file may import a path (or be a link to it) without asking."""

    def __init__(self, boundary: ProjectBoundary,
                 approved: Callable[[Path, Path], bool]) -> None:
        self.boundary = boundary
        self.approved = approved

    def allows(self, source: Path, target: Path) -> bool:
        return not self.boundary.needs_approval(target) or self.approved(source, target)

    def holds_link(self, path: Path) -> bool:
        """A project's own file that is a link out, not approved yet."""
        return self.boundary.brings_in(path) and not self.approved(path, real_path(path))


class ImportExpander:
    """Loads top-level instruction files and, after each, the files it imports."""

    def __init__(self, gate: ImportGate, home: Path) -> None:
        self.gate = gate
        self.home = home
        self.result = ImportResult()
        self._seen: set[Path] = set()
        self._total = 0

    def add(self, path: Path, kind: str, *, trusted: bool, text: str | None = None) -> None:
        if real_path(path) in self._seen:
            return
        if text is None and not trusted and self.gate.holds_link(path):
            self.result.held.append(HeldImport(path, real_path(path), link=True))
            return
        body = text if text is not None else self._read(path, None)
        if body is None:
            return
        self._keep(InstructionFile(path, body, kind, None, trusted))
        self._imports(path, body, trusted, depth=1)

    def _keep(self, file: InstructionFile) -> None:
        self._seen.add(real_path(file.path))
        self._total += len(file.text)
        self.result.files.append(file)

    def _imports(self, source: Path, text: str, trusted: bool, depth: int) -> None:
        if depth > MAX_IMPORT_DEPTH:
            if references(text):
                self.result.warnings.append(
                    f"{source}: imports deeper than {MAX_IMPORT_DEPTH} levels are not loaded")
            return
        for reference in references(text):
            target = resolve(reference, source, self.home)
            if real_path(target) in self._seen:
                continue  # loaded already (or a cycle)
            if not target.exists():
                if looks_like_a_path(reference):
                    self.result.warnings.append(f"{source}: import @{reference} not found")
                continue
            if not trusted and not self.gate.allows(source, target):
                self.result.held.append(HeldImport(source, target))
                continue
            body = self._read(target, source)
            if body is None:
                continue
            self._keep(InstructionFile(target, body, "import", source, trusted))
            self._imports(target, body, trusted, depth + 1)

    def _read(self, path: Path, source: Path | None) -> str | None:
        where = f"{source}: import {path}" if source is not None else str(path)
        if not path.is_file():
            self.result.warnings.append(f"{where} is not a file; not loaded")
            return None
        try:  # the gate allowed it; never blocks on a pipe, never reads past the limit
            raw = self.gate.boundary.read(path, MAX_FILE_CHARS * 4 + 1, approved=True)
        except UnsafeFile as exc:
            self.result.warnings.append(f"{where} is not loaded ({exc})")
            return None
        except OSError as exc:
            self.result.warnings.append(f"{where} cannot be read ({exc.strerror or exc})")
            return None
        if (source is not None and len(raw) > MAX_FILE_CHARS * 4) or b"\x00" in raw[:8_000]:
            kind = "binary" if b"\x00" in raw[:8_000] else f"{len(raw):,} bytes"
            self.result.warnings.append(f"{where} is not loaded ({kind})")
            return None
        text = raw.decode("utf-8", errors="replace").strip()
        if len(text) > MAX_FILE_CHARS and source is not None:
            self.result.warnings.append(
                f"{where} is not loaded: {len(text):,} characters, over {MAX_FILE_CHARS:,}")
            return None
        if len(text) > MAX_FILE_CHARS:  # a file of its own: its head still counts
            self.result.warnings.append(
                f"{where} has {len(text):,} characters; only the first {MAX_FILE_CHARS:,} are "
                "loaded")
            text = text[:MAX_FILE_CHARS]
        if self._total + len(text) > MAX_TOTAL_CHARS:
            self.result.warnings.append(
                f"{where} is not loaded: the instructions would pass {MAX_TOTAL_CHARS:,} "
                "characters")
            return None
        return text


def held_lines(held: list[HeldImport], cwd: Path) -> Iterator[str]:
    for item in held:
        verb = "links to" if item.link else "imports"
        yield f"{_shown(item.source, cwd)} {verb} {item.target}"


def _shown(path: Path, cwd: Path) -> str:
    try:
        return path.relative_to(cwd).as_posix()
    except ValueError:
        return str(path)
