"""grep_search: regex search over the project, with ripgrep when present, Python otherwise.

Both backends run as a child process that prints ``path NUL line:text``;
this module builds the command, filters by the glob, reads lines up to the
caps, and stops the process at the deadline (a catastrophic regex included).

The glob is applied here rather than passed to ripgrep because ``rg --glob``
overrides .gitignore (a ``*.log`` glob would bring back ignored logs); as a
filter on results it means the same thing on both backends.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pathspec import GitIgnoreSpec

from mini_claude.project.ignore import ALWAYS_SKIPPED_DIRS
from mini_claude.protocol import ToolOutput, ToolSpec
from mini_claude.text import shorten
from mini_claude.tool_kinds import ToolTraits
from mini_claude.tools.base import Prepared, ToolContext
from mini_claude.tools.common import ToolError, reports_tool_errors
from mini_claude.tools.grep_worker import WorkerQuery
from mini_claude.tools.paths import home_kept_out, project_root, read_permission, resolve
from mini_claude.tools.permission_gate import withheld_by_rules
from mini_claude.tools.process import HeadTailBuffer, pump, terminate_group
from mini_claude.tools.special_files import refuse_special, special_kind

DEFAULT_TIME_LIMIT_SECONDS = 20.0
DEFAULT_MAX_MATCHES = 200
DEFAULT_MAX_CHARS = 20_000
MAX_COLUMNS = 500
_MAX_LINE_BYTES = 1 << 20

SPEC = ToolSpec(
    name="grep_search",
    description=(
        "Search file contents with a regular expression (Perl-style syntax: \\w, \\d, \\b, "
        "(?i) for case-insensitive). Returns matching lines as `path:line:text`, paths "
        "relative to the project. Skips files ignored by .gitignore, binary files, .git, "
        f"node_modules, .venv and __pycache__. Shows at most {DEFAULT_MAX_MATCHES} lines "
        f"({DEFAULT_MAX_CHARS:,} characters) and says how many more matched; stops after "
        f"{DEFAULT_TIME_LIMIT_SECONDS:g} seconds. Use it to find where something is defined or "
        "used before reading files; narrow with `path` and `glob` when results are cut."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regular expression to search for."},
            "path": {
                "type": "string",
                "description": "File or folder to search, relative to the project (default: all).",
            },
            "glob": {
                "type": "string",
                "description": "Only files matching this glob, e.g. `*.py` or `src/**/*.ts`.",
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
)


@dataclass(frozen=True, slots=True)
class SearchRequest:
    pattern: str
    project: Path
    base: Path
    glob: str | None
    kept_out: Path | None = None  # a folder whose matches are dropped (the home)


class GrepBackend(Protocol):
    name: str

    def check_pattern(self, pattern: str) -> str | None:
        """An error message when the pattern cannot be used, before anything runs."""
        ...

    def command(self, request: SearchRequest) -> list[str]:
        """The argv of a process printing ``path NUL line:text`` lines, run in the project."""
        ...

    def pattern_error(self, stderr: str) -> str | None:
        """An error message when the process rejected the pattern."""
        ...


class RipgrepBackend:
    name = "ripgrep"

    def __init__(self, executable: str) -> None:
        self.executable = executable

    def check_pattern(self, pattern: str) -> str | None:
        return None  # ripgrep's own syntax decides; its error comes back on stderr

    def command(self, request: SearchRequest) -> list[str]:
        skipped = [f"--glob=!{name}/" for name in sorted(ALWAYS_SKIPPED_DIRS)]
        skipped += _kept_out_glob(request)
        return [
            self.executable,
            "--no-config",
            "--line-number",
            "--no-heading",
            "--with-filename",
            "--null",
            "--color=never",
            "--no-require-git",
            "--hidden",
            f"--max-columns={MAX_COLUMNS}",
            "--max-columns-preview",
            "--sort=path",
            *skipped,
            f"--regexp={request.pattern}",
            "--",
            _search_target(request),
        ]

    def pattern_error(self, stderr: str) -> str | None:
        if "regex parse error" not in stderr and "error parsing" not in stderr:
            return None
        return shorten(stderr, 400, marker="...")


class PythonBackend:
    name = "python"

    def check_pattern(self, pattern: str) -> str | None:
        try:
            re.compile(pattern)
        except re.error as exc:
            return str(exc)
        return None

    def command(self, request: SearchRequest) -> list[str]:
        query = WorkerQuery(
            pattern=request.pattern,
            project=str(request.project),
            base=str(request.base),
            max_columns=MAX_COLUMNS,
            kept_out=str(request.kept_out) if request.kept_out else None,
        )
        package_parent = str(Path(__file__).resolve().parents[3])
        boot = (
            f"import sys; sys.path.insert(0, {package_parent!r}); "
            "from mini_claude.tools.grep_worker import main; sys.exit(main(sys.argv[1:]))"
        )
        return [sys.executable, "-c", boot, query.to_json()]

    def pattern_error(self, stderr: str) -> str | None:
        return None  # checked before the worker starts


def choose_backend(which: Callable[[str], str | None] = shutil.which) -> GrepBackend:
    """ripgrep when it is on PATH (fast, linear-time regexes), else the Python worker."""
    executable = which("rg")
    return RipgrepBackend(executable) if executable else PythonBackend()


IGNORE_FILE_NAMES = (".gitignore", ".ignore", ".rgignore")


def _special_ignore_file(request: SearchRequest) -> bool:
    """An ignore file that is not a regular file in the searched folder or above it, up to
    the project (deeper ones are left to the search's time limit)."""
    folder = request.base if request.base.is_dir() else request.base.parent
    folders = [folder, *folder.parents]
    if request.project in folders:
        folders = folders[: folders.index(request.project) + 1]
    candidates = [f / name for f in folders for name in IGNORE_FILE_NAMES]
    candidates.append(request.project / ".git" / "info" / "exclude")
    for path in candidates:
        try:
            mode = path.stat().st_mode
        except OSError:
            continue
        if special_kind(mode) is not None:
            return True
    return False


def _kept_out_glob(request: SearchRequest) -> list[str]:
    """ripgrep never enters the kept-out folder: a glob anchored where it runs (the project);
    results are filtered by it as well (see ``_glob_filter``), whatever ripgrep did."""
    kept_out = request.kept_out
    if kept_out is None or not kept_out.is_relative_to(request.project):
        return []
    relative = kept_out.relative_to(request.project).as_posix()
    return [f"--glob=!/{_glob_escaped(relative)}/"] if relative != "." else []


def _glob_escaped(text: str) -> str:
    return re.sub(r"([\\*?\[\]{}!])", r"\\\1", text)


def _search_target(request: SearchRequest) -> str:
    if request.base == request.project:
        return "."
    if request.base.is_relative_to(request.project):
        return str(request.base.relative_to(request.project))
    return str(request.base)


@dataclass
class _Collected:
    max_matches: int
    max_chars: int
    lines: list[str] = field(default_factory=list)
    chars: int = 0
    total: int = 0
    full: bool = False
    timed_out: bool = False

    def add(self, line: str) -> None:
        self.total += 1
        if self.full:
            return
        if len(self.lines) >= self.max_matches or self.chars + len(line) + 1 > self.max_chars:
            self.full = True
            return
        self.lines.append(line)
        self.chars += len(line) + 1


class GrepSearchTool:
    spec = SPEC
    read_only = True
    traits = ToolTraits("search", "path", "path", ("Grep",), plan_mode=True)

    def __init__(
        self,
        backend: GrepBackend | None = None,
        *,
        time_limit: float = DEFAULT_TIME_LIMIT_SECONDS,
        max_matches: int = DEFAULT_MAX_MATCHES,
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> None:
        self.backend = backend or choose_backend()
        self.time_limit = time_limit
        self.max_matches = max_matches
        self.max_chars = max_chars

    def permission(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        return Prepared(read_permission(self.spec.name, str(args.get("path") or "."), ctx))

    @reports_tool_errors
    async def run(
        self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared
    ) -> ToolOutput:
        return await self._search(args, ctx)

    async def _search(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        pattern = str(args.get("pattern", ""))
        if not pattern:
            raise ToolError("pattern must not be empty")
        problem = self.backend.check_pattern(pattern)
        if problem:
            raise ToolError(f"invalid regex {pattern!r}: {problem}")
        target = resolve(str(args.get("path") or "."), ctx)
        if not target.path.exists():
            raise ToolError(f"{target.shown} does not exist")
        refuse_special(target.path, target.shown)
        glob = str(args.get("glob") or "") or None
        request = SearchRequest(pattern, project_root(ctx), target.path, glob,
                                home_kept_out(target.path, ctx))
        withheld = withheld_by_rules(self.spec.name, ctx)
        collected, returncode, stderr = await self._collect(request, withheld)
        problems = shorten(stderr, 400, marker="...") if returncode == 2 and stderr.strip() else ""
        if problems and not collected.total:
            reason = self.backend.pattern_error(stderr)
            if reason:
                raise ToolError(f"invalid regex {pattern!r}: {reason}")
            raise ToolError(f"search failed: {problems}")
        return self._render(collected, pattern, target.shown, problems)

    async def matching_lines(
        self, request: SearchRequest
    ) -> tuple[list[str], int, bool, int | None, str]:
        """Raw ``path:line:text`` matches within the caps, how many matched in all, whether
        the deadline stopped the search, the exit code and stderr: for tools that search
        files they wrote themselves (search_history)."""
        collected, returncode, stderr = await self._collect(request)
        return collected.lines, collected.total, collected.timed_out, returncode, stderr

    def _backend_for(self, request: SearchRequest) -> GrepBackend:
        """ripgrep opens every ignore file it meets and would wait forever on a named pipe
        there; the Python worker checks each one first, so it takes such a search."""
        if isinstance(self.backend, RipgrepBackend) and _special_ignore_file(request):
            return PythonBackend()
        return self.backend

    async def _collect(
        self, request: SearchRequest, withheld: Callable[[str], bool] = lambda path: False
    ) -> tuple[_Collected, int | None, str]:
        collected = _Collected(self.max_matches, self.max_chars)
        errors = HeadTailBuffer(2_000)
        argv = self._backend_for(request).command(request)
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                cwd=request.project,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                limit=_MAX_LINE_BYTES,
            )
        except OSError as exc:
            raise ToolError(f"could not start {argv[0]}: {exc.strerror or exc}") from None
        assert process.stdout is not None and process.stderr is not None
        error_reader = asyncio.create_task(pump(process.stderr, errors))
        wanted = _glob_filter(request)
        try:
            async with asyncio.timeout(self.time_limit):
                while raw := await process.stdout.readline():
                    path, text = _split_line(raw)
                    if wanted(path) and not withheld(path):
                        collected.add(f"{path}:{text}")
                await process.wait()
                await error_reader
        except TimeoutError:
            collected.timed_out = True
        finally:
            if process.returncode is None:
                await terminate_group(process)
            error_reader.cancel()
        return collected, process.returncode, errors.text()

    def _render(
        self, collected: _Collected, pattern: str, shown: str, problems: str
    ) -> ToolOutput:
        notes: list[str] = []
        if collected.total > len(collected.lines):
            more = "+" if collected.timed_out else ""
            notes.append(
                f"showing {len(collected.lines):,} of {collected.total:,}{more} matching lines; "
                "narrow the pattern, path or glob to see the rest"
            )
        if collected.timed_out:
            notes.append(
                f"search stopped after {self.time_limit:g} s, results are incomplete: "
                "narrow the path or glob, or simplify the pattern"
            )
        if problems:
            notes.append(f"some files could not be searched: {problems}")
        if not collected.lines:
            head = f"No matches for {pattern!r} in {shown}"
            text = head + "".join(f" ({note})" for note in notes)
            return ToolOutput(text, is_error=collected.timed_out)
        return ToolOutput("\n".join(collected.lines) + "".join(f"\n({note})" for note in notes))


def _split_line(raw: bytes) -> tuple[str, str]:
    """``(path, "line:text")`` from one line of backend output."""
    line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
    path, _, text = line.partition("\0")
    return path.removeprefix("./"), text


def _glob_filter(request: SearchRequest) -> Callable[[str], bool]:
    """Whether a result path is wanted: outside the folder kept out of the search, and
    matching the glob (read relative to the searched folder)."""
    matches_glob = _glob_matcher(request)
    kept_out = request.kept_out
    if kept_out is None:
        return matches_glob
    return lambda path: (not (request.project / path).is_relative_to(kept_out)
                         and matches_glob(path))


def _glob_matcher(request: SearchRequest) -> Callable[[str], bool]:
    if not request.glob:
        return lambda path: True
    spec = GitIgnoreSpec.from_lines([request.glob])
    folder = request.base if request.base.is_dir() else request.base.parent

    def wanted(path: str) -> bool:
        full = request.project / path  # an absolute path stays absolute
        return full.is_relative_to(folder) and spec.match_file(full.relative_to(folder))

    return wanted
