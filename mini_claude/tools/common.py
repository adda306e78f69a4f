"""Small pieces every tool shares: the expected-failure exception and text helpers."""

from __future__ import annotations

import contextlib
import difflib
import functools
import glob
import os
import re
import secrets
import stat
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from mini_claude.protocol import ToolOutput

MAX_DIFF_CHARS = 2_000_000  # difflib is slow on huge files; the UI could not show it anyway
TOO_LARGE_NOTE = "(diff not shown: the file is too large)\n"
STALE_TEMPORARY_SECONDS = 60.0


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


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` in one step: readers see the old file or the new one, never half.

    The temporary file lives beside the target (``os.replace`` cannot cross
    file systems) and is removed on any failure. ``mode`` keeps an existing
    file's permissions; a new file gets the usual ``0o666`` minus the umask.
    """
    try:
        info: os.stat_result | None = os.stat(path)
    except OSError:
        info = None
    if info is not None and info.st_nlink > 1 and stat.S_ISREG(info.st_mode):
        _write_in_place(path, data)  # a new inode would split the file from its other links
        return
    _remove_stale_temporaries(path)
    if _write_unnamed(path, data, mode):
        return
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _write_in_place(path: Path, data: bytes) -> None:
    """Overwrite the file's own inode, so every hard link sees the new content."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _write_unnamed(path: Path, data: bytes, mode: int | None) -> bool:
    """Write into a file with no name (``O_TMPFILE``) and name it only once complete.

    A kill mid-write then leaves nothing behind in the project. False when the
    system or file system cannot, and the caller uses a named temporary instead.
    """
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag:
        return False
    try:
        fd = os.open(path.parent, flag | os.O_WRONLY | os.O_CLOEXEC, 0o666)
    except OSError:
        return False
    try:
        _write_all(fd, data)
        if mode is not None:
            os.fchmod(fd, mode)
        os.fsync(fd)
        temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            os.link(f"/proc/self/fd/{fd}", temporary)
        except OSError:
            return False
        try:
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    finally:
        os.close(fd)
    return True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _remove_stale_temporaries(path: Path) -> None:
    """Temporaries of this file left by a process killed mid-write (older than a minute)."""
    pattern = re.compile(rf"\.{re.escape(path.name)}\.[0-9a-f]{{12}}\.tmp")
    try:
        candidates = list(path.parent.glob(f".{glob.escape(path.name)}.*.tmp"))
    except OSError:
        return
    now = time.time()
    for candidate in candidates:
        if not pattern.fullmatch(candidate.name):
            continue
        with contextlib.suppress(OSError):
            if now - candidate.lstat().st_mtime > STALE_TEMPORARY_SECONDS:
                candidate.unlink()
