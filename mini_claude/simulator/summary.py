"""The deterministic summary the simulator gives for a summary request.

It is built only from what the request contains, so a test can check that
compaction kept what matters: planted facts, file paths, commands, errors.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from mini_claude.prompts import SUMMARY_HEADING
from mini_claude.simulator.tokens import TokenCounter
from mini_claude.simulator.types import SimConversation, SimMessage, TextPart, ToolUsePart
from mini_claude.text import shorten

FACT_PATTERN = re.compile(r"FACT-[A-Za-z0-9_-]+[^\n]{0,80}")
FOCUS_LINE = re.compile(r"^\s*focus\s*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)
SUMMARY_TAG = re.compile(r"<summary>(.*?)</summary>", re.DOTALL)
COMPACTED_MARKER = "compacted"
SUMMARY_TOKEN_BUDGET = 1_500
MAX_FOCUS_CHARS = 400
READ_TOOLS = ("read_file",)
CHANGE_TOOLS = ("write_file", "edit_file")
SHELL_TOOLS = ("run_shell",)
SEARCH_TOOLS = ("grep_search",)


@dataclass(slots=True)
class Section:
    title: str
    items: list[str] = field(default_factory=list)
    keep_all: bool = False  # facts are never dropped

    def add(self, item: str) -> None:
        if item and item not in self.items:
            self.items.append(item)


def focus_of(instruction: str) -> str:
    """The focus a user gave to /compact: a ``Focus:`` line, or words after the heading itself."""
    match = FOCUS_LINE.search(instruction)
    if match:
        return shorten(match.group(1), MAX_FOCUS_CHARS)
    heading_line = instruction.lstrip().split("\n", 1)[0]
    rest = heading_line[len(SUMMARY_HEADING) :].strip(" :-—.\t")
    return shorten(rest, MAX_FOCUS_CHARS)


def earlier_summary(text: str) -> str | None:
    """The summary carried by a compaction boundary, or None when the text is not one."""
    head = text.lstrip()[:200].lower()
    if COMPACTED_MARKER not in head:
        return None
    tagged = SUMMARY_TAG.search(text)
    if tagged:
        return tagged.group(1).strip()
    _, _, rest = text.partition("\n\n")
    return rest.strip() or None


STALE_PREFIXES = ("Working on:", "Last reply:", "Next:")


def carried_lines(summary: str) -> list[str]:
    """The detail worth carrying from an earlier summary.

    Headings, facts (collected again on their own) and the old "current
    state" are left out, so repeated compactions do not nest summaries.
    """
    lines: list[str] = []
    for raw in summary.splitlines():
        line = raw.strip().removeprefix("- ").strip()
        if not line or line.startswith("#") or "FACT-" in line or line.startswith(STALE_PREFIXES):
            continue
        lines.append(shorten(line, 240))
    return lines


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _texts(messages: list[SimMessage]) -> Iterator[str]:
    for message in messages:
        for block in message.blocks:
            if isinstance(block, TextPart):
                yield block.text
            elif isinstance(block, ToolUsePart):
                yield from _strings(block.input)
            else:
                yield block.content


def facts_in(texts: Iterator[str]) -> list[str]:
    found: list[str] = []
    for text in texts:
        for match in FACT_PATTERN.finditer(text):
            fact = match.group(0).strip()
            if fact not in found:
                found.append(fact)
    return found


class _Sections:
    def __init__(self) -> None:
        self.requests = Section("User requests")
        self.earlier = Section("Earlier summary (carried forward)")
        self.read = Section("Files read")
        self.changed = Section("Files changed")
        self.commands = Section("Commands run")
        self.searches = Section("Searches")
        self.errors = Section("Errors seen")
        self.state = Section("Current state and next step")
        self.facts = Section("Facts to keep", keep_all=True)
        self.focus = Section("Focus", keep_all=True)

    def ordered(self) -> list[Section]:
        return [
            self.focus,
            self.requests,
            self.earlier,
            self.read,
            self.changed,
            self.commands,
            self.searches,
            self.errors,
            self.state,
            self.facts,
        ]

    def droppable(self) -> list[Section]:
        """Where detail goes first when the summary is too long."""
        return [
            self.earlier,
            self.searches,
            self.read,
            self.commands,
            self.errors,
            self.requests,
            self.changed,
            self.state,
        ]


def _collect(conv: SimConversation, history: list[SimMessage]) -> _Sections:
    sections = _Sections()
    names = {u.id: u for u in conv.tool_uses()}
    for message in history:
        if message.role == "user":
            for block in message.blocks:
                if isinstance(block, TextPart):
                    carried = earlier_summary(block.text)
                    if carried is not None:
                        for line in carried_lines(carried):
                            sections.earlier.add(line)
                    elif message.is_plain_user_message:
                        sections.requests.add(shorten(block.text, 200))
            for result in message.tool_results:
                if result.is_error:
                    use = names.get(result.tool_use_id)
                    label = f"{use.name}({_target(use)})" if use else "tool"
                    first = result.content.strip().splitlines()[0] if result.content.strip() else ""
                    sections.errors.add(shorten(f"{label}: {first}", 200))
        for use in message.tool_uses:
            target = _target(use)
            if use.name in READ_TOOLS:
                sections.read.add(target)
            elif use.name in CHANGE_TOOLS:
                sections.changed.add(target)
            elif use.name in SHELL_TOOLS:
                sections.commands.add(shorten(target, 160))
            elif use.name in SEARCH_TOOLS:
                sections.searches.add(shorten(target, 120))
    return sections


def _target(use: ToolUsePart) -> str:
    for key in ("path", "file_path", "command", "pattern"):
        value = use.input.get(key)
        if isinstance(value, str) and value:
            return value
    return shorten(json.dumps(use.input, sort_keys=True), 80)


def _state(history: list[SimMessage], sections: _Sections) -> None:
    last_request = next((m.text for m in reversed(history) if m.is_plain_user_message), "")
    last_answer = next((m.text for m in reversed(history) if m.role == "assistant" and m.text), "")
    pending = history[-1].tool_uses if history and history[-1].role == "assistant" else []
    if last_request:
        sections.state.add("Working on: " + shorten(last_request, 200))
    if last_answer:
        sections.state.add("Last reply: " + shorten(last_answer, 240))
    if pending:
        sections.state.add("Next: finish " + ", ".join(u.name for u in pending))
    elif history and history[-1].tool_results:
        sections.state.add("Next: read the latest tool results and continue the task")


def _render(sections: _Sections) -> str:
    parts: list[str] = []
    for section in sections.ordered():
        if section.items:
            body = "\n".join(f"- {item}" for item in section.items)
            parts.append(f"## {section.title}\n{body}")
    return "\n\n".join(parts)


def _fit(sections: _Sections, counter: TokenCounter, budget: int) -> None:
    """Drop the oldest droppable detail until the summary fits the budget."""
    tokens = {id(s): [counter.count(i) + 2 for i in s.items] for s in sections.ordered()}
    total = sum(sum(v) for v in tokens.values()) + 10 * len(sections.ordered())
    while total > budget:
        candidates = [s for s in sections.droppable() if s.items]
        if not candidates:
            return
        largest = max(candidates, key=lambda s: sum(tokens[id(s)]))
        largest.items.pop(0)
        total -= tokens[id(largest)].pop(0)


def build_summary(
    conv: SimConversation, counter: TokenCounter, budget: int = SUMMARY_TOKEN_BUDGET
) -> str:
    """``<analysis>`` then ``<summary>``, from the conversation the request carried."""
    history = conv.messages[:-1] if conv.is_summary_request else list(conv.messages)
    instruction = conv.messages[-1].text if conv.is_summary_request else ""
    sections = _collect(conv, history)
    _state(history, sections)
    for fact in facts_in(_texts(history)):
        sections.facts.add(fact)
    focus = focus_of(instruction) if instruction else ""
    if focus:
        sections.focus.add(focus)
    _fit(sections, counter, budget)
    uses = sum(len(m.tool_uses) for m in history)
    analysis = (
        f"The session has {len(history)} messages, {len(sections.requests.items)} user requests "
        f"kept, {uses} tool calls and {len(sections.errors.items)} errors. "
        "Keep the requests, the files touched, the commands, the errors, the facts "
        "and the next step."
    )
    return f"<analysis>\n{analysis}\n</analysis>\n<summary>\n{_render(sections)}\n</summary>"


def useless_summary(conv: SimConversation, counter: TokenCounter, prompt_tokens: int) -> str:
    """A summary at least twice as long as the prompt it was meant to shrink."""
    base = build_summary(conv, counter)
    line = "- Detail kept verbatim: every step, every file, every output, repeated in full.\n"
    per_line = max(1, counter.count(line))
    needed = 2 * prompt_tokens - counter.count(base)
    lines = max(0, -(-needed // per_line)) + 16
    head, _, _ = base.rpartition("\n</summary>")
    return f"{head}\n{line * lines}</summary>"
