"""The text side of edit_file: one or several replacements applied in order, all or none.

Kept apart from the file handling so the rules (exact match, unique unless
``replace_all``, CRLF files, which edit failed) are one pure function of the
text and the edits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mini_claude.tools.common import ToolError

MAX_EDITS = 100


@dataclass(frozen=True, slots=True)
class EditStep:
    old: str
    new: str
    replace_all: bool = False


@dataclass(frozen=True, slots=True)
class AppliedEdits:
    text: str
    first_offset: int  # where the first change landed in the original text
    replacements: int


def steps_from_arguments(args: Mapping[str, Any]) -> list[EditStep]:
    """``old``/``new`` (with ``replace_all``), or ``edits``: a list of such objects."""
    edits = args.get("edits")
    single = "old" in args or "new" in args
    if edits is not None and single:
        raise ToolError("give either old/new or edits, not both")
    if edits is None:
        if "old" not in args or "new" not in args:
            raise ToolError("give old and new (or edits: a list of {old, new})")
        return [_step(args, None)]
    if not isinstance(edits, list) or not edits:
        raise ToolError("edits must be a non-empty list of {old, new, replace_all?} objects")
    if len(edits) > MAX_EDITS:
        raise ToolError(f"at most {MAX_EDITS} edits per call")
    return [_step(edit, number) for number, edit in enumerate(edits, start=1)]


def _step(raw: Any, number: int | None) -> EditStep:
    where = f"edit {number}: " if number is not None else ""
    if not isinstance(raw, Mapping):
        raise ToolError(f"{where}each edit must be an object with old and new")
    old, new = raw.get("old"), raw.get("new")
    if not isinstance(old, str) or not isinstance(new, str):
        raise ToolError(f"{where}old and new must both be strings")
    replace_all = raw.get("replace_all", False)
    if not isinstance(replace_all, bool):
        raise ToolError(f"{where}replace_all must be true or false")
    return EditStep(old, new, replace_all)


def apply_steps(text: str, steps: Sequence[EditStep], shown: str) -> AppliedEdits:
    """Apply every step to the text as the previous ones left it; any failure raises,
    naming the step, and nothing is applied."""
    first = len(text)
    count = 0
    for number, step in enumerate(steps, start=1):
        label = f"edit {number} of {len(steps)}: " if len(steps) > 1 else ""
        try:
            text, offset, replaced = _apply_one(text, step, shown)
        except ToolError as exc:
            if not label:
                raise
            raise ToolError(
                f"{label}{exc.message}. Nothing was changed: the edits apply all or none"
            ) from None
        first = min(first, offset)
        count += replaced
    return AppliedEdits(text, first, count)


def _apply_one(text: str, step: EditStep, shown: str) -> tuple[str, int, int]:
    if not step.old:
        raise ToolError("old must not be empty; to create or replace a whole file use write_file")
    if step.old == step.new:
        raise ToolError("old and new are the same; there is nothing to change")
    old, new = _match_line_endings(text, step.old, step.new)
    found = text.count(old)
    if found == 0:
        raise ToolError(
            f"old text not found in {shown}; it must match the file exactly, including "
            "whitespace and indentation (read the file again and copy the text)"
        )
    if found > 1 and not step.replace_all:
        raise ToolError(
            f"old text found {found} times in {shown}; include more context to make it "
            "unique, or set replace_all to change every one"
        )
    start = text.index(old)
    if step.replace_all:
        return text.replace(old, new), start, found
    return text[:start] + new + text[start + len(old):], start, 1


def _match_line_endings(text: str, old: str, new: str) -> tuple[str, str]:
    """Models write ``\\n``; a CRLF file needs ``\\r\\n`` for the text to match and stay CRLF."""
    if "\r\n" in text and "\n" in old and "\r\n" not in old and old not in text:
        return old.replace("\n", "\r\n"), new.replace("\r\n", "\n").replace("\n", "\r\n")
    return old, new
