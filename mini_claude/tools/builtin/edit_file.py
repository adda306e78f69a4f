"""edit_file: replace one exact, unique piece of a file, keeping everything else byte for byte.

The file is decoded with ``surrogateescape`` so that bytes which are not
UTF-8 survive the round trip untouched; only the replaced span changes.
"""

from __future__ import annotations

import asyncio
import hashlib
import stat
from dataclasses import dataclass
from typing import Any

from mini_claude.atomic_files import atomic_write
from mini_claude.permissions.asking import PermissionRequest
from mini_claude.project.ignore import looks_binary
from mini_claude.protocol import ToolOutput, ToolSpec
from mini_claude.tool_kinds import ToolTraits
from mini_claude.tools.base import NOTHING_TO_ASK, Prepared, ToolContext
from mini_claude.tools.common import (
    ToolError,
    change_counts,
    reports_tool_errors,
    unified_diff,
)
from mini_claude.tools.edit_steps import apply_steps, steps_from_arguments
from mini_claude.tools.file_stamps import file_stamp
from mini_claude.tools.paths import ResolvedPath, hard_links, writable
from mini_claude.tools.special_files import refuse_special

SPEC = ToolSpec(
    name="edit_file",
    description=(
        "Replace text in an existing file: `old` must appear exactly once (same whitespace and "
        "indentation as in the file) and is replaced by `new` (`replace_all`: every one). "
        "Include enough surrounding lines in `old` to make it unique. Several changes: `edits`, "
        "applied in order, all or none. Read the file first. Only files inside the project "
        "folder can be edited; use write_file to create a file."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File to edit, relative to the project."},
            "old": {"type": "string", "description": "The exact text to replace."},
            "new": {"type": "string", "description": "The text to put in its place."},
            "replace_all": {"type": "boolean", "description": "Replace every occurrence."},
            "edits": {
                "type": "array",
                "description": "Several {old, new, replace_all?}, in order, all or none.",
                "items": {
                    "type": "object",
                    "properties": {
                        "old": {"type": "string"},
                        "new": {"type": "string"},
                        "replace_all": {"type": "boolean"},
                    },
                    "required": ["old", "new"],
                },
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
)

_ENCODING = "utf-8"
_ERRORS = "surrogateescape"


@dataclass(frozen=True, slots=True)
class _Edit:
    target: ResolvedPath
    updated: str
    mode: int
    first_line: int
    diff: str
    source_digest: bytes = b""
    added: int = 0
    removed: int = 0
    replacements: int = 1
    links: int = 1  # the file's names: a link made while the edit waited changes the question

    def same_change(self, other: _Edit | None) -> bool:
        """The same result from the same file, reached the same way (links followed now):
        what the user approved is what happens."""
        return (
            other is not None
            and other.target.path == self.target.path
            and other.links == self.links
            and other.updated == self.updated
            and other.source_digest == self.source_digest
        )


def _plan(args: dict[str, Any], ctx: ToolContext) -> _Edit:
    target = writable(str(args.get("path", "")), ctx)
    steps = steps_from_arguments(args)
    path = target.path
    if not path.exists():
        raise ToolError(f"{target.shown} does not exist; use write_file to create it")
    if path.is_dir():
        raise ToolError(f"{target.shown} is a directory")
    refuse_special(path, target.shown)
    try:
        data = path.read_bytes()
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError as exc:
        raise ToolError(f"cannot read {target.shown}: {exc.strerror or exc}") from None
    if looks_binary(data):
        raise ToolError(f"{target.shown} is a binary file; edit_file only changes text")
    text = data.decode(_ENCODING, errors=_ERRORS)
    applied = apply_steps(text, steps, target.shown)
    updated, start = applied.text, applied.first_offset
    shown_old = data.decode(_ENCODING, errors="replace")
    shown_new = updated.encode(_ENCODING, errors=_ERRORS).decode(_ENCODING, errors="replace")
    diff = unified_diff(shown_old, shown_new, target.shown)
    added, removed = change_counts(shown_old, shown_new, diff)
    first_line = text.count("\n", 0, start) + 1
    digest = hashlib.sha256(data).digest()
    return _Edit(target, updated, mode, first_line, diff, digest, added, removed,
                 applied.replacements, hard_links(target.path))


class EditFileTool:
    spec = SPEC
    read_only = False
    traits = ToolTraits("edit", "path", "path", ("Edit", "MultiEdit"))

    def permission(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        """The edit worked out now is the one shown, and the only one run may make."""
        try:
            edit = _plan(args, ctx)
        except ToolError:
            return NOTHING_TO_ASK  # the edit cannot apply: run says why, never writes
        request = PermissionRequest(
            tool_name=self.spec.name,
            summary=f"edit {edit.target.shown}",
            subject=self.spec.name,
            detail=edit.diff,
        )
        return Prepared(request, edit)

    @reports_tool_errors
    async def run(self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared) -> ToolOutput:
        return await asyncio.to_thread(self._edit, args, ctx, prepared)

    def _edit(self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared) -> ToolOutput:
        approved = prepared.action if isinstance(prepared.action, _Edit) else None
        edit = _plan(args, ctx)
        if not edit.same_change(approved):
            raise ToolError(
                f"{edit.target.shown} changed while the edit waited for approval; nothing was "
                "written. Read it again and retry, so the change can be approved as it is now"
            )
        ctx.checkpoints.before_write(edit.target.path, edit.updated)
        try:
            atomic_write(edit.target.path, edit.updated.encode(_ENCODING, errors=_ERRORS),
                         edit.mode)
        except UnicodeEncodeError:
            raise ToolError("new text has characters that cannot be written as UTF-8") from None
        except OSError as exc:
            raise ToolError(f"cannot write {edit.target.shown}: {exc.strerror or exc}") from None
        stamp = file_stamp(edit.target.path)
        if stamp is not None:
            ctx.read_stamps[str(edit.target.path)] = stamp
        added, removed = edit.added, edit.removed
        where = f"at line {edit.first_line}"
        if edit.replacements > 1:
            where = f"({edit.replacements} replacements, the first at line {edit.first_line})"
        return ToolOutput(
            f"Edited {edit.target.shown} {where} (+{added} -{removed})",
            display=edit.diff,
            display_kind="diff",
        )
