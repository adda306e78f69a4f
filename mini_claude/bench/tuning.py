"""Choosing a peer's best setting: the cheapest at the quality bar we hold ourselves to.

Comparing at equal quality keeps a setting that is cheap only because it forgets
(a summary so early and so bare that a quarter of the needed facts are gone) from
setting the bar: a setting qualifies with no overflow and at most LOST_LIMIT of
the needed facts lost on every tuning session, and the cheapest of those wins.
When no setting qualifies, the one that loses least is kept and flagged.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from mini_claude.bench.report import LOST_LIMIT, Row


@dataclass(frozen=True, slots=True)
class Candidate:
    """One setting of a product played on every tuning session."""

    title: str
    rows: tuple[Row, ...]

    @property
    def median_cost(self) -> float:
        return statistics.median(r.cost_usd for r in self.rows)

    @property
    def worst_cost(self) -> float:
        return max(r.cost_usd for r in self.rows)

    @property
    def overflows(self) -> int:
        return sum(r.overflowed for r in self.rows)

    @property
    def worst_lost(self) -> float:
        return max(r.lost_share for r in self.rows)

    @property
    def meets_bar(self) -> bool:
        return self.overflows == 0 and self.worst_lost <= LOST_LIMIT


@dataclass(frozen=True, slots=True)
class Choice:
    candidate: Candidate
    meets_bar: bool  # False: no setting met the bar; this one loses least

    def describe(self) -> str:
        how = (f"the cheapest meeting the bar, ${self.candidate.median_cost:.2f} median"
               if self.meets_bar else
               f"NO setting meets the bar; this one loses least ({self.candidate.worst_lost:.0%} "
               f"worst, {self.candidate.overflows} overflows, ${self.candidate.median_cost:.2f} "
               "median)")
        return f"{self.candidate.title} ({how})"


def choose(candidates: Sequence[Candidate], *, refusals_by_design: bool = False) -> Choice:
    """The cheapest candidate meeting the bar; else the one losing least (then overflowing
    least, then cheapest). A product that compacts when the server refuses a request
    (``refusals_by_design``) is not disqualified by those refusals, which cost it nothing."""
    if not candidates:
        raise ValueError("no candidate to choose from")
    qualified = [c for c in candidates
                 if c.meets_bar or (refusals_by_design and c.worst_lost <= LOST_LIMIT)]
    if qualified:
        return Choice(min(qualified, key=lambda c: c.median_cost), True)
    least = min(candidates, key=lambda c: (c.worst_lost, c.overflows, c.median_cost))
    return Choice(least, False)
