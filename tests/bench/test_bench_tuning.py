"""A peer's best setting is chosen at equal quality: the cheapest that meets our bar."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mini_claude.bench.report import Row
from mini_claude.bench.tuning import Candidate, choose
from tests.support.bench_rows import bench_row


def _row(cost: float, lost: int = 0, overflowed: int = 0, needed: int = 27) -> Row:
    return bench_row(cost, lost=lost, overflowed=overflowed, needed=needed)


def _candidate(title: str, *rows: Row) -> Candidate:
    return Candidate(title, tuple(rows))


def test_a_cheap_setting_that_loses_facts_does_not_set_the_bar() -> None:
    forgetful = _candidate("early", _row(4.0, lost=8), _row(5.0), _row(4.5))
    faithful = _candidate("late", _row(9.0, lost=1), _row(10.0), _row(11.0))
    dearer = _candidate("later", _row(12.0), _row(13.0), _row(12.5))
    choice = choose([forgetful, faithful, dearer])
    assert choice.meets_bar and choice.candidate.title == "late"


def test_an_overflow_on_any_session_disqualifies() -> None:
    overflowing = _candidate("tight", _row(3.0), _row(3.0, overflowed=1), _row(3.0))
    safe = _candidate("loose", _row(8.0), _row(8.0), _row(8.0))
    assert choose([overflowing, safe]).candidate.title == "loose"


def test_with_none_at_the_bar_the_one_that_loses_least_is_kept_and_flagged() -> None:
    worse = _candidate("a", _row(4.0, lost=8), _row(4.0, lost=2))
    better = _candidate("b", _row(9.0, lost=3), _row(9.0, lost=3))
    choice = choose([worse, better])
    assert not choice.meets_bar and choice.candidate.title == "b"
    assert "NO setting meets the bar" in choice.describe()


def test_the_bar_is_five_percent_on_every_session() -> None:
    at_bar = _candidate("at", _row(5.0, lost=1, needed=20), _row(5.0))  # exactly 5 %
    over = replace(at_bar, rows=(_row(5.0, lost=2, needed=20),))
    assert at_bar.meets_bar and not over.meets_bar
    with pytest.raises(ValueError):
        choose([])


def test_refusals_a_product_compacts_on_do_not_disqualify_it() -> None:
    """opencode compacts when the server refuses: the cheaper of its settings is kept, refusals
    and all, as long as it loses no more than the bar allows."""
    cheap = _candidate("cheap", _row(6.0, overflowed=9), _row(6.5, overflowed=4))
    dear = _candidate("dear", _row(7.0, overflowed=3), _row(7.2, overflowed=2))
    forgetful = _candidate("forgetful", _row(5.0, lost=5), _row(5.0))
    assert choose([cheap, dear, forgetful]).candidate.title == "dear"  # the modelled rule
    chosen = choose([cheap, dear, forgetful], refusals_by_design=True)
    assert chosen.meets_bar and chosen.candidate.title == "cheap"
