"""write_file: create or replace a whole file inside the project, atomically."""

from __future__ import annotations

import asyncio
import stat
from dataclasses import dataclass
from typing import Any

from mini_claude.protocol import ToolOutput, ToolSpec
from mini_claude.tools.base import PermissionRequest, ToolContext
from mini_claude.tools.common import (
    ToolError,
    atomic_write,
    diff_counts,
    error_output,
    line_count,
    plural,
    unified_diff,
)
from mini_claude.tools.paths import ResolvedPath, writable

SPEC = ToolSpec(
    name="write_file",
    description=(
        "Create a file, or replace all of an existing one, with `content` (UTF-8). Creates "
        "missing parent folders. Only paths inside the project folder can be written. Returns "
        "what changed in lines. To change part of an existing file, prefer edit_file."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File to write, relative to the project."},
            "content": {"type": "string", "description": "The complete new content."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
)


@dataclass(frozen=True, slots=True)
class _Plan:
    target: ResolvedPath
    data: bytes
    created: bool
    mode: int | None
    diff: str


def _plan(args: dict[str, Any], ctx: ToolContext) -> _Plan:
    target = writable(str(args.get("path", "")), ctx)
    content = str(args.get("content", ""))
    path = target.path
    if path.is_dir():
        raise ToolError(f"{target.shown} is a directory")
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError("content has characters that cannot be written as UTF-8") from None
    created = not path.exists()
    try:
        old = b"" if created else path.read_bytes()
        mode = None if created else stat.S_IMODE(path.stat().st_mode)
    except OSError as exc:
        raise ToolError(f"cannot read {target.shown}: {exc.strerror or exc}") from None
    diff = unified_diff(old.decode("utf-8", errors="replace"), content, target.shown,
                        created=created)
    return _Plan(target, data, created, mode, diff)


class WriteFileTool:
    spec = SPEC
    read_only = False

    def permission(self, args: dict[str, Any], ctx: ToolContext) -> PermissionRequest | None:
        try:
            plan = _plan(args, ctx)
        except ToolError:
            return None  # refused or unreadable: the run explains, nothing to approve
        verb = "create" if plan.created else "overwrite"
        return PermissionRequest(
            tool_name=self.spec.name,
            summary=f"{verb} {plan.target.shown}",
            subject=self.spec.name,
            detail=plan.diff,
        )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        try:
            return await asyncio.to_thread(self._write, args, ctx)
        except ToolError as exc:
            return error_output(exc.message)

    def _write(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        plan = _plan(args, ctx)
        path = plan.target.path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, plan.data, plan.mode)
        except OSError as exc:
            raise ToolError(f"cannot write {plan.target.shown}: {exc.strerror or exc}") from None
        lines = plural(line_count(str(args.get("content", ""))), "line")
        if plan.created:
            summary = f"Created {plan.target.shown} ({lines})"
        else:
            added, removed = diff_counts(plan.diff)
            summary = f"Wrote {plan.target.shown} ({lines}; +{added} -{removed})"
        return ToolOutput(summary, display=plan.diff, display_kind="diff")
