"""The summary the simulator writes for a summary request, as a real model would write it.

A real model's summary is short (about 1-3K tokens) and selective, and it
follows the request: :func:`asked_for` reads the request's own words for the
kinds it names (the user's messages, decisions, errors, files, commands,
searches, the state and next steps, exact details) and which of them it wants
whole ("all", "every", "enumerate"). One rule for every request, whoever wrote
it. Those kinds are written first; the rest only as far as room is left, raw
details from tool results last. :class:`SummaryStyle` fixes the length from a
seed (so every run writes the same summary) and the mode: ``realistic``, or
``poor`` for a model that keeps the user's requests and nothing else.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from mini_claude.prompts import SUMMARY_HEADING
from mini_claude.simulator.tokens import TokenCounter
from mini_claude.simulator.types import (
    SimConversation,
    SimMessage,
    TextPart,
    ToolResultPart,
    ToolUsePart,
)
from mini_claude.text import shorten

FACT_PATTERN = re.compile(r"FACT-[A-Za-z0-9_-]+[^\n]{0,80}")
FOCUS_LINE = re.compile(r"^\s*focus\s*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)
SUMMARY_TAG = re.compile(r"<summary>(.*?)</summary>", re.DOTALL)
HEADING = re.compile(r"^##\s+(.+?)\s*$")
# How a client says a message carries the summary of earlier messages, in any product's words
# ("this session was compacted", "continued from a previous conversation … the summary below",
# "produced a summary"): a model reads such a message as the earlier summary, not as a request.
CARRIED_SUMMARY = re.compile(
    r"\bcompacted\b|continued from a previous conversation|\bthe summary (?:below|above)\b|"
    r"\bproduced a summary\b|\bsummary of (?:the )?(?:earlier|previous)\b",
    re.IGNORECASE,
)
CARRIED_SUMMARY_HEAD_CHARS = 300
SUMMARY_LABEL = re.compile(r"^\s*summary:\s*$", re.IGNORECASE | re.MULTILINE)
MAX_FOCUS_CHARS = 400
READ_TOOLS = ("read_file",)
CHANGE_TOOLS = ("write_file", "edit_file")
SHELL_TOOLS = ("run_shell",)
SEARCH_TOOLS = ("grep_search",)
# What the client puts beside a summary; the model reads it but does not take it for a request.
KEPT_USER_TEXT_PREFIX = "[Written by the user earlier in this session"
REATTACHED_FILE = re.compile(r"^\[File re-attached after compaction[^:]*: (\S+)")
ITEM_CHARS = 200
# Kept for callers that still name the old fixed size: the middle of the realistic range.
SUMMARY_TOKEN_BUDGET = 2_000
# However much a request asks to keep in full, a summary stops here (a long real summary).
MAX_SUMMARY_TOKENS = 4_096
HEADING_TOKENS = 10
REPLY_MARGIN_TOKENS = 300  # the analysis scratchpad and the tags, inside the reply's limit
ITEM_OVERHEAD_TOKENS = 2

# What a summary request can ask for, by kind, in the words prompts use for it. One table for
# every request: the simulated model reads the words, not who wrote them.
KIND_WORDS: dict[str, re.Pattern[str]] = {
    kind: re.compile(words, re.IGNORECASE) for kind, words in {
        "requests": r"\buser(?:'s|s'|s)?\b[\w\s]{0,20}?\b(?:messages?|requests?|preferences?|"
                    r"said|wrote|asked)\b|\brequests? and intent|\bintents?\b|\bconstraints?\b|"
                    r"\binstructions?\b|\bthe (?:initial )?task\b|\bwhat the user\b",
        "findings": r"\bdecisions?\b|\bdecided\b|\blearnings?\b|\bconcepts?\b|\bconclu\w+|"
                    r"\bfindings?\b|\baccomplished\b|\bprogress\b|\bproblems? solv\w*",
        "errors": r"\berrors?\b|\bfail\w*|\bfix(?:es|ed)?\b",
        "files": r"\bfiles?\b|\bpaths?\b|\breferences\b",
        "commands": r"\bcommands?\b",
        "searches": r"\bsearch(?:es)?\b",
        "state": r"\bstate\b|\bcurrent work\b|\bnext steps?\b|\bpending\b|\bremains?\b|"
                 r"\bleft off\b",
        "details": r"\bcritical (?:data|details)\b|\bexact values?\b|\bcode snippets?\b|"
                   r"\bexamples?\b|\bidentifiers\b",
    }.items()
}
# Words that ask for a kind whole rather than a selection of it.
COMPLETE_WORDS = re.compile(r"\b(?:all|every|everything|enumerate|in full|however long)\b",
                            re.IGNORECASE)
# A request that asks for "anything helpful" asks for a general summary: every kind but raw output.
GENERAL_WORDS = re.compile(r"\banything (?:that would be )?helpful\b", re.IGNORECASE)
NEGATED = re.compile(r"^\W*(?:leave out|do not|don't|never|omit|avoid)\b", re.IGNORECASE)
SENTENCE_BREAK = re.compile(r"(?<=[.!?:])\s+(?=[A-Z0-9])|\n+")
GENERAL_KINDS = frozenset(KIND_WORDS) - {"details"}
# Words that ask not to write again what an earlier summary in the history already says:
# the reply then holds only what came after it.
ONLY_NEW_WORDS = re.compile(
    r"\bonly what (?:the messages|came|is new|has changed)\b|\bwithout repeating\b|"
    r"\bdo(?: not|n't) repeat\b", re.IGNORECASE)

SummaryMode = Literal["realistic", "poor"]


@dataclass(frozen=True, slots=True)
class SummaryStyle:
    """How the simulated model writes summaries: its mode and its seeded length."""

    mode: SummaryMode = "realistic"
    seed: int = 0
    min_tokens: int = 1_000
    max_tokens: int = 3_000

    def budget(self, conv: SimConversation) -> int:
        """Tokens this summary may take: drawn from the seed and the history's length.

        The same request always gets the same budget; different compactions of
        one session get different ones, as a model's summaries vary in length.
        """
        rng = random.Random(f"{self.seed}:{len(conv.messages)}")
        budget = rng.randint(self.min_tokens, self.max_tokens)
        if conv.max_tokens:
            budget = min(budget, max(self.min_tokens // 2, conv.max_tokens - 200))
        return budget


REALISTIC = SummaryStyle()
POOR = SummaryStyle(mode="poor")


@dataclass(slots=True)
class Section:
    """Items of one kind, newest first once collected; ``share`` caps the first pass."""

    title: str
    share: float
    items: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    carried: set[str] = field(default_factory=set)  # items an earlier summary already has

    def add(self, item: str) -> None:
        """Add an item seen later in the session (so newer); a repeat moves to the front."""
        item = item.strip()
        if not item:
            return
        if item in self.items:
            self.items.remove(item)
        self.items.insert(0, item)

    def add_older(self, item: str) -> None:
        """Add an item from an earlier summary: older than anything in the history itself."""
        item = item.strip()
        if item:
            self.carried.add(item)
        if item and item not in self.items:
            self.items.append(item)

    def drop_carried(self) -> None:
        """Leave out what the earlier summary already says (asked only for what is new)."""
        self.items = [item for item in self.items if item not in self.carried]


def focus_of(instruction: str) -> str:
    """The focus a user gave to /compact: a ``Focus:`` line, or words after the heading itself."""
    match = FOCUS_LINE.search(instruction)
    if match:
        return shorten(match.group(1), MAX_FOCUS_CHARS)
    heading_line = instruction.lstrip().split("\n", 1)[0]
    rest = heading_line[len(SUMMARY_HEADING) :].strip(" :-—.\t")
    return shorten(rest, MAX_FOCUS_CHARS)


@dataclass(frozen=True, slots=True)
class Asked:
    """What a summary request asks to keep, by kind, and which kinds it wants whole."""

    kinds: frozenset[str]
    complete: frozenset[str] = frozenset()


def asked_for(instruction: str) -> Asked:
    """The kinds a request names, read sentence by sentence from its own words.

    A sentence that names a kind asks for it; with a word such as "all", "every" or
    "enumerate" it asks for that kind whole. A sentence that starts by saying what to
    leave out asks for nothing. A request that names no kind, or asks for "anything"
    helpful, gets a general summary: every kind but raw tool output.
    """
    kinds: set[str] = set()
    complete: set[str] = set()
    for sentence in SENTENCE_BREAK.split(instruction):
        if not sentence.strip() or NEGATED.match(sentence):
            continue
        named = {kind for kind, words in KIND_WORDS.items() if words.search(sentence)}
        kinds |= named | (GENERAL_KINDS if GENERAL_WORDS.search(sentence) else set())
        if COMPLETE_WORDS.search(sentence):
            complete |= named
    if not kinds - {"state"}:  # only where things stand, or nothing: a general summary
        kinds |= GENERAL_KINDS
    return Asked(frozenset(kinds), frozenset(complete))


def earlier_summary(text: str) -> str | None:
    """The summary carried by a compaction boundary, or None when the text is not one."""
    if not CARRIED_SUMMARY.search(text.lstrip()[:CARRIED_SUMMARY_HEAD_CHARS]):
        return None
    tagged = SUMMARY_TAG.search(text)
    if tagged:
        return tagged.group(1).strip()
    labelled = SUMMARY_LABEL.search(text)
    if labelled:
        return text[labelled.end():].strip() or None
    _, _, rest = text.partition("\n\n")
    return rest.strip() or None


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def facts_in(texts: Iterator[str]) -> list[str]:
    found: list[str] = []
    for text in texts:
        for match in FACT_PATTERN.finditer(text):
            fact = match.group(0).strip()
            if fact not in found:
                found.append(fact)
    return found


class _Sections:
    """The summary's parts; the order of ``ordered`` is the order they are written in."""

    def __init__(self) -> None:
        self.focus = Section("Focus", 0.05)
        self.requests = Section("User requests", 0.25)
        self.findings = Section("Findings and decisions", 0.25)
        self.errors = Section("Errors seen", 0.10)
        self.changed = Section("Files changed", 0.05)
        self.read = Section("Files read", 0.15)
        self.commands = Section("Commands run", 0.07)
        self.searches = Section("Searches", 0.03)
        self.state = Section("Current state and next step", 0.10)
        self.details = Section("Details from tool output", 0.10)

    def ordered(self) -> list[Section]:
        return [self.focus, self.requests, self.findings, self.errors, self.changed, self.read,
                self.commands, self.searches, self.state, self.details]

    def by_title(self, title: str) -> Section | None:
        return next((s for s in self.ordered() if s.title.lower() == title.lower()), None)

    def of_kind(self, kind: str) -> list[Section]:
        """The sections a kind of :data:`KIND_WORDS` names."""
        return {
            "requests": [self.requests], "findings": [self.findings], "errors": [self.errors],
            "files": [self.changed, self.read], "commands": [self.commands],
            "searches": [self.searches], "state": [self.state], "details": [self.details],
        }[kind]

    def asked(self, kinds: frozenset[str]) -> list[Section]:
        """The sections of those kinds, in the order a model writes them down."""
        wanted = {id(section) for kind in kinds for section in self.of_kind(kind)}
        return [section for section in self.writing_order() if id(section) in wanted]

    def writing_order(self) -> list[Section]:
        """Most important first: where things stand, what was asked, what went wrong."""
        return [self.focus, self.state, self.requests, self.errors, self.changed, self.findings,
                self.read, self.commands, self.searches, self.details]


