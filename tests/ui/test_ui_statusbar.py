"""The status line's numbers, bands and wording."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mini_claude.pricing import CostTracker
from mini_claude.protocol import ContextStatus, Usage
from mini_claude.ui.statusbar import (
    format_money,
    meter_bar,
    pressure,
    short_tokens,
    status_fragments,
    status_text,
)


def status(tokens: int, effective: int = 180_000, autocompact_at: int = 153_000) -> ContextStatus:
    return ContextStatus(tokens, effective, 200_000, autocompact_at, anchored=True)


@pytest.mark.parametrize(
    ("utilization", "band"),
    [(0.0, "calm"), (0.499, "calm"), (0.5, "steady"), (0.749, "steady"), (0.75, "warning"),
     (0.899, "warning"), (0.90, "alert"), (1.2, "alert")],
)
def test_colour_band_follows_pressure(utilization: float, band: str) -> None:
    assert pressure(utilization) == band


def test_meter_bar_fills_in_proportion_and_shows_any_use() -> None:
    assert meter_bar(0.0) == "░" * 10
    assert meter_bar(0.001) == "█" + "░" * 9
    assert meter_bar(0.34) == "███" + "░" * 7
    assert meter_bar(1.5) == "█" * 10


def test_status_line_gives_numbers_not_only_a_bar() -> None:
    costs = CostTracker()
    costs.add("claude-sonnet-4-5", Usage(input_tokens=1_000, cache_read_tokens=50_000,
                                          cache_write_tokens=2_000, output_tokens=500))
    line = status_text(status(61_200), costs, "claude-sonnet-4-5", "running run_shell")
    assert "40% ████░░░░░░" in line  # of the way to the 153k auto-compact threshold
    assert "61.2k/153k" in line
    assert "window 200k" in line
    assert "auto-compact in 91.8k" in line
    assert format_money(costs.dollars) in line
    assert line.endswith("running run_shell")


def test_status_line_says_when_auto_compact_is_off_or_due() -> None:
    costs = CostTracker()
    assert "auto-compact off" in status_text(status(10, autocompact_at=0), costs, "m", None)
    assert "auto-compact due" in status_text(status(160_000), costs, "m", None)


def test_the_percentage_carries_the_band_style() -> None:
    fragments = status_fragments(status(140_000), CostTracker(), "m", None)
    styled = {text.split()[0]: style for style, text, *_ in fragments if "%" in text}
    assert styled == {"92%": "class:status.alert"}


def test_unpriced_models_say_their_cost_is_incomplete() -> None:
    costs = CostTracker()
    costs.add("some-local-model", Usage(input_tokens=100, output_tokens=10))
    text = status_text(status(10), costs, "some-local-model", None)
    assert "price unknown" in text and "$0" not in text


def test_number_formats() -> None:
    assert short_tokens(180_000) == "180k"
    assert short_tokens(61_234) == "61.2k"
    assert short_tokens(950) == "950"
    assert format_money(0.0042) == "$0.0042"
    assert format_money(1.5) == "$1.50"


def test_above_the_threshold_the_reading_says_why() -> None:
    costs = CostTracker()
    over = status(160_650)  # 105% of the 153k auto-compact threshold
    assert "105% (compacts on the next message)" in status_text(over, costs, "m", None)
    assert "105% (compacting)" in status_text(over, costs, "m", "compacting (auto-compact)…")
    assert "105% (trimmed before the next call)" in status_text(over, costs, "m",
                                                                 "running read_file")
    assert "(over the window)" in status_text(status(190_000, autocompact_at=0), costs, "m",
                                              None)
    assert "(" not in status_text(status(150_000), costs, "m", None).split("·")[0]


def test_the_reading_never_promises_a_summary_that_will_not_come() -> None:
    stopped = "auto-compact stopped after 3 failed summaries"
    held = replace(status(160_650), autocompact_hold=stopped)
    line = status_text(held, CostTracker(), "m", None)
    assert "105% (/compact to summarize)" in line
    assert "auto-compact stopped after 3 failed summaries" in line
    assert "compacts on the next message" not in line and "auto-compact due" not in line


def test_the_percentage_measures_the_way_to_the_compaction_point_not_the_window() -> None:
    # A 1M window with auto-compact capped at 72k: at 70k the summary is nearly due.
    near = ContextStatus(70_000, 950_000, 1_000_000, 72_000, anchored=True)
    line = status_text(near, CostTracker(), "m", None)
    assert line.startswith(" context 97% ██████████ 70k/72k")
    assert "70k/72k" in line and "window 1M" in line
    assert near.window_utilization == pytest.approx(70_000 / 950_000)
    off = ContextStatus(70_000, 950_000, 1_000_000, 0, anchored=True)
    assert status_text(off, CostTracker(), "m", None).startswith(" context 7% ")
    assert "window" not in status_text(off, CostTracker(), "m", None)


MODEL = "claude-sonnet-4-5-20250929"


@pytest.mark.parametrize("width", [40, 60, 80, 120, 140])
def test_the_line_fits_its_width_and_drops_whole_fields_least_important_first(
        width: int) -> None:
    costs = CostTracker()
    costs.add(MODEL, Usage(input_tokens=300_000, output_tokens=20_000))
    line = status_text(status(61_200), costs, MODEL, "running run_shell", width)
    assert len(line) <= width
    fields = [f.strip() for f in line.split(" · ")]
    assert fields[0].startswith("context 40%")
    complete = {"auto-compact in 91.8k tokens", format_money(costs.dollars), MODEL,
                "running run_shell", "window 200k"}
    for field in fields[1:]:
        assert field in complete  # never cut mid-word
    order = ["running run_shell", format_money(costs.dollars), MODEL,
             "auto-compact in 91.8k tokens"]
    kept = [f for f in order if f in fields]
    assert kept == order[:len(kept)]  # what goes first is the least important
    if "window 200k" in fields:
        assert "███" in line  # the window goes before the bar
    if width >= 120:
        assert "61.2k/153k" in line and len(kept) == 4
    if width >= 140:
        assert "window 200k" in fields
    if width == 80:
        assert format_money(costs.dollars) in line and MODEL in line
    if width == 60:
        assert format_money(costs.dollars) in line


@pytest.mark.parametrize("width", [50, 56, 70, 120])
def test_a_mode_marker_keeps_the_reading_on_a_narrow_line(width: int) -> None:
    """The mode is never left out, but its key hint is, before the context reading would be."""
    mode = "⚠ bypass permissions on (shift+tab to cycle)"
    line = status_text(status(61_200), CostTracker(), MODEL, None, width, mode)
    assert len(line) <= width
    assert line.startswith(" ⚠ bypass permissions on ")
    assert "context 40%" in line
    assert ("(shift+tab to cycle)" in line) == (width >= 70)
