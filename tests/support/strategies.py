"""Hypothesis strategies for sessions and settings, cheap enough for thousands of examples.

Text is not drawn character by character: a draw picks a flavour (prose, code,
JSON, hex, CJK, emoji, log lines) and a size, and the text is built from that
and cached, so an example costs a few integer draws. The flavours are the ones
that pull the characters-per-token ratio apart: hex and CJK take many more
tokens per character than prose does.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Literal

from hypothesis import strategies as st

from mini_claude.context.placeholders import count_lines
from mini_claude.conversation import (
    INTERRUPTED_RESULT,
    Message,
    SummaryBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    target_of,
)
from mini_claude.settings import Settings

Flavour = Literal["prose", "code", "json", "hex", "cjk", "emoji", "log"]
FLAVOURS: tuple[Flavour, ...] = ("prose", "code", "json", "hex", "cjk", "emoji", "log")

_SEEDS: dict[Flavour, str] = {
    "prose": "The parser reads each entry, checks the header and keeps what it needs. ",
    "code": "def handle_{n}(request, *, retries=3):\n    return dispatch(request, retries)\n",
    "json": '{{"id": {n}, "name": "item-{n}", "tags": ["a", "b"], "ok": true}}\n',
    "hex": "{n:08x} 9f3a1c2e7b44d0a1e5c6 4f2d8e0b13a7c9 ",
    "cjk": "解析器读取每个条目并检查头部信息，保留需要的内容。第{n}行。",
    "emoji": "✅ step {n} ⏳ → 🚀 done ⚠️ ",
    "log": "2026-11-25T22:{n:02d}:17Z INFO worker[{n}] processed batch in 12ms\n",
}

# Sizes in characters, around the limits the tiers use by default (15K, 30K, 50K) and
# the smaller ones a user may set. Small sizes repeat: most output is small, and the
# large texts are what costs time per example.
RESULT_SIZES = (0, 1, 12, 12, 240, 240, 1_800, 1_800, 4_500, 9_000, 16_500, 31_000, 64_000)
USER_SIZES = (1, 40, 40, 400, 400, 6_000, 30_000)
ASSISTANT_SIZES = (20, 300, 2_500)

READ_PATHS = ("src/app.py", "./src/app.py", "README.md", "docs/../src/util.py", "tests/test_app.py")
SHELL_COMMANDS = ("pytest -q", "git status", "ls -la", "python -V")
PATTERNS = ("def ", "TODO", "import re")


@lru_cache(maxsize=512)
def text_of(flavour: Flavour, size: int) -> str:
    """Exactly ``size`` characters of the flavour; the same arguments give the same text."""
    if size <= 0:
        return ""
    seed = _SEEDS[flavour]
    parts: list[str] = []
    length = 0
    for n in itertools.count():
        piece = seed.format(n=n % 100) if "{n" in seed else seed
        parts.append(piece)
        length += len(piece)
        if length >= size:
            break
    text = "".join(parts)[:size]
    if not text.strip():
        return "x" * size
    return text


# ---- what a session is made of -----------------------------------------------------


@dataclass(frozen=True)
class Text:
    """Generated text that prints as its recipe, so a failing example stays readable."""

    flavour: Flavour
    size: int

    @property
    def value(self) -> str:
        return text_of(self.flavour, self.size)


@dataclass(frozen=True)
class ToolStep:
    """One tool call and the output the tool gave (before tier 0 saw it)."""

    name: str
    input: dict[str, Any]
    made_of: Text | str
    is_error: bool = False

    @property
    def output(self) -> str:
        return self.made_of if isinstance(self.made_of, str) else self.made_of.value


@dataclass(frozen=True)
class UserTurn:
    made_of: Text

    @property
    def text(self) -> str:
        return self.made_of.value


@dataclass(frozen=True)
class ToolRound:
    """An assistant message with tool calls, and the results that answer it."""

    text: str
    steps: tuple[ToolStep, ...]


@dataclass(frozen=True)
class Answer:
    """The assistant's final reply of a turn."""

    made_of: Text

    @property
    def text(self) -> str:
        return self.made_of.value


