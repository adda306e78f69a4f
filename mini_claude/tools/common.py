"""Small pieces every tool shares: the expected-failure exception and text helpers."""

from __future__ import annotations

import contextlib
import difflib
import os
import secrets
from pathlib import Path

from mini_claude.protocol import ToolOutput

MAX_DIFF_CHARS = 2_000_000  # difflib is slow on huge files; the UI could not show it anyway


class ToolError(Exception):
    """An expected failure whose message is written for the model to read and act on."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def error_output(message: str) -> ToolOutput:
    return ToolOutput(message, is_error=True)


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
        return f"--- {old_label}\n+++ b/{label}\n(diff not shown: the file is too large)\n"
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=old_label,
        tofile=f"b/{label}",
    )
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                   for line in lines)


def diff_counts(diff: str) -> tuple[int, int]:
    """Lines added and removed, as ``git diff --stat`` would count them."""
    body = diff.splitlines()[2:]  # past the ---/+++ header
    added = sum(1 for line in body if line.startswith("+"))
    removed = sum(1 for line in body if line.startswith("-"))
    return added, removed


def shorten(text: str, limit: int) -> str:
    """One line, at most ``limit`` characters, for quoting input back in an error."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` in one step: readers see the old file or the new one, never half.

    The temporary file lives beside the target (``os.replace`` cannot cross
    file systems) and is removed on any failure. ``mode`` keeps an existing
    file's permissions; a new file gets the usual ``0o666`` minus the umask.
    """
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
