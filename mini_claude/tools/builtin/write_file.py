"""write_file: create or replace a whole file inside the project, atomically."""

from __future__ import annotations

import asyncio
import hashlib
import stat
from dataclasses import dataclass
from typing import Any

from mini_claude.atomic_files import atomic_write
from mini_claude.permissions.asking import PermissionRequest
from mini_claude.protocol import ToolOutput, ToolSpec
from mini_claude.tool_kinds import ToolTraits
from mini_claude.tools.base import NOTHING_TO_ASK, Prepared, ToolContext
from mini_claude.tools.common import (
    ToolError,
    change_counts,
    line_count,
    plural,
    reports_tool_errors,
    unified_diff,
)
from mini_claude.tools.file_stamps import file_stamp
from mini_claude.tools.paths import ResolvedPath, hard_links, writable
from mini_claude.tools.special_files import refuse_file_parent, refuse_special

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
    old_digest: bytes = b""
    added: int = 0
    removed: int = 0
    links: int = 0  # the file's names: a link made while the write waited changes the question

    def same_change(self, other: _Plan | None) -> bool:
        """The same bytes over the same old file, reached the same way (links followed now):
        what the user approved is what happens."""
        return (
            other is not None
            and other.target.path == self.target.path
            and other.links == self.links
            and other.data == self.data
            and other.created == self.created
            and other.old_digest == self.old_digest
        )


def _plan(args: dict[str, Any], ctx: ToolContext) -> _Plan:
    target = writable(str(args.get("path", "")), ctx)
    content = str(args.get("content", ""))
    path = target.path
    if path.is_dir():
        raise ToolError(f"{target.shown} is a directory")
    refuse_special(path, target.shown)
    refuse_file_parent(path, ctx.root, target.shown)
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
    seen = ctx.read_stamps.get(str(path))
    if not created and seen is not None and file_stamp(path) != seen:
        raise ToolError(
            f"{target.shown} has changed on disk since you last read or wrote it (the user or "
            "another program edited it); read it again before writing, so that change is not "
            "lost"
        )
    old_text = old.decode("utf-8", errors="replace")
    diff = unified_diff(old_text, content, target.shown, created=created)
    added, removed = change_counts(old_text, content, diff)
    digest = hashlib.sha256(old).digest()
    return _Plan(target, data, created, mode, diff, digest, added, removed,
                 hard_links(path))


class WriteFileTool:
    spec = SPEC
    read_only = False
    traits = ToolTraits("edit", "path", "path", ("Write",))

    def permission(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        """The write worked out now is the one shown, and the only one run may make."""
        try:
            plan = _plan(args, ctx)
        except ToolError:
            return NOTHING_TO_ASK  # refused or unreadable: run explains, never writes
        verb = "create" if plan.created else "overwrite"
        request = PermissionRequest(
            tool_name=self.spec.name,
            summary=f"{verb} {plan.target.shown}",
            subject=self.spec.name,
            detail=plan.diff,
        )
        return Prepared(request, plan)

    @reports_tool_errors
    async def run(self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared) -> ToolOutput:
        return await asyncio.to_thread(self._write, args, ctx, prepared)

    def _write(self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared) -> ToolOutput:
        approved = prepared.action if isinstance(prepared.action, _Plan) else None
        plan = _plan(args, ctx)
        if not plan.same_change(approved):
            raise ToolError(
                f"{plan.target.shown} changed while the write waited for approval; nothing was "
                "written. Read it again and retry, so the change can be approved as it is now"
            )
        path = plan.target.path
        ctx.checkpoints.before_write(path, plan.data)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, plan.data, plan.mode)
        except OSError as exc:
            raise ToolError(f"cannot write {plan.target.shown}: {exc.strerror or exc}") from None
        stamp = file_stamp(path)
        if stamp is not None:
            ctx.read_stamps[str(path)] = stamp
        lines = plural(line_count(str(args.get("content", ""))), "line")
        if plan.created:
            summary = f"Created {plan.target.shown} ({lines})"
        else:
            added, removed = plan.added, plan.removed
            summary = f"Wrote {plan.target.shown} ({lines}; +{added} -{removed})"
        return ToolOutput(summary, display=plan.diff, display_kind="diff")