Event = UserTurn | ToolRound | Answer


@dataclass(frozen=True)
class Script:
    """A session as events; the test materialises it message by message."""

    events: tuple[Event, ...]
    summary_start: str | None = None  # a session that was compacted before
    id_prefix: str = "toolu_"


@dataclass
class IdMaker:
    prefix: str
    count: int = 0

    def next(self) -> str:
        self.count += 1
        return f"{self.prefix}{self.count:06d}"


@dataclass
class Materialised:
    """The messages of one event: what the agent appends, before and after tier 0."""

    assistant: Message | None = None
    user: Message | None = None
    uses: list[ToolUseBlock] = field(default_factory=list)


def boundary_messages(summary: str) -> list[Message]:
    """What a compaction leaves at the start: the summary boundary and an acknowledgement."""
    boundary = Message(
        "user",
        [SummaryBlock(summary, "/tmp/transcript.jsonl", 12), TextBlock("keep the tests green")],
    )
    return [boundary, Message("assistant", [TextBlock("Understood; continuing from the summary.")])]


def raw_result(use: ToolUseBlock, step: ToolStep) -> ToolResultBlock:
    """A result exactly as the tool returned it (what the transcript keeps)."""
    return ToolResultBlock(
        use.id,
        step.output,
        step.is_error,
        use.name,
        target_of(use),
        len(step.output),
        count_lines(step.output),
    )


# ---- strategies --------------------------------------------------------------------
# Hypothesis pays for every draw and for every strategy object it meets, so each
# draw below picks a whole combination from a menu built once at import.

WRITTEN = text_of("prose", 60)


def _call_menu() -> list[tuple[str, dict[str, Any], str | None]]:
    """Tool calls as (name, input, fixed output or None for a drawn one), weighted by use."""
    menu: list[tuple[str, dict[str, Any], str | None]] = []
    for path in READ_PATHS:
        menu += [("read_file", {"path": path}, None)] * 3
        menu += [("read_file", {"path": path, "offset": offset}, None) for offset in (1, 2001)]
        menu.append(("edit_file", {"path": path, "old": "a", "new": "b"}, "Edited the file"))
    menu += [("grep_search", {"pattern": pattern}, None) for pattern in PATTERNS] * 2
    menu += [("list_files", {"path": "."}, None)] * 4
    menu += [("run_shell", {"command": command}, None) for command in SHELL_COMMANDS] * 2
    menu.append(("run_shell", {"command": SHELL_COMMANDS[0]}, INTERRUPTED_RESULT))
    menu.append(("write_file", {"path": "NOTES.md", "content": WRITTEN}, "Wrote NOTES.md"))
    menu.append(("frobnicate", {"x": 1}, "Unknown tool 'frobnicate'. Available tools: ..."))
    return menu


CALLS = st.sampled_from(_call_menu())
ERROR_FLAGS = (True, False, False, False)
ROUND_TEXTS = ("", "", "Let me look.", "Reading the files now. " * 8)
ROUND_WIDTHS = (1, 1, 1, 2, 3, 6)
OPENINGS = tuple(
    itertools.product(
        (None, None, "Earlier: read src/app.py; FACT-7 the port is 8080."), ("toolu_", "call_")
    )
)


@cache
def pick(options: tuple[Any, ...]) -> st.SearchStrategy[Any]:
    return st.sampled_from(options)


@cache
def texts(
    sizes: tuple[int, ...], palette: tuple[Flavour, ...] = FLAVOURS
) -> st.SearchStrategy[Text]:
    return pick(tuple(Text(f, n) for f, n in itertools.product(palette, sizes)))


@cache
def _count_up_to(n: int) -> st.SearchStrategy[int]:
    return st.integers(0, n)


def _draw_step(draw: st.DrawFn, palette: tuple[Flavour, ...]) -> ToolStep:
    name, arguments, fixed = draw(CALLS)
    output = fixed if fixed is not None else draw(texts(RESULT_SIZES, palette))
    is_error = fixed == INTERRUPTED_RESULT or (name != "write_file" and draw(pick(ERROR_FLAGS)))
    return ToolStep(name, dict(arguments), output, is_error)


