"""read_file: numbered lines of a text file, a page at a time, without loading the whole file."""

from __future__ import annotations

import asyncio
import codecs
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from mini_claude.project.ignore import BINARY_SNIFF_BYTES, looks_binary
from mini_claude.protocol import ToolOutput, ToolSpec
from mini_claude.settings import Settings
from mini_claude.tool_kinds import ToolTraits
from mini_claude.tools.base import Prepared, ToolContext
from mini_claude.tools.common import ToolError, reports_tool_errors
from mini_claude.tools.file_stamps import file_stamp
from mini_claude.tools.images import describe, is_image_path, load_image
from mini_claude.tools.paths import read_permission, resolve
from mini_claude.tools.special_files import open_regular, refuse_special

DEFAULT_LINE_LIMIT = 2_000
MAX_LINE_CHARS = 2_000
_CHUNK_BYTES = 1 << 20
# Enough bytes for MAX_LINE_CHARS characters of any UTF-8 text, plus a line ending.
_MAX_LINE_BYTES = MAX_LINE_CHARS * 4 + 2
LINE_PREFIX_BYTES = 8  # the line number, the tab and the newline
NOTES_BYTES = 512  # room for the notes after a page
MIN_PAGE_BYTES = 1_024

SPEC = ToolSpec(
    name="read_file",
    description=(
        "Read a text file. Returns its lines numbered like `cat -n` (number, tab, text). "
        f"Shows at most {DEFAULT_LINE_LIMIT:,} lines per call starting at `offset` (1-based); "
        "the output ends with how to ask for the next page when there is more (a page asked for "
        "with offset/limit also ends early rather than grow too large). Lines longer "
        f"than {MAX_LINE_CHARS:,} characters are cut. Paths are relative to the project folder. "
        "Use this to look at a file before editing it; use grep_search to find where something "
        "is first when you do not know the file. An image (png, jpg, gif, webp) is shown to "
        "you as an image."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File to read, relative to the project."},
            "offset": {
                "type": "integer",
                "description": "First line to show, 1-based (default 1).",
            },
            "limit": {
                "type": "integer",
                "description": f"How many lines to show (default {DEFAULT_LINE_LIMIT:,}).",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
)


@dataclass
class _Page:
    lines: list[str] = field(default_factory=list)
    total_lines: int = 0
    cut_lines: int = 0
    invalid_utf8: bool = False


class ReadFileTool:
    spec = SPEC
    read_only = True
    traits = ToolTraits("read", "path", "path", ("Read",), plan_mode=True, pages_itself=True)

    def permission(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        return Prepared(read_permission(self.spec.name, str(args.get("path", "")), ctx))

    @reports_tool_errors
    async def run(
        self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared
    ) -> ToolOutput:
        return await asyncio.to_thread(self._read, args, ctx)

    def _read(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        raw_path = str(args.get("path", ""))
        offset = int(args.get("offset", 1))
        limit = int(args.get("limit", DEFAULT_LINE_LIMIT))
        if offset < 1 or limit < 1:
            raise ToolError("offset and limit must be 1 or more (offset is 1-based)")
        target = resolve(raw_path, ctx)
        path = target.path
        if not path.exists():
            raise ToolError(f"{target.shown} does not exist")
        if path.is_dir():
            raise ToolError(f"{target.shown} is a directory; use list_files to see what is in it")
        refuse_special(path, target.shown)
        if is_image_path(path):
            image = load_image(path, target.shown, ctx.settings)
            return ToolOutput(describe(image), images=(image,))
        stamp = file_stamp(path)
        try:
            max_bytes = page_bytes(ctx.settings) if bounds_itself(ctx.settings, args) else None
            page = _read_page(path, offset, limit, target.shown, max_bytes)
        except PermissionError:
            raise ToolError(f"{target.shown} cannot be read: permission denied") from None
        if stamp is not None:
            ctx.read_stamps[str(path)] = stamp  # write_file refuses if it changes after this
        return ToolOutput(_render(page, offset, target.shown))


def page_bytes(settings: Settings) -> int:
    """The most one call may show, in bytes of the file.

    A share of the effective window, so one read never crowds out the rest on a small
    window, and below tier 0's cut, which would otherwise take the middle of the page.
    Tier 0 never saves such a read to a file (the file is its own copy on disk), so a
    longer file is read on with ``offset`` instead of through a preview of a saved copy.
    With the share at 0 an asked-for page stays below the size tier 0 would save.
    """
    if settings.reads_page_themselves:
        limit, share = settings.truncate_chars, settings.read_page_window_share
    else:
        limit, share = settings.persist_threshold_bytes, settings.budget_low_window_share
    window_bytes = int(settings.effective_window * share * settings.chars_per_token)
    return max(MIN_PAGE_BYTES, min(limit - NOTES_BYTES, window_bytes))


def bounds_itself(settings: Settings, args: dict[str, Any]) -> bool:
    """Whether this read stops at a page; with no page share a whole-file read is left
    to tier 0 like any other output."""
    return settings.reads_page_themselves or "offset" in args or "limit" in args


def _read_page(
    path: Path, offset: int, limit: int, shown: str, max_bytes: int | None = None
) -> _Page:
    page = _Page()
    used = 0
    with open_regular(path, shown) as handle:
        if looks_binary(handle.read(BINARY_SNIFF_BYTES)):
            raise ToolError(f"{shown} is a binary file; read_file only shows text")
        handle.seek(0)
        last = offset + limit - 1
        number = 0
        for number, (raw, complete) in enumerate(_capped_lines(handle), start=1):
            if number > last:
                page.total_lines = number + _count_remaining_lines(handle)
                return page
            if number >= offset:
                text, invalid = _decode(raw, complete)
                was_cut = not complete or len(text) > MAX_LINE_CHARS
                if was_cut:
                    text = text[:MAX_LINE_CHARS] + f" [line cut at {MAX_LINE_CHARS:,} chars]"
                size = len(text.encode("utf-8", errors="replace")) + LINE_PREFIX_BYTES
                if max_bytes is not None and page.lines and used + size > max_bytes:
                    page.total_lines = number + _count_remaining_lines(handle)
                    return page  # a full page: the notes say where the next one starts
                used += size
                page.cut_lines += was_cut
                page.invalid_utf8 |= invalid
                page.lines.append(text)
        page.total_lines = number
    return page


def _capped_lines(handle: BinaryIO) -> Iterator[tuple[bytes, bool]]:
    """Yield ``(bytes, complete)`` per line, never holding more than one capped line.

    A line longer than the cap is yielded cut (``complete`` False) and the
    rest of it is skipped in chunks, so a one-line minified file stays cheap.
    """
    while True:
        raw = handle.readline(_MAX_LINE_BYTES)
        if not raw:
            return
        if raw.endswith(b"\n") or len(raw) < _MAX_LINE_BYTES:
            yield _strip_line_ending(raw), True
            continue
        _skip_rest_of_line(handle)
        yield raw, False


def _strip_line_ending(raw: bytes) -> bytes:
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    return raw[:-1] if raw.endswith(b"\r") else raw


def _skip_rest_of_line(handle: BinaryIO) -> None:
    while True:
        chunk = handle.readline(_CHUNK_BYTES)
        if not chunk or chunk.endswith(b"\n"):
            return


def _count_remaining_lines(handle: BinaryIO) -> int:
    """Lines after the one just read, counted in chunks without decoding."""
    remaining = 0
    last_byte = b"\n"
    while chunk := handle.read(_CHUNK_BYTES):
        remaining += chunk.count(b"\n")
        last_byte = chunk[-1:]
    if last_byte != b"\n":
        remaining += 1
    return remaining


def _decode(raw: bytes, complete: bool) -> tuple[str, bool]:
    """Decode one line; a cut line may end inside a character, which is not an error."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    try:
        return decoder.decode(raw, final=complete), False
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="replace"), True


def _render(page: _Page, offset: int, shown: str) -> str:
    if page.total_lines == 0:
        return f"({shown} is empty)"
    if not page.lines:
        raise ToolError(
            f"offset {offset:,} is past the end of {shown}, which has {page.total_lines:,} lines"
        )
    first = offset
    last = offset + len(page.lines) - 1
    body = "\n".join(f"{number:>6}\t{text}" for number, text in enumerate(page.lines, start=first))
    notes: list[str] = []
    if first > 1 or last < page.total_lines:
        more = f"; call again with offset={last + 1}" if last < page.total_lines else ""
        notes.append(f"showing lines {first:,}-{last:,} of {page.total_lines:,}{more}")
    if page.cut_lines:
        notes.append(f"{page.cut_lines:,} long lines were cut at {MAX_LINE_CHARS:,} chars")
    if page.invalid_utf8:
        notes.append("the file is not valid UTF-8; undecodable bytes are shown as U+FFFD")
    return body + "".join(f"\n({note})" for note in notes)
