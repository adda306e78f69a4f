"""search_history: grep the session's own past, including what compaction summarized away.

The transcript keeps every message as it happened and the result store keeps
every large or cleared tool output; a summary keeps only what its model chose.
This tool decodes the transcript record by record into plain lines labelled
with where each came from (message number, tool call, tool name, saved file),
adds the saved results the transcript does not already hold, and runs
grep_search's backend over that view: ripgrep (linear time) when present, else
a worker process that the deadline stops, a catastrophic regex included.

Damaged records (a torn last line after a crash) are skipped and counted.
The transcript already has the API keys masked; the view masks them again, in
saved results too, before anything is matched, so no query can probe for one.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mini_claude.protocol import ToolOutput, ToolSpec
from mini_claude.secrets import api_keys, mask, secret_values
from mini_claude.text import shorten
from mini_claude.tool_kinds import ToolTraits
from mini_claude.tools.base import NeverAsks, Prepared, ToolContext
from mini_claude.tools.builtin.grep_search import GrepBackend, GrepSearchTool, SearchRequest
from mini_claude.tools.common import ToolError, plural, reports_tool_errors
from mini_claude.transcript_check import read_record

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
MAX_CHARS = 20_000
# Long lines are searched and shown in overlapping pieces, so a match deep inside a
# long line is still seen whole (grep_search cuts lines at 500 characters).
PIECE_CHARS = 400
PIECE_OVERLAP = 100
MAX_SAVED_FILE_BYTES = 20 * 1024 * 1024
LITERAL_SPECIALS = frozenset("\\.^$|?*+()[]{}")
VIEW_NAME = "history.txt"

SPEC = ToolSpec(
    name="search_history",
    description=(
        "Search this session's full history (the transcript, including what compaction "
        "summarized away, and the saved tool results) for lines matching `query`, a "
        "case-insensitive regex (or plain text with `literal`). Each match says where it came "
        f"from. At most `limit` lines (default {DEFAULT_LIMIT}, up to {MAX_LIMIT})."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Regex, or text with `literal`."},
            "literal": {"type": "boolean", "description": "Match as plain text."},
            "limit": {"type": "integer", "description": "Most lines to show."},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
)


# ---- the view: every searchable line with where it came from -------------------------


@dataclass
class HistoryView:
    secrets: list[str]
    lines: list[str] = field(default_factory=list)
    places: list[tuple[int, int]] = field(default_factory=list)  # (origin, line in it)
    origins: list[str] = field(default_factory=list)
    messages: int = 0
    compactions: int = 0
    saved_files: int = 0
    damaged: list[int] = field(default_factory=list)  # transcript line numbers
    transcript_lines: int = 0

    def add(self, origin: str, text: str) -> None:
        index = len(self.origins)
        self.origins.append(origin)
        for number, line in enumerate(self.masked(text).splitlines(), start=1):
            for piece in _pieces(line.replace("\x00", "\\0")):
                self.lines.append(piece)
                self.places.append((index, number))

    def masked(self, text: str) -> str:
        return mask(text, self.secrets)


def _pieces(line: str) -> Iterable[str]:
    if len(line) <= PIECE_CHARS:
        yield line
        return
    step = PIECE_CHARS - PIECE_OVERLAP
    for start in range(0, len(line) - PIECE_OVERLAP, step):
        yield line[start : start + PIECE_CHARS]


def build_view(transcript: Path | None, results: Path | None, secrets: list[str]) -> HistoryView:
    """The transcript decoded record by record, then the saved results it does not hold."""
    view = HistoryView(list(secret_values(secrets)))
    decoded: set[str] = set()  # tool_use ids whose whole result the transcript holds
    saved: dict[str, tuple[str, str, str]] = {}  # saved path -> (tool_use id, tool, target)
    if transcript is not None and transcript.is_file():
        records = _records(transcript, view)
        for _, record in records:
            _note_saved_paths(record, saved)
        for number, record in records:
            try:
                _add_record(view, record, saved, decoded)
            except (KeyError, TypeError, AttributeError, ValueError):
                view.damaged.append(number)
    if results is not None and results.is_dir():
        _add_saved_files(view, results, saved, decoded)
    return view


def _records(path: Path, view: HistoryView) -> list[tuple[int, dict[str, Any]]]:
    records: list[tuple[int, dict[str, Any]]] = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            view.transcript_lines = number
            if not line.strip():
                continue
            record = read_record(line)
            if record is None:
                view.damaged.append(number)
                continue
            if isinstance(record, dict):
                records.append((number, record))
            else:
                view.damaged.append(number)
    return records


def _note_saved_paths(record: dict[str, Any], saved: dict[str, tuple[str, str, str]]) -> None:
    """Edit records say where a cleared or cut result went on disk."""
    block = record.get("block") if record.get("type") == "edit" else None
    if isinstance(block, dict) and isinstance(block.get("saved_path"), str):
        saved[block["saved_path"]] = (
            str(block.get("tool_use_id", "")),
            str(block.get("tool_name", "")),
            str(block.get("target", "")),
        )


def _add_record(
    view: HistoryView,
    record: dict[str, Any],
    saved: dict[str, tuple[str, str, str]],
    decoded: set[str],
) -> None:
    kind = record.get("type")
    if kind == "compaction":
        view.compactions += 1
        reason = record.get("reason", "")
        view.add(f"transcript compaction {view.compactions} summary ({reason})",
                 str(record["summary"]))
    elif kind == "message":
        message = record["message"]
        blocks = message["blocks"]
        view.messages += 1
        for block in blocks:
            _add_block(view, view.messages, str(message["role"]), block, saved, decoded)


def _add_block(
    view: HistoryView,
    number: int,
    role: str,
    block: dict[str, Any],
    saved: dict[str, tuple[str, str, str]],
    decoded: set[str],
) -> None:
    kind = block["kind"]
    where = f"transcript message {number}"
    if kind == "text":
        view.add(f"{where} ({role})", str(block["text"]))
    elif kind == "tool_use":
        arguments = block.get("input") or {}
        text = "\n".join(
            f"{key}: {value if isinstance(value, str) else json.dumps(value)}"
            for key, value in dict(arguments).items()
        )
        view.add(f"{where}, {block['name']} call {block['id']}", text)
    elif kind == "tool_result":
        use_id = str(block["tool_use_id"])
        name = block.get("tool_name") or "tool"
        target = shorten(str(block.get("target") or ""), 120)
        about = f' for "{target}"' if target else ""
        copies = [path for path, (owner, _, _) in saved.items() if owner == use_id]
        also = f"; full text also saved at {copies[0]}" if copies else ""
        view.add(f"{where}, {name} result{about} (call {use_id}{also})", str(block["content"]))
        decoded.add(use_id)
    elif kind == "summary":
        view.add(f"{where} (summary)", str(block["summary"]))


def _add_saved_files(
    view: HistoryView, folder: Path, saved: dict[str, tuple[str, str, str]], decoded: set[str]
) -> None:
    """Saved results whose text the transcript does not already hold in full."""
    try:
        paths = sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink())
    except OSError:
        return
    for path in paths:
        owner, tool, target = saved.get(str(path), ("", "", ""))
        if owner and owner in decoded:
            continue  # the transcript's original result is the same text, already searched
        try:
            if path.stat().st_size > MAX_SAVED_FILE_BYTES:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        about = f" ({tool} {shorten(target, 120)})" if tool else ""
        view.add(f"saved result {path}{about}", text)
        view.saved_files += 1


# ---- the tool ----------------------------------------------------------------------


class SearchHistoryTool(NeverAsks):
    spec = SPEC
    # Never asks: the session's own records, under the mini-claude home.
    traits = ToolTraits(plan_mode=True, from_history=True)

    def __init__(self, backend: GrepBackend | None = None) -> None:
        self._grep = GrepSearchTool(backend)

    @reports_tool_errors
    async def run(
        self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared
    ) -> ToolOutput:
        return await self._search(args, ctx)

    async def _search(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        query = str(args.get("query", ""))
        if not query.strip():
            raise ToolError("query must not be empty")
        literal = bool(args.get("literal", False))
        limit = int(args.get("limit", DEFAULT_LIMIT))
        if limit < 1:
            raise ToolError("limit must be 1 or more")
        limit = min(limit, MAX_LIMIT)
        pattern = "(?i)" + (_escape(query) if literal else query)
        problem = self._grep.backend.check_pattern(pattern)
        if problem:
            raise ToolError(f"invalid regex {query!r}: {problem} (or pass literal: true)")
        transcript, results = history_paths(ctx)
        view = await asyncio.to_thread(build_view, transcript, results, _secrets(ctx))
        if not view.lines:
            return ToolOutput(f"Nothing to search yet: {_searched(view, transcript, results)}.")
        with tempfile.TemporaryDirectory(prefix="mini-claude-history-") as folder:
            path = Path(folder) / VIEW_NAME
            await asyncio.to_thread(_write_private, path, "\n".join(view.lines) + "\n")
            grep = GrepSearchTool(self._grep.backend, max_matches=limit, max_chars=10 * MAX_CHARS)
            request = SearchRequest(pattern, Path(folder), path, None)
            lines, total, timed_out, code, stderr = await grep.matching_lines(request)
        if code == 2 and not total and stderr.strip():
            reason = self._grep.backend.pattern_error(stderr) or shorten(stderr, 400)
            raise ToolError(f"search failed for {query!r}: {reason}")
        mode = "plain text" if literal else "regular expression"
        text = _render(view, lines, total, timed_out, query, mode, limit,
                       _searched(view, transcript, results))
        return ToolOutput(view.masked(text))  # the query itself may hold a key


def history_paths(ctx: ToolContext) -> tuple[Path | None, Path | None]:
    """This session's transcript and saved-results folder."""
    return ctx.transcript_path, ctx.results_folder