def _target(use: ToolUsePart) -> str:
    for key in ("path", "file_path", "command", "pattern"):
        value = use.input.get(key)
        if isinstance(value, str) and value:
            return value
    return shorten(json.dumps(use.input, sort_keys=True), 80)


class _Reader:
    """Walks the history oldest to newest, sorting what it sees into sections."""

    def __init__(self, conv: SimConversation, sections: _Sections) -> None:
        self.sections = sections
        self.uses = {u.id: u for u in conv.tool_uses()}

    def read(self, history: list[SimMessage]) -> None:
        for message in history:
            if message.role == "user":
                self._user(message)
            else:
                self._assistant(message)

    def _user(self, message: SimMessage) -> None:
        for block in message.blocks:
            if isinstance(block, TextPart):
                self._user_text(block.text, message.is_plain_user_message)
            elif isinstance(block, ToolResultPart):
                self._result(block)

    def _user_text(self, text: str, plain: bool) -> None:
        s = self.sections
        carried = earlier_summary(text)
        if carried is not None:
            self._carry(carried)
            return
        attached = REATTACHED_FILE.match(text)
        if attached:
            s.read.add(attached.group(1))
            for fact in facts_in(iter([text])):
                s.details.add(fact)
            return
        if text.startswith(KEPT_USER_TEXT_PREFIX):
            text = text.split("\n", 1)[1] if "\n" in text else ""
        if plain and text.strip():
            s.requests.add(shorten(text, ITEM_CHARS))

    def _result(self, result: ToolResultPart) -> None:
        s = self.sections
        if result.is_error:
            use = self.uses.get(result.tool_use_id)
            label = f"{use.name}({_target(use)})" if use else "tool"
            first = result.content.strip().splitlines()[0] if result.content.strip() else ""
            s.errors.add(shorten(f"{label}: {first}", ITEM_CHARS))
        for fact in facts_in(iter([result.content])):
            s.details.add(fact)

    def _assistant(self, message: SimMessage) -> None:
        s = self.sections
        for line in message.text.splitlines():
            cleaned = line.strip().removeprefix("- ").strip()
            if cleaned and not cleaned.startswith("I have the summary of the earlier part"):
                s.findings.add(shorten(cleaned, ITEM_CHARS))
        for use in message.tool_uses:
            target = _target(use)
            if use.name in READ_TOOLS:
                s.read.add(target)
            elif use.name in CHANGE_TOOLS:
                s.changed.add(target)
            elif use.name in SHELL_TOOLS:
                s.commands.add(shorten(target, 160))
            elif use.name in SEARCH_TOOLS:
                s.searches.add(shorten(target, 120))

    def _carry(self, summary: str) -> None:
        """An earlier summary's items go back to their sections, older than the history."""
        section: Section | None = self.sections.findings
        carried: list[tuple[Section, str]] = []
        for raw in summary.splitlines():
            heading = HEADING.match(raw.strip())
            if heading:
                section = self.sections.by_title(heading.group(1))
                if section is self.sections.state or section is self.sections.focus:
                    section = None  # the old "current state" and focus are stale
                continue
            item = raw.strip().removeprefix("- ").strip()
            if section is not None and item:
                carried.append((section, shorten(item, ITEM_CHARS + 40)))
        for section, item in reversed(carried):  # the summary lists oldest first
            section.add_older(item)


