"""list_files: what is in the project, minus what git ignores, capped."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pathspec import GitIgnoreSpec

from mini_claude.project.ignore import rules_for, walk_files
from mini_claude.protocol import ToolOutput, ToolSpec
from mini_claude.tool_kinds import ToolTraits
from mini_claude.tools.base import Prepared, ToolContext
from mini_claude.tools.common import ToolError, plural, reports_tool_errors
from mini_claude.tools.paths import (
    home_kept_out,
    project_root,
    read_permission,
    resolve,
    shown_path,
)
from mini_claude.tools.permission_gate import withheld_by_rules

DEFAULT_MAX_ENTRIES = 1_000
DEFAULT_TIME_LIMIT_SECONDS = 20.0

SPEC = ToolSpec(
    name="list_files",
    description=(
        "List files under a folder, recursively, one path per line relative to the project, "
        "sorted. Skips what .gitignore ignores and .git, node_modules, .venv, __pycache__. "
        "`pattern` filters with a glob in .gitignore style: `*.py` matches at any depth, "
        f"`src/**/*.ts` under src. Shows at most {DEFAULT_MAX_ENTRIES:,} entries and says how "
        "many more there were. Use it to get oriented in a project or to find files by name."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "Folder to list, relative to the project (default: the project).",
            },
            "pattern": {"type": "string", "description": "Glob to filter by, e.g. `**/*.py`."},
        },
        "additionalProperties": False,
    },
)


class ListFilesTool:
    spec = SPEC
    read_only = True
    traits = ToolTraits("search", "path", "path", ("Glob", "LS"), plan_mode=True)

    def __init__(
        self,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        time_limit: float = DEFAULT_TIME_LIMIT_SECONDS,
    ) -> None:
        self.max_entries = max_entries
        self.time_limit = time_limit

    def permission(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        return Prepared(read_permission(self.spec.name, str(args.get("path") or "."), ctx))

    @reports_tool_errors
    async def run(
        self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared
    ) -> ToolOutput:
        return await asyncio.to_thread(self._list, args, ctx)

    def _list(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        target = resolve(str(args.get("path") or "."), ctx)
        if not target.path.exists():
            raise ToolError(f"{target.shown} does not exist")
        if not target.path.is_dir():
            raise ToolError(f"{target.shown} is a file, not a folder; use read_file to read it")
        pattern = str(args.get("pattern") or "")
        wanted = GitIgnoreSpec.from_lines([pattern]) if pattern else None
        root = project_root(ctx)
        deadline = time.monotonic() + self.time_limit
        entries: list[str] = []
        total = 0
        timed_out = False

        def out_of_time() -> bool:
            nonlocal timed_out
            timed_out = time.monotonic() > deadline
            return timed_out

        home = home_kept_out(target.path, ctx)
        withheld = withheld_by_rules(self.spec.name, ctx)
        for path in walk_files(target.path, rules_for(target.path, root), out_of_time, home):
            if wanted is not None and not wanted.match_file(path.relative_to(target.path)):
                continue
            if withheld(str(path)):
                continue
            total += 1
            if len(entries) < self.max_entries:
                entries.append(shown_path(path, root))
        return ToolOutput(self._render(entries, total, timed_out, target.shown, pattern))

    def _render(
        self, entries: list[str], total: int, timed_out: bool, shown: str, pattern: str
    ) -> str:
        notes: list[str] = []
        if timed_out:
            notes.append(f"listing stopped after {self.time_limit:g} s; it is incomplete")
        if not entries:
            what = f"matching {pattern!r} " if pattern else ""
            return f"No files {what}in {shown}" + "".join(f" ({note})" for note in notes)
        if total > len(entries):
            notes.append(
                f"showing {len(entries):,} of {total:,} files; "
                "narrow the path or pattern to see the rest"
            )
        if not notes:
            notes.append(plural(total, "file"))
        return "\n".join(entries) + "".join(f"\n({note})" for note in notes)