def _secrets(ctx: ToolContext) -> list[str]:
    return list(api_keys(ctx.settings))


def _escape(text: str) -> str:
    """Plain text as a pattern both ripgrep and Python's ``re`` read the same way."""
    return "".join(f"\\{c}" if c in LITERAL_SPECIALS else c for c in text)


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as handle:
        handle.write(text)


def _searched(view: HistoryView, transcript: Path | None, results: Path | None) -> str:
    parts: list[str] = []
    if transcript is not None and transcript.is_file():
        parts.append(
            f"the transcript {transcript} ({plural(view.messages, 'message')}, "
            f"{plural(view.compactions, 'compaction')})"
        )
    else:
        parts.append("no transcript" + (f" at {transcript}" if transcript else ""))
    if results is not None:
        parts.append(f"{plural(view.saved_files, 'other saved result')} in {results}")
    return "searched " + " and ".join(parts)


def _render(
    view: HistoryView,
    lines: list[str],
    total: int,
    timed_out: bool,
    query: str,
    mode: str,
    limit: int,
    searched: str,
) -> str:
    out: list[str] = []
    used = 0
    shown = 0
    last_origin = -1
    for raw in lines:
        place = _place(view, raw)
        if place is None:
            continue
        (origin, number), text = place
        entry = []
        if origin != last_origin:
            entry.append(view.origins[origin] + ":")
        entry.append(f"  line {number}: {text}")
        size = sum(len(e) + 1 for e in entry)
        if used + size > MAX_CHARS:
            break
        out.extend(entry)
        used += size
        shown += 1
        last_origin = origin
    notes: list[str] = []
    if total > shown:
        more = "+" if timed_out else ""
        notes.append(
            f"showing {shown:,} of {total:,}{more} matching lines; narrow the query"
            + (f" or raise limit (up to {MAX_LIMIT})" if limit < MAX_LIMIT else "")
        )
    if timed_out:
        notes.append("the search stopped at its time limit; results are incomplete")
    notes.append(searched)
    if view.damaged:
        where = ", ".join(
            "the last line" if n == view.transcript_lines else f"line {n:,}"
            for n in view.damaged[:5]
        )
        notes.append(f"skipped {plural(len(view.damaged), 'damaged transcript line')}: {where}")
    tail = "".join(f"\n({note})" for note in notes)
    if not shown:
        return f"No line of this session's history matches {query!r} ({mode}).{tail}"
    head = f"Lines of this session's history matching {query!r} ({mode}, case-insensitive):"
    return head + "\n" + "\n".join(out) + tail


def _place(view: HistoryView, raw: str) -> tuple[tuple[int, int], str] | None:
    """The origin and line of one ``path:line:text`` match in the view."""
    _, _, rest = raw.partition(VIEW_NAME + ":")
    number, _, text = rest.partition(":")
    try:
        index = int(number) - 1
    except ValueError:
        return None
    if not 0 <= index < len(view.places):
        return None
    return view.places[index], text