def _state(history: list[SimMessage], sections: _Sections) -> None:
    last_request = next((m.text for m in reversed(history) if m.is_plain_user_message), "")
    last_answer = next((m.text for m in reversed(history) if m.role == "assistant" and m.text), "")
    pending = history[-1].tool_uses if history and history[-1].role == "assistant" else []
    items = []
    if last_request and earlier_summary(last_request) is None:
        items.append("Working on: " + shorten(last_request, ITEM_CHARS))
    if last_answer:
        items.append("Last reply: " + shorten(last_answer, 240))
    if pending:
        items.append("Next: finish " + ", ".join(u.name for u in pending))
    elif history and history[-1].tool_results:
        items.append("Next: read the latest tool results and continue the task")
    sections.state.items = items


def _size(section: Section, counter: TokenCounter) -> int:
    return sum(counter.count(item) + ITEM_OVERHEAD_TOKENS for item in section.items)


def _select(sections: _Sections, counter: TokenCounter, budget: int, asked: Asked) -> None:
    """Fill the budget with what the request asked for, then with what room is left.

    Kinds asked for whole come first, the smallest first (so as many lists as can be
    are whole); then the other kinds asked for, each up to its share; then room left
    goes to the kinds asked for, and last to those not asked for, raw tool output
    at the very end.
    """
    used = HEADING_TOKENS

    def take(section: Section, limit: int) -> None:
        nonlocal used
        spent = 0
        for item in list(section.items):
            if item in section.kept:
                continue
            cost = counter.count(item) + ITEM_OVERHEAD_TOKENS + (
                HEADING_TOKENS if not section.kept else 0)
            if spent + cost > limit or used + cost > budget:
                continue
            section.kept.append(item)
            spent += cost
            used += cost

    # The assistant's own statements of exact values come before its passing remarks.
    sections.findings.items.sort(key=lambda item: "FACT-" not in item)
    whole = sorted(sections.asked(asked.complete), key=lambda s: _size(s, counter))
    chosen = sections.asked(asked.kinds)
    take(sections.focus, int(budget * sections.focus.share))
    for section in whole:
        take(section, budget)
    for section in chosen:
        take(section, int(budget * section.share))
    chosen_ids = {id(section) for section in chosen}
    rest = [section for section in sections.writing_order() if id(section) not in chosen_ids]
    for section in [*chosen, *rest]:
        take(section, budget)


