"""`/context`: parts measured in characters, scaled to exactly the meter's token count."""

from __future__ import annotations

import io
import json
from dataclasses import asdict

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from mini_claude.conversation import (
    Message,
    SummaryBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from mini_claude.protocol import ContextStatus, ToolSpec
from mini_claude.ui.context_view import (
    Part,
    breakdown,
    measure_parts,
    render_breakdown,
    scale_to,
    segment_widths,
)

TOOLS = [ToolSpec("read_file", "Read a file", {"type": "object", "properties": {}})]
MESSAGES = [
    Message("user", [SummaryBlock("earlier work", "/tmp/t.jsonl")]),
    Message("user", [TextBlock("please read a.py")]),
    Message("assistant",
            [TextBlock("Reading."), ToolUseBlock("t1", "read_file", {"path": "a.py"})]),
    Message("user", [ToolResultBlock("t1", "x" * 400, tool_name="read_file")]),
    Message("assistant", [TextBlock("Done.")]),
]


def test_parts_are_measured_by_kind_and_tool() -> None:
    parts = {p.label: p.chars for p in measure_parts("SYSTEM", TOOLS, MESSAGES)}
    assert parts["system prompt"] == 6
    assert parts["tool schemas"] == len(json.dumps([asdict(t) for t in TOOLS]))
    assert parts["user messages"] == len("please read a.py")
    assert parts["assistant text"] == len("Reading.") + len("Done.")
    assert parts["tool results: read_file"] == 400 + len("t1")
    assert parts["tool calls"] > 0
    assert parts["summaries"] == len(SummaryBlock("earlier work", "/tmp/t.jsonl").render())


@given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=12),
       st.integers(min_value=0, max_value=10**6))
def test_scaled_parts_sum_exactly_to_the_total(chars: list[int], total: int) -> None:
    parts = [Part(f"p{i}", c) for i, c in enumerate(chars)]
    scaled = scale_to(parts, total)
    expected = total if sum(chars) > 0 else 0
    assert sum(p.tokens for p in scaled) == expected
    for part in scaled:  # proportional to within one token
        if sum(chars):
            assert abs(part.tokens - part.chars * total / sum(chars)) < 1


@given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=14),
       st.integers(min_value=14, max_value=120))
def test_bar_segments_fill_the_width_and_show_every_part(amounts: list[int], width: int) -> None:
    cells = segment_widths(amounts, width)
    if sum(amounts) == 0:
        assert cells == [0] * len(amounts)
        return
    assert sum(cells) == width
    assert all(c >= 1 for c, a in zip(cells, amounts, strict=True) if a > 0)
    assert all(c == 0 for c, a in zip(cells, amounts, strict=True) if a == 0)


def test_breakdown_total_is_the_status_reading_and_free_space_the_rest() -> None:
    status = ContextStatus(tokens=12_345, effective_window=30_000, window=40_000,
                           autocompact_at=25_500, anchored=True)
    view = breakdown(status, "SYSTEM PROMPT " * 50, TOOLS, MESSAGES)
    assert view.total == 12_345
    assert view.free == 30_000 - 12_345
    assert view.reserve == 10_000
    assert [p.label for p in view.parts][:2] == ["system prompt", "tool schemas"]

    out = io.StringIO()
    Console(file=out, width=120, color_system=None).print(render_breakdown(view, "sim-model"))
    text = out.getvalue()
    flat = " ".join(text.split())
    assert "48% of the way to auto-compact · 12,345 of 25,500 tokens" in flat
    assert "41% of the 30,000-token effective window" in flat
    assert "in the prompt" in text and "12,345" in text
    assert "free space" in text and f"{30_000 - 12_345:,}" in text
    assert "output reserve" in text and "10,000" in text
    assert "the auto-compact threshold (25,500 tokens, 13.2k from now)" in flat


def test_context_says_when_auto_compact_is_held_or_off() -> None:
    held = ContextStatus(tokens=27_000, effective_window=30_000, window=40_000,
                         autocompact_at=25_500, anchored=True,
                         autocompact_hold="auto-compact stopped after 3 failed summaries")
    off = ContextStatus(tokens=12_345, effective_window=30_000, window=40_000,
                        autocompact_at=0, anchored=True)
    for status, expected in ((held, "Now: auto-compact stopped after 3 failed summaries."),
                             (off, "41% used · 12,345 of 30,000 tokens")):
        out = io.StringIO()
        view = breakdown(status, "SYSTEM PROMPT", TOOLS, MESSAGES)
        Console(file=out, width=120, color_system=None).print(render_breakdown(view, "m"))
        assert expected in " ".join(out.getvalue().split())
