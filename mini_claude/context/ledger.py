"""The ledger: what the session has seen, written back by the client after every summary.

A summary is only as good as the model that writes it; a poor one keeps the
user's request and forgets every path. The ledger does not depend on it: an
index built from the conversation itself (no model call) of the files read or
changed, the tool results saved to disk, and the commands that failed or wrote
long output, each with the tool call that did it. It names where things are,
not what they said, so one tool call gets any of them back.

Successive compactions merge, never nest: the previous ledger is parsed back
from the boundary it was re-attached to (so a resumed session keeps it too),
new entries replace old ones with the same key, and the whole is cut to a
small token bound, newest first.

"call N" counts the session's tool calls. The header records the newest
counted call's id, so the calls of a kept tail, which the previous ledger
already counted, keep their numbers.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from mini_claude.context.placeholders import count_lines
from mini_claude.context.reattach import HEADER, Reattachment
from mini_claude.context.summary_request import is_boundary
from mini_claude.conversation import Message, TextBlock, ToolResultBlock, ToolUseBlock
from mini_claude.settings import Settings
from mini_claude.text import human_size
from mini_claude.tool_kinds import known_tools

SOURCE = "ledger"
TITLE = "ledger of what this session has seen, newest first"
OUTCOME_CHARS = 120  # of a failed command's last output line
SEPARATOR = " · "
# Paths, numbers and separators take more tokens per character than prose: the
# session's measured ratio would let the ledger overshoot its bound by a quarter.
DENSE_CHARS_PER_TOKEN = 3.0
LONG_OUTPUT_CHARS = 30 * 1024  # the default persist threshold

FILES_HEADING = "Files read or changed:"
SAVED_HEADING = "Saved tool results{where}:"
COMMANDS_HEADING = "Commands that mattered:"
_THROUGH = re.compile(r"^Through tool call (\d+) \(id (\S+)\)\.")
_JSON_STRING = r'"(?:[^"\\]|\\.)*"'
_TOOL_NAMES = r"[\w.:-]+(?:, [\w.:-]+)*"
_FILE_LINE = re.compile(rf"^- call (\d+) · ({_JSON_STRING}) · ({_TOOL_NAMES})(?: · (.*))?$")
_SAVED_HEADING = re.compile(r"^Saved tool results(?: in (.+))?:$")
_SAVED_LINE = re.compile(rf"^- call (\d+) · ([\w.:-]+) ({_JSON_STRING}) · ([^·]*) · (.+)$")
_COMMAND_LINE = re.compile(rf"^- call (\d+) · ({_JSON_STRING}) · (.+)$")
_EXIT_MARKER = re.compile(r"^\[(exit code -?\d+|killed by signal \d+|timed out after [^;\]]+)")


def ledger_tokens(settings: Settings) -> int:
    """The bound: a small share of the window, so the ledger never crowds out the work.

    3% of the effective window, at most ``ledger_tokens`` (1,500 by default):
    about 450 tokens at a 20K window, 1,500 from about a 70K window up. Zero turns it off.
    """
    if settings.ledger_tokens <= 0:
        return 0
    share = int(settings.effective_window * settings.ledger_window_share)
    return min(settings.ledger_tokens, share)


# ---- entries -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FileSeen:
    path: str
    call: int
    tools: tuple[str, ...]  # newest first
    size: str = ""

    @property
    def key(self) -> str:
        return self.path

    def line(self, folder: str = "") -> str:
        parts = [f"- call {self.call}", _quote(self.path), ", ".join(self.tools)]
        if self.size:
            parts.append(self.size)
        return SEPARATOR.join(parts)


@dataclass(frozen=True, slots=True)
class SavedResult:
    path: str  # the file on disk
    call: int
    tool: str
    target: str
    size: str

    @property
    def key(self) -> str:
        """One entry per tool and target: repeated runs of ``cat big.log`` name their newest
        copy (search_history still finds the older ones)."""
        return f"{self.tool}\0{self.target}" if self.target else self.path

    def line(self, folder: str = "") -> str:
        """The file by its name alone when it is in ``folder`` (named once, in the heading)."""
        shown = self.path
        if folder and os.path.dirname(self.path) == folder:
            shown = os.path.basename(self.path)
        return SEPARATOR.join(
            [f"- call {self.call}", f"{self.tool} {_quote(self.target)}", self.size, shown]
        )


@dataclass(frozen=True, slots=True)
class CommandRun:
    command: str
    call: int
    outcome: str

    @property
    def key(self) -> str:
        return self.command

    def line(self, folder: str = "") -> str:
        return SEPARATOR.join([f"- call {self.call}", _quote(self.command), self.outcome])


Entry = FileSeen | SavedResult | CommandRun


@dataclass
class LedgerState:
    """Entries by section and key, and how far the tool calls were counted."""

    files: dict[str, FileSeen] = field(default_factory=dict)
    saved: dict[str, SavedResult] = field(default_factory=dict)
    commands: dict[str, CommandRun] = field(default_factory=dict)
    last_call: int = 0
    last_call_id: str = ""

    def entries(self) -> list[Entry]:
        """Every entry, newest first (ties: files, then saved results, then commands)."""
        found: list[Entry] = [*self.files.values(), *self.saved.values(), *self.commands.values()]
        order = {FileSeen: 0, SavedResult: 1, CommandRun: 2}
        return sorted(found, key=lambda e: (-e.call, order[type(e)], e.key))


# ---- reading a previous ledger back ------------------------------------------------


def ledger_header() -> str:
    return HEADER.format(title=TITLE)


def previous_ledger(messages: Sequence[Message]) -> tuple[int, LedgerState]:
    """The ledger the last boundary carried, and where that boundary is (-1: none)."""
    boundary = max((i for i, m in enumerate(messages) if is_boundary(m)), default=-1)
    if boundary < 0:
        return -1, LedgerState()
    for block in messages[boundary].blocks:
        if isinstance(block, TextBlock) and block.text.startswith(ledger_header()):
            return boundary, parse_ledger(block.text)
    return boundary, LedgerState()


def parse_ledger(text: str) -> LedgerState:
    """The entries of a rendered ledger; lines that do not parse are skipped."""
    state = LedgerState()
    section = ""
    folder = ""
    for line in text.splitlines()[1:]:
        if line in (FILES_HEADING, COMMANDS_HEADING):
            section = line
            continue
        saved_heading = _SAVED_HEADING.match(line)
        if saved_heading:
            section, folder = SAVED_HEADING, saved_heading.group(1) or ""
            continue
        through = _THROUGH.match(line)
        if through:
            state.last_call, state.last_call_id = int(through.group(1)), through.group(2)
            continue
        entry = _parse_entry(section, line, folder)
        if isinstance(entry, FileSeen):
            state.files[entry.key] = entry
        elif isinstance(entry, SavedResult):
            state.saved[entry.key] = entry
        elif isinstance(entry, CommandRun):
            state.commands[entry.key] = entry
    return state


def _parse_entry(section: str, line: str, folder: str) -> Entry | None:
    try:
        if section == FILES_HEADING and (m := _FILE_LINE.match(line)):
            tools = tuple(m.group(3).split(", "))
            return FileSeen(_unquote(m.group(2)), int(m.group(1)), tools, m.group(4) or "")
        if section == SAVED_HEADING and (m := _SAVED_LINE.match(line)):
            path = m.group(5)
            if folder and not os.path.isabs(path):
                path = os.path.join(folder, path)
            return SavedResult(path, int(m.group(1)), m.group(2), _unquote(m.group(3)), m.group(4))
        if section == COMMANDS_HEADING and (m := _COMMAND_LINE.match(line)):
            return CommandRun(_unquote(m.group(2)), int(m.group(1)), m.group(3))
    except ValueError:
        return None
    return None


# ---- adding what happened since ----------------------------------------------------


def update(
    state: LedgerState, messages: Sequence[Message], long_chars: int = LONG_OUTPUT_CHARS
) -> LedgerState:
    """``state`` merged with every tool call in ``messages`` (the history after the boundary).

    A command's output counts as long from ``long_chars`` (tier 0's persist
    threshold): a short output a later tier cleared is a saved result, not news.
    """
    uses = [u for m in messages for u in m.tool_uses]
    numbers = _call_numbers(uses, state)
    results = {r.tool_use_id: r for m in messages for r in m.tool_results}
    for use in uses:
        call = numbers[use.id]
        result = results.get(use.id)
        _note_file(state, use, result, call)
        _note_command(state, use, result, call, long_chars)
        if result is not None and result.saved_path and _listed_when_saved(use.name):
            _note_saved(state, result, call)
    if uses:
        state.last_call = numbers[uses[-1].id]
        state.last_call_id = uses[-1].id
    return state


def _call_numbers(uses: list[ToolUseBlock], state: LedgerState) -> dict[str, int]:
    """Session-wide numbers: calls up to the last counted one keep theirs, later ones follow.

    The kept tail is a suffix of the history the previous ledger counted, so the
    last counted call is in it whenever the tail holds any call at all.
    """
    ids = [u.id for u in uses]
    if state.last_call_id and state.last_call_id in ids:
        first = state.last_call - ids.index(state.last_call_id)
    else:
        first = state.last_call + 1
    return {use_id: first + i for i, use_id in enumerate(ids)}


def _listed_when_saved(tool: str) -> bool:
    """Saved copies not worth a line: output drawn from the history itself, and file reads
    (any tool of kind read), whose file the files section already names."""
    traits = known_tools().traits(tool)
    return not traits.from_history and traits.kind != "read"


def _note_file(
    state: LedgerState, use: ToolUseBlock, result: ToolResultBlock | None, call: int
) -> None:
    argument = known_tools().traits(use.name).file_argument
    if argument is None:
        return  # not a tool whose calls name a file the files section lists
    path = use.input.get(argument)
    if not isinstance(path, str) or not path.strip():
        return
    if result is not None and result.is_error:
        return  # a file that was not there, or an edit that did not apply: nothing was seen
    path = path.strip()
    old = state.files.get(path)
    if old is not None and old.call > call:
        return
    tools = (use.name, *(t for t in (old.tools if old else ()) if t != use.name))
    size = _file_size(use, result) or (old.size if old else "")
    state.files[path] = FileSeen(path, call, tools, size)


def _file_size(use: ToolUseBlock, result: ToolResultBlock | None) -> str:
    kind = known_tools().traits(use.name).kind
    content = use.input.get("content")
    if kind == "edit" and isinstance(content, str):
        return f"wrote {_lines(count_lines(content))}"  # a whole file written
    if kind != "read" or result is None:
        return ""
    lines = result.original_lines or count_lines(result.content)
    offset = use.input.get("offset")
    start = f" from line {offset:,}" if isinstance(offset, int) and offset > 1 else ""
    return f"{_lines(lines)} read{start}"


def _note_saved(state: LedgerState, result: ToolResultBlock, call: int) -> None:
    chars = result.original_chars or len(result.content)
    lines = result.original_lines or count_lines(result.content)
    size = f"{_lines(lines)}, {human_size(chars)}"
    target = " ".join(result.target.split())[:200]
    entry = SavedResult(result.saved_path or "", call, result.tool_name or "tool", target, size)
    old = state.saved.get(entry.key)
    if old is None or old.call <= call:
        state.saved[entry.key] = entry


def _note_command(
    state: LedgerState,
    use: ToolUseBlock,
    result: ToolResultBlock | None,
    call: int,
    long_chars: int,
) -> None:
    """Failed runs and runs with output saved to disk; a later quiet success forgets them."""
    traits = known_tools().traits(use.name)
    command = use.input.get(traits.rule_argument)
    if traits.kind != "shell" or not isinstance(command, str) or result is None:
        return
    command = " ".join(command.split())
    old = state.commands.get(command)
    if old is not None and old.call > call:
        return
    outcome = _outcome(result, long_chars)
    if outcome:
        state.commands[command] = CommandRun(command, call, outcome)
    else:
        state.commands.pop(command, None)


def _outcome(result: ToolResultBlock, long_chars: int) -> str:
    parts: list[str] = []
    if result.is_error:
        marker = ""
        last_line = ""
        for line in result.content.splitlines():
            stripped = line.strip()
            if not stripped:
                continue
            found = _EXIT_MARKER.match(stripped)
            if found:
                marker = found.group(1)
            elif not stripped.startswith("["):
                last_line = " ".join(stripped.split())
        head = f"failed ({marker})" if marker else "failed"
        parts.append(f"{head}: {_quote(last_line[:OUTCOME_CHARS])}" if last_line else head)
    if result.saved_path and (result.original_chars or len(result.content)) >= long_chars:
        lines = result.original_lines or count_lines(result.content)
        parts.append(f"long output ({_lines(lines)}) saved, see saved tool results")
    return "; ".join(parts)


# ---- rendering within the bound ----------------------------------------------------


def render(state: LedgerState, max_chars: int) -> tuple[str, int]:
    """The ledger's body within ``max_chars``; and how many entries were left out.

    Each section first gets its newest entries within an equal share of the room, so
    a run of one kind (many saved outputs) cannot push the entries of another (the
    files read early) out; what a section leaves of its share then goes to the
    newest entries left, whatever their kind.
    """
    head = f"Through tool call {state.last_call} (id {state.last_call_id})."
    intro = ' "call N": the Nth tool call of this session.'
    folder = _common_folder(state.saved.values())
    where = f" in {folder}" if folder else ""
    headings = {
        FileSeen: FILES_HEADING,
        SavedResult: SAVED_HEADING.format(where=where),
        CommandRun: COMMANDS_HEADING,
    }
    entries = state.entries()
    room = max_chars - (len(head) + len(intro) + len(ledger_header()) + 2)
    chosen: set[int] = set()
    used = 0
    kinds = [kind for kind in headings if any(isinstance(e, kind) for e in entries)]
    for kind in kinds:
        floor = room // len(kinds)
        share = 0
        for index, entry in enumerate(entries):
            if isinstance(entry, kind):
                cost = _cost(entry, folder, headings, entries, chosen)
                if share + cost > floor:
                    break
                chosen.add(index)
                share += cost
        used += share
    for index, entry in enumerate(entries):
        if index in chosen:
            continue
        cost = _cost(entry, folder, headings, entries, chosen)
        if used + cost > room:
            break
        chosen.add(index)
        used += cost
    lines = [head + intro]
    for kind, heading in headings.items():
        rendered = [e.line(folder) for i, e in enumerate(entries)
                    if i in chosen and isinstance(e, kind)]
        if rendered:
            lines.append(heading)
            lines.extend(rendered)
    return "\n".join(lines), len(entries) - len(chosen)


def _cost(
    entry: Entry, folder: str, headings: dict[type, str], entries: list[Entry], chosen: set[int]
) -> int:
    """Characters the entry's line adds, with its section's heading if it is the first."""
    opened = any(isinstance(entries[i], type(entry)) for i in chosen)
    heading = 0 if opened else len(headings[type(entry)]) + 1
    return len(entry.line(folder)) + 1 + heading


def _common_folder(saved: Iterable[SavedResult]) -> str:
    """The folder most saved results are in (the session's), named once instead of per line."""
    folders = Counter(os.path.dirname(e.path) for e in saved if os.path.isabs(e.path))
    if not folders:
        return ""
    return min(folders, key=lambda f: (-folders[f], f))


def ledger_body(
    messages: Sequence[Message], max_chars: int, long_chars: int = LONG_OUTPUT_CHARS
) -> str | None:
    """The ledger for ``messages`` (the whole history about to be compacted), or None if empty."""
    boundary, state = previous_ledger(messages)
    state = update(state, messages[boundary + 1 :], long_chars)
    if not state.entries():
        return None
    body, _ = render(state, max_chars)
    return body


class Ledger:
    """The re-attachment source the agent registers on its compactor."""

    def __init__(self, settings: Settings, chars_per_token: Callable[[], float]) -> None:
        self.settings = settings
        self._chars_per_token = chars_per_token

    def reattachments(self, history: Sequence[Message]) -> list[Reattachment]:
        tokens = ledger_tokens(self.settings)
        if tokens <= 0:
            return []
        max_chars = int(tokens * min(self._chars_per_token(), DENSE_CHARS_PER_TOKEN))
        body = ledger_body(history, max_chars, self.settings.persist_threshold_bytes)
        return [] if body is None else [Reattachment(SOURCE, TITLE, body)]


def _lines(count: int) -> str:
    return f"{count:,} line" if count == 1 else f"{count:,} lines"


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _unquote(text: str) -> str:
    value = json.loads(text)
    if not isinstance(value, str):
        raise ValueError("not a string")
    return value