def _render(sections: _Sections) -> str:
    parts: list[str] = []
    for section in sections.ordered():
        if not section.kept:
            continue
        # Lists read as a model writes them: in the session's order (newest last).
        kept = [i for i in reversed(section.items) if i in section.kept]
        if section is sections.state:
            kept = [i for i in section.items if i in section.kept]
        parts.append(f"## {section.title}\n" + "\n".join(f"- {item}" for item in kept))
    return "\n\n".join(parts)


def build_summary(
    conv: SimConversation, counter: TokenCounter, style: SummaryStyle = REALISTIC,
    budget: int | None = None,
) -> str:
    """``<analysis>`` then ``<summary>``, from the conversation the request carried."""
    history = conv.messages[:-1] if conv.is_summary_request else list(conv.messages)
    instruction = conv.messages[-1].text if conv.is_summary_request else ""
    sections = _Sections()
    _Reader(conv, sections).read(history)
    _state(history, sections)
    focus = focus_of(instruction) if instruction else ""
    if focus:
        sections.focus.add(focus)
    if style.mode == "poor":
        for section in sections.ordered():
            if section is not sections.requests:
                section.items.clear()
    if ONLY_NEW_WORDS.search(instruction):
        for section in sections.ordered():
            section.drop_carried()
    asked = asked_for(instruction)
    if budget is None:
        budget = style.budget(conv)
        # Asked for whole lists "however long", a model writes them on top of its usual
        # length, as far as the reply's token limit and a long summary's length let it.
        extra = sum(_size(section, counter) for section in sections.asked(asked.complete))
        ceiling = MAX_SUMMARY_TOKENS - REPLY_MARGIN_TOKENS
        if conv.max_tokens:
            ceiling = min(ceiling, conv.max_tokens - REPLY_MARGIN_TOKENS)
        budget = max(budget, min(budget + extra, ceiling))
    _select(sections, counter, budget, asked)
    uses = sum(len(m.tool_uses) for m in history)
    analysis = (
        f"The session has {len(history)} messages, {len(sections.requests.items)} user requests, "
        f"{uses} tool calls and {len(sections.errors.items)} errors. Keep the requests, what I "
        "concluded, the files, the commands, the errors and the next step; raw tool output only "
        "where room is left."
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
