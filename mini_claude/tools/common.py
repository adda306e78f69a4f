"""Small pieces every tool shares: the expected-failure exception and text helpers."""

from __future__ import annotations

import difflib
import functools
from collections import Counter
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from mini_claude.protocol import ToolOutput

MAX_DIFF_CHARS = 2_000_000  # difflib is slow on huge files; the UI could not show it anyway
TOO_LARGE_NOTE = "(diff not shown: the file is too large)\n"


class ToolError(Exception):
    """An expected failure whose message is written for the model to read and act on."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def error_output(message: str) -> ToolOutput:
    return ToolOutput(message, is_error=True)


_Tool = TypeVar("_Tool")
_Args = TypeVar("_Args")
_Context = TypeVar("_Context")
_Prepared = TypeVar("_Prepared")
ToolRun = Callable[[_Tool, _Args, _Context, _Prepared], Coroutine[Any, Any, ToolOutput]]


def reports_tool_errors(
    run: ToolRun[_Tool, _Args, _Context, _Prepared],
) -> ToolRun[_Tool, _Args, _Context, _Prepared]:
    """A tool's ``run`` whose expected failures (ToolError) come back as error results,
    worded for the model; anything else is left to the registry."""

    @functools.wraps(run)
    async def run_reporting(
        tool: _Tool, args: _Args, ctx: _Context, prepared: _Prepared
    ) -> ToolOutput:
        try:
            return await run(tool, args, ctx, prepared)
        except ToolError as exc:
            return error_output(exc.message)

    return run_reporting


def plural(count: int, noun: str) -> str:
    """``1 line``, ``2,000 lines``: counts the model reads without squinting."""
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def line_count(text: str) -> int:
    """Lines as an editor counts them: a last line without a newline still counts."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def unified_diff(old: str, new: str, label: str, *, created: bool = False) -> str:
    """A unified diff of a whole-file change, labelled the way ``git diff`` does."""
    old_label = "/dev/null" if created else f"a/{label}"
    if len(old) + len(new) > MAX_DIFF_CHARS:
        return f"--- {old_label}\n+++ b/{label}\n{TOO_LARGE_NOTE}"
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=old_label,
        tofile=f"b/{label}",
    )
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                   for line in lines)


def change_counts(old: str, new: str, diff: str) -> tuple[int, int]:
    """Lines added and removed; for a file too large to diff, counted without order."""
    if not diff.endswith(TOO_LARGE_NOTE):
        return diff_counts(diff)
    old_lines = Counter(old.splitlines())
    new_lines = Counter(new.splitlines())
    return sum((new_lines - old_lines).values()), sum((old_lines - new_lines).values())


def diff_counts(diff: str) -> tuple[int, int]:
    """Lines added and removed, as ``git diff --stat`` would count them."""
    body = diff.splitlines()[2:]  # past the ---/+++ header
    added = sum(1 for line in body if line.startswith("+"))
    removed = sum(1 for line in body if line.startswith("-"))
    return added, removed