def _draw_round(draw: st.DrawFn, palette: tuple[Flavour, ...]) -> ToolRound:
    width = draw(pick(ROUND_WIDTHS))
    text = draw(pick(ROUND_TEXTS))
    return ToolRound(text, tuple(_draw_step(draw, palette) for _ in range(width)))


@st.composite
def _scripts(
    draw: st.DrawFn, max_turns: int, max_rounds: int, palette: tuple[Flavour, ...]
) -> Script:
    events: list[Event] = []
    turns = 1 + draw(_count_up_to(max_turns - 1))
    for turn in range(turns):
        events.append(UserTurn(draw(texts(USER_SIZES, palette))))
        events.extend(_draw_round(draw, palette) for _ in range(draw(_count_up_to(max_rounds))))
        if turn < turns - 1:
            events.append(Answer(draw(texts(ASSISTANT_SIZES, palette))))
    summary, prefix = draw(pick(OPENINGS))
    return Script(tuple(events), summary, prefix)


@cache
def scripts(
    max_turns: int = 2, max_rounds: int = 3, palette: tuple[Flavour, ...] = FLAVOURS
) -> st.SearchStrategy[Script]:
    """A session that ends where a model call would happen: on a user or tool-result message."""
    return _scripts(max_turns, max_rounds, palette)


WINDOWS = pick((8_000, 16_000, 32_768, 128_000, 200_000, 1_000_000)) | st.integers(
    8_000, 1_000_000
)
# (output_reserve, persist_threshold_bytes, truncate_chars, preview_lines, preview_bytes)
SIZING = tuple(
    itertools.product(
        (1_000, 8_000, 20_000), (2_000, 8_000, 30 * 1024, 60_000), (6_000, 20_000, 50_000),
        (3, 200), (200, 2_048),
    )
)
# (budget_low_pct, budget_high_pct, budget_low_chars, budget_high_chars), high >= low
BUDGETS = tuple(
    (low_pct, high_pct, low_chars, high_chars)
    for low_pct, high_pct, low_chars, high_chars in itertools.product(
        (0.3, 0.5, 0.6), (0.3, 0.7, 0.8), (2_000, 4_000, 15_000, 30_000),
        (1_000, 3_000, 8_000, 15_000),
    )
    if high_pct >= low_pct and high_chars <= low_chars
)
# (snip_pct, snip_min_free_pct, microcompact_idle_seconds, autocompact_pct,
#  post_compact_target_pct)
LATER_TIERS = tuple(
    itertools.product(
        (0.2, 0.6, 0.8), (0.0, 0.01, 0.05, 0.2), (0.0, 60.0, 300.0), (0.5, 0.85, 0.95), (0.3, 0.5)
    )
)


@st.composite
def _settings(draw: st.DrawFn, home: Path) -> Settings:
    reserve, persist, truncate, preview_lines, preview_bytes = draw(pick(SIZING))
    low_pct, high_pct, low_chars, high_chars = draw(pick(BUDGETS))
    snip_pct, snip_min_free, idle, autocompact, post_target = draw(pick(LATER_TIERS))
    return Settings(
        home=home,
        model="sim-model",
        context_window=draw(WINDOWS),
        output_reserve=reserve,
        persist_threshold_bytes=persist,
        truncate_chars=truncate,
        preview_lines=preview_lines,
        preview_bytes=preview_bytes,
        budget_low_pct=low_pct,
        budget_high_pct=high_pct,
        budget_low_chars=low_chars,
        budget_high_chars=high_chars,
        snip_pct=snip_pct,
        snip_min_free_pct=snip_min_free,
        microcompact_idle_seconds=idle,
        autocompact_pct=autocompact,
        post_compact_target_pct=post_target,
    )


@cache
def settings_for(home: Path) -> st.SearchStrategy[Settings]:
    """Windows from 8K to 1M and thresholds anywhere a user could set them."""
    return _settings(home)
