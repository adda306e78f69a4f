"""Rows of several sessions folded into one judgement: median and worst per row.

A ratio is taken session by session (ours against the cheapest real-product
row of that same session), then its median and worst are reported, so one
easy or hard session cannot carry the verdict.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from mini_claude.bench.report import GOAL_COST_RATIO, LOST_LIMIT, Row
from mini_claude.bench.strategies import Strategy, strategy_named

GOAL_WORST_RATIO = 0.90


@dataclass(frozen=True, slots=True)
class SessionRows:
    """The rows of one session (all windows, all strategies)."""

    name: str
    rows: tuple[Row, ...]


def is_real(strategy: Strategy, window: int) -> bool:
    """A row a real product can run at this window (not an extrapolation of its policy)."""
    return strategy.real_from_window is not None and window >= strategy.real_from_window


def row_kind(key: str, window: int) -> str:
    strategy = strategy_named(key)
    if strategy.ours or strategy.ablation:
        return "ours"
    if is_real(strategy, window):
        return "real product"
    if strategy.real_from_window is not None:
        return "extrapolation"
    return "baseline"


def cheapest_real(rows: Sequence[Row], window: int) -> Row | None:
    """The cheapest real-product row with no overflow at this window, if any."""
    rivals = [r for r in rows if r.window == window and not r.ours and r.overflowed == 0
              and row_kind(r.strategy, window) == "real product"]
    return min(rivals, key=lambda r: r.cost_usd) if rivals else None


@dataclass(frozen=True, slots=True)
class Ratio:
    session: str
    ours: float
    rival: str
    rival_cost: float

    @property
    def value(self) -> float:
        return self.ours / self.rival_cost if self.rival_cost else 0.0


def ratios(sessions: Sequence[SessionRows], window: int) -> list[Ratio]:
    out = []
    for session in sessions:
        ours = next((r for r in session.rows if r.window == window and r.ours), None)
        rival = cheapest_real(session.rows, window)
        if ours is not None and rival is not None:
            out.append(Ratio(session.name, ours.cost_usd, rival.title, rival.cost_usd))
    return out


def summary_table(sessions: Sequence[SessionRows], windows: Sequence[int]) -> str:
    """Per row and window: its kind, median and worst cost, overflows, lost facts, and
    ours against it session by session (median and worst)."""
    lines = ["| strategy | window | kind | cost median | cost worst | overflowed (all sessions) "
             "| lost worst | ours / this row median | ours / this row worst |",
             "|---|---|---|---|---|---|---|---|---|"]
    keys = list(dict.fromkeys(r.strategy for s in sessions for r in s.rows))
    for window in windows:
        for key in keys:
            rows = [r for s in sessions for r in s.rows if r.strategy == key and r.window == window]
            if not rows:
                continue
            costs = [r.cost_usd for r in rows]
            mine = [next((o for o in s.rows if o.window == window and o.ours), None)
                    for s in sessions]
            per = [o.cost_usd / r.cost_usd for o, r in zip(mine, rows, strict=False)
                   if o is not None and r.cost_usd]
            title = f"**{rows[0].title}**" if rows[0].ours else rows[0].title
            ratio_cells = ("-", "-") if rows[0].ours or not per else (
                ratio_text(statistics.median(per), GOAL_COST_RATIO),
                ratio_text(max(per), GOAL_WORST_RATIO))
            lines.append(
                f"| {title} | {window // 1000}K | {row_kind(key, window)} | "
                f"${statistics.median(costs):.2f} | ${max(costs):.2f} | "
                f"{sum(r.overflowed for r in rows)} | "
                f"{max(r.lost_share for r in rows):.0%} | {ratio_cells[0]} | {ratio_cells[1]} |")
    return "\n".join(lines)


def meets_cost_goal(values: Sequence[float]) -> bool:
    """Ours over the rival's cost, one value a session: median and worst within the goal."""
    return bool(values) and (statistics.median(values) <= GOAL_COST_RATIO
                             and max(values) <= GOAL_WORST_RATIO)


def ratio_text(value: float, limit: float) -> str:
    """``0.81x``; with a third decimal when two would hide which side of ``limit`` it is on
    (0.901x is over a 0.90x goal, which "0.90x" would not show)."""
    text = f"{value:.2f}"
    if text == f"{limit:.2f}" and value != limit:
        text = f"{value:.3f}"
    return f"{text}x"


def ratio_cell(values: Sequence[float]) -> str:
    """``0.81x (0.86x)``: the median and worst of ratios taken session by session."""
    if not values:
        return "-"
    median, worst = statistics.median(values), max(values)
    return f"{ratio_text(median, GOAL_COST_RATIO)} ({ratio_text(worst, GOAL_WORST_RATIO)})"


def goal_lines(sessions: Sequence[SessionRows], windows: Sequence[int],
               poor: Sequence[SessionRows] = ()) -> list[str]:
    """The cost goal at each window (median and worst ratio) and the loss goal."""
    lines = []
    for window in windows:
        found = ratios(sessions, window)
        if not found:
            lines.append(f"- {window // 1000}K: no real-product row runs at this window")
            continue
        values = [r.value for r in found]
        median, worst = statistics.median(values), max(values)
        met = meets_cost_goal(values)
        judged = {r.session for r in found}
        per = "; ".join([f"{r.session}: {ratio_text(r.value, GOAL_WORST_RATIO)} {r.rival}"
                         for r in found] + [
            f"{s.name}: not judged, every real-product row overflowed" for s in sessions
            if s.name not in judged and any(r.window == window and r.ours for r in s.rows)])
        lines.append(
            f"- {window // 1000}K cost goal: **{'MET' if met else 'NOT MET'}**: median "
            f"{ratio_text(median, GOAL_COST_RATIO)}, worst {ratio_text(worst, GOAL_WORST_RATIO)}"
            " the cheapest real-product row of the same "
            f"session (goal <= {GOAL_COST_RATIO:.2f}x median, <= {GOAL_WORST_RATIO:.2f}x "
            f"worst; {per})")
    for label, group in (("fair", sessions), ("poor", poor)):
        ours = [r for s in group for r in s.rows if r.ours]
        if not ours:
            continue
        overflows = sum(r.overflowed for r in ours)
        worst_lost = max(r.lost_share for r in ours)
        met = overflows == 0 and worst_lost <= LOST_LIMIT
        lines.append(f"- mini-claude with the {label} summarizer: **{'MET' if met else 'NOT MET'}**"
                     f": {overflows} overflows, worst session lost {worst_lost:.0%} of its "
                     f"needed facts (goal 0 and <= {LOST_LIMIT:.0%} on every session)")
    return lines
