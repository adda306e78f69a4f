"""What a cheaper default would cost in facts: mini-claude's own settings on the tuning sessions.

Every request re-reads the context it carries, so a lower summary threshold (with old
results cleared inside a turn) costs less; it also keeps less of the session verbatim,
so more of what a later question needs rests on a summary. This report plays each
setting of ``own_candidates()`` under a fair and a poor summarizer beside the Codex CLI
row (the cheapest real product at 200K) on the same sessions, so anyone can see where
the cost goal and the quality bar part. Tuning sessions only: nothing is judged here.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from mini_claude.bench.aggregate import GOAL_WORST_RATIO, meets_cost_goal
from mini_claude.bench.report import GOAL_COST_RATIO, LOST_LIMIT, Row, removed_by
from mini_claude.bench.tuning import Candidate

FRONTIER_PEER = "codex"
FRONTIER_PART = "frontier"


@dataclass(frozen=True, slots=True)
class FrontierPoint:
    """One setting at one window: its rows per session under each summarizer."""

    title: str
    window: int
    fair: Mapping[int, Row]  # session index -> row
    poor: Mapping[int, Row]
    causes: dict[str, int] = field(default_factory=dict)  # what removed each lost fact

    def ratios(self, peer: Mapping[int, Row]) -> list[float]:
        """Its cost over the peer's, session by session."""
        return [row.cost_usd / peer[s].cost_usd for s, row in sorted(self.fair.items())
                if s in peer and peer[s].cost_usd > 0]

    @property
    def fair_runs(self) -> Candidate:
        return Candidate(self.title, tuple(self.fair.values()))

    @property
    def poor_runs(self) -> Candidate:
        return Candidate(self.title, tuple(self.poor.values()))

    @property
    def overflows(self) -> int:
        return self.fair_runs.overflows + self.poor_runs.overflows

    @property
    def meets_bar(self) -> bool:
        """The bar mini-claude is judged by, under either summarizer."""
        return self.fair_runs.meets_bar and self.poor_runs.meets_bar

    def meets_cost_goal(self, peer: Mapping[int, Row]) -> bool:
        return meets_cost_goal(self.ratios(peer))


def render_frontier(points: Sequence[FrontierPoint], peers: Mapping[int, Mapping[int, Row]],
                    session_names: Sequence[str], seconds: float) -> str:
    """frontier.md: each setting's cost against the peer's and what it lost."""
    lines = [
        "# mini-claude's cost against its losses, on the tuning sessions", "",
        "Sessions: " + "; ".join(session_names) + ". Each setting of mini-claude is played "
        "with the realistic (fair) summarizer and the poor one; *ours / Codex* is its cost over "
        "the Codex CLI row's (at the setting the benchmark gives it) on the same session. The "
        f"cost goal is <= {GOAL_COST_RATIO:.2f}x median and <= {GOAL_WORST_RATIO:.2f}x worst; "
        f"the quality bar is 0 overflows and at most {LOST_LIMIT:.0%} of the needed facts lost "
        f"on every session under either summarizer. The run took {seconds:.0f} s.", "",
        "| setting | window | cost median | ours / Codex median | ours / Codex worst "
        "| overflowed | lost worst (fair) | lost worst (poor) | lost facts removed by "
        "| cost goal | quality bar |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for point in points:
        peer = peers.get(point.window, {})
        ratios = point.ratios(peer)
        median = f"{statistics.median(ratios):.2f}x" if ratios else "-"
        worst = f"{max(ratios):.2f}x" if ratios else "-"
        lines.append(
            f"| {point.title} | {point.window // 1000}K | ${point.fair_runs.median_cost:.2f} | "
            f"{median} | {worst} | {point.overflows} | {point.fair_runs.worst_lost:.0%} | "
            f"{point.poor_runs.worst_lost:.0%} | {removed_by(point.causes) or '-'} | "
            f"{_yes(point.meets_cost_goal(peer))} | "
            f"{_yes(point.meets_bar)} |")
    both = [p.title + f" at {p.window // 1000}K" for p in points
            if p.meets_bar and p.meets_cost_goal(peers.get(p.window, {}))]
    lines += ["", "Settings meeting both: " + ("; ".join(both) if both else "none") + "."]
    return "\n".join(lines) + "\n"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"
