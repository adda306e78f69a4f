"""From raw runs to the table: one row per strategy and window, a verdict, and why.

Every figure is derived from the simulator's records (the real tokenizer, the
real cache accounting), never from the agent's own view of itself, except the
estimate error, which compares the two.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from mini_claude.bench.runner import (
    BENCH_PRICE,
    CompactionMark,
    NeedCheck,
    RequestRecord,
    RunResult,
)
from mini_claude.bench.timing import response_seconds
from mini_claude.protocol import at_admission, cost_rows

# Tiers whose edit changes old history and so breaks the prompt cache from that point on.
HISTORY_EDITING_TIERS = tuple(cost_rows())  # budget, snip, microcompact, compact


@dataclass(frozen=True, slots=True)
class Row:
    strategy: str
    title: str
    ours: bool
    window: int
    requests: int
    summary_requests: int
    overflowed: int
    peak_utilization: float
    input_tokens: int
    cache_read_share: float
    cache_write_tokens: int
    output_tokens: int
    cost_usd: float
    compactions: int
    retained: int
    needed: int
    recovered: int
    recovery_calls: int
    recovery_cost_usd: float
    estimate_error_mean_pct: float
    estimate_error_worst_pct: float
    pipeline_ms_median: float
    pipeline_ms_worst: float
    tool_calls: int
    turn_errors: int
    ablation: bool = False
    notes_updates: int = 0  # background session-notes requests
    from_notes: int = 0  # compactions the notes served without a call
    wait_median_s: float = 0.0  # simulated seconds the user waited per compaction
    wait_p95_s: float = 0.0
    wait_total_s: float = 0.0
    pings: int = 0  # keep-alive reads of the cache while the user was away

    @property
    def retention(self) -> float:
        return self.retained / self.needed if self.needed else 1.0

    @property
    def lost(self) -> int:
        return self.needed - self.retained - self.recovered

    @property
    def lost_share(self) -> float:
        return self.lost / self.needed if self.needed else 0.0


@dataclass(frozen=True, slots=True)
class CostBreakdown:
    """Where a row's dollars went."""

    uncached_input: float
    cache_write: float
    cache_read: float
    output: float
    summary_calls: float


@dataclass(frozen=True, slots=True)
class TierCost:
    """Requests sent right after a tier edited history, and what their cache writes cost."""

    tier: str
    firings: int
    requests: int
    cache_write_tokens: int
    cache_write_usd: float
    tokens_freed: int


@dataclass
class Verdict:
    window: int
    ours_zero_overflow: bool
    ours_cheapest: bool
    ours_retention_best: bool  # fewest lost facts of all rows
    ours_lost_within_limit: bool = True  # lost at most LOST_LIMIT of the needed facts
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return (self.ours_zero_overflow and self.ours_cheapest and self.ours_retention_best
                and self.ours_lost_within_limit)


def _answered(requests: Iterable[RequestRecord]) -> list[RequestRecord]:
    return [r for r in requests if r.answered]


def estimate_errors(requests: Sequence[RequestRecord]) -> list[float]:
    """Relative error of the agent's estimate against the server's count, per request."""
    return [abs(r.estimate - r.prompt_tokens) / r.prompt_tokens
            for r in requests if r.estimate is not None and r.prompt_tokens > 0]


def request_seconds(record: RequestRecord) -> float:
    return response_seconds(record.input_tokens + record.cache_write_tokens,
                            record.cache_read_tokens, record.output_tokens)


@dataclass(frozen=True, slots=True)
class Waits:
    """Simulated seconds the user waited at each compaction (see bench/timing.py)."""

    per_compaction: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.per_compaction) if self.per_compaction else 0.0

    @property
    def p95(self) -> float:
        if not self.per_compaction:
            return 0.0
        ordered = sorted(self.per_compaction)
        return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]

    @property
    def total(self) -> float:
        return sum(self.per_compaction)


def compaction_waits(run: RunResult) -> Waits:
    return Waits(tuple(_wait(run.requests, mark) for mark in run.compactions))


def _wait(requests: Sequence[RequestRecord], mark: CompactionMark) -> float:
    """What the compaction waited for notes still on their way (none when they had arrived),
    then, when no notes could stand in, the summary call whole."""
    if mark.from_notes:
        return mark.waited_seconds
    calls = []
    for record in requests[mark.request_index:]:
        if not record.is_summary:
            break
        calls.append(record)
    return mark.waited_seconds + sum(request_seconds(r) for r in calls)


def make_row(run: RunResult) -> Row:
    answered = _answered(run.requests)
    prompt = sum(r.prompt_tokens for r in answered)
    reads = sum(r.cache_read_tokens for r in answered)
    errors = estimate_errors(run.requests)
    pipeline_ms = [s * 1000 for s in run.pipeline_seconds] or [0.0]
    peak = max((r.prompt_tokens for r in run.requests), default=0)
    waits = compaction_waits(run)
    return Row(
        strategy=run.strategy,
        title=run.title,
        ours=run.ours,
        window=run.window,
        requests=len(run.requests),
        summary_requests=sum(1 for r in run.requests if r.is_summary),
        pings=sum(1 for r in run.requests if r.is_ping),
        overflowed=sum(1 for r in run.requests if r.overflowed),
        peak_utilization=peak / run.effective_window,
        input_tokens=prompt,
        cache_read_share=reads / prompt if prompt else 0.0,
        cache_write_tokens=sum(r.cache_write_tokens for r in answered),
        output_tokens=sum(r.output_tokens for r in answered),
        cost_usd=sum(r.cost for r in answered),
        compactions=len(run.compactions),
        retained=sum(1 for n in run.needs if n.retained),
        needed=len(run.needs),
        recovered=sum(1 for n in run.needs if n.recovered),
        recovery_calls=run.recovery.calls,
        recovery_cost_usd=run.recovery.cost,
        estimate_error_mean_pct=100 * statistics.fmean(errors) if errors else 0.0,
        estimate_error_worst_pct=100 * max(errors, default=0.0),
        pipeline_ms_median=statistics.median(pipeline_ms),
        pipeline_ms_worst=max(pipeline_ms),
        tool_calls=run.tool_calls,
        turn_errors=len(run.turn_errors),
        ablation=run.ablation,
        notes_updates=sum(1 for r in run.requests if r.is_notes),
        from_notes=sum(1 for c in run.compactions if c.from_notes),
        wait_median_s=round(waits.median, 2),
        wait_p95_s=round(waits.p95, 2),
        wait_total_s=round(waits.total, 1),
    )


def cost_breakdown(run: RunResult) -> CostBreakdown:
    answered = _answered(run.requests)
    per_million = 1_000_000

    def spent(tokens: str, rate: str) -> float:
        total: float = sum(getattr(r, tokens) * getattr(BENCH_PRICE.for_prompt(r.prompt_tokens),
                                                        rate) for r in answered)
        return total / per_million

    return CostBreakdown(
        uncached_input=spent("input_tokens", "input"),
        cache_write=spent("cache_write_tokens", "cache_write"),
        cache_read=spent("cache_read_tokens", "cache_read"),
        output=spent("output_tokens", "output"),
        summary_calls=sum(r.cost for r in answered if r.is_summary or r.is_notes),
    )


def tier_costs(run: RunResult) -> list[TierCost]:
    """Cache writes of the requests that followed each history-editing tier.

    A request after an edit re-writes the prompt from the edited point on;
    that write is the price of the edit (less what the smaller prompt saves
    on every later read, which the total cost column already reflects).
    """
    out = []
    for tier in HISTORY_EDITING_TIERS:
        after = [r for r in _answered(run.requests) if tier in r.tiers]
        writes = sum(r.cache_write_tokens for r in after)
        if tier == "compact":
            firings = run.compaction_attempts
            freed = sum(max(0, c.tokens_before - c.tokens_after) for c in run.compactions)
        else:
            firings, freed = run.tier_events.get(tier, 0), run.tokens_freed.get(tier, 0)
        write_usd = sum(r.cache_write_tokens * BENCH_PRICE.for_prompt(r.prompt_tokens).cache_write
                        for r in after) / 1_000_000
        out.append(TierCost(tier, firings, len(after), writes, write_usd, freed))
    return out


LOSS_CAUSES = tuple(reversed(HISTORY_EDITING_TIERS))  # the latest edit first


def loss_cause(check: NeedCheck) -> str:
    """Why a needed fact was missing from the turn's first call, in one word."""
    if check.retained:
        return "kept"
    if check.request_index is None:
        return "turn failed"
    if check.last_seen is None:
        return "never in context"
    for tier in LOSS_CAUSES:
        if tier in check.lost_after:
            return "compaction" if tier == "compact" else tier
    return "other"


def loss_causes(checks: Iterable[NeedCheck]) -> dict[str, int]:
    """How many lost facts each cause (``loss_cause``) took, in the order first met."""
    causes: dict[str, int] = {}
    for check in checks:
        if check.lost:
            cause = loss_cause(check)
            causes[cause] = causes.get(cause, 0) + 1
    return causes


def removed_by(causes: dict[str, int]) -> str:
    """``2 compaction, 1 microcompact``: the commonest first; empty when nothing was lost."""
    return ", ".join(f"{count} {cause}" for cause, count in
                     sorted(causes.items(), key=lambda item: -item[1]))


def loss_note(run: RunResult) -> str:
    """``mini-claude lost 2 of 27 needed facts (removed by: 2 compaction; 5 more recovered)``."""
    causes = loss_causes(run.needs)
    lost = sum(causes.values())
    recovered = sum(1 for check in run.needs if check.recovered)
    detail = removed_by(causes)
    return (f"{run.title} lost {lost} of {len(run.needs)} needed facts"
            + (f" (removed by: {detail})" if detail else "")
            + (f"; {recovered} more were read back" if recovered else ""))


LOSS_COLUMNS = ("turn failed", "never in context", "compaction", "microcompact", "snip",
                "budget", "other")


def loss_table(runs: Sequence[RunResult]) -> str:
    """Missing facts by cause; "recovered" counts those of them read back through a pointer."""
    lines = ["| strategy | window | needed | in context | " + " | ".join(LOSS_COLUMNS)
             + " | recovered | lost |", "|" + "---|" * (6 + len(LOSS_COLUMNS))]
    for run in runs:
        counts = {cause: 0 for cause in ["kept", *LOSS_COLUMNS]}
        for check in run.needs:
            counts[loss_cause(check)] += 1
        recovered = sum(1 for check in run.needs if check.recovered)
        lost = sum(1 for check in run.needs if check.lost)
        cells = " | ".join(str(counts[c]) for c in LOSS_COLUMNS)
        lines.append(f"| {run.title} | {run.window // 1000}K | {len(run.needs)} | "
                     f"{counts['kept']} | {cells} | {recovered} | {lost} |")
    return "\n".join(lines)


def failures_table(runs: Sequence[RunResult]) -> str:
    """Turns that ended in an error and compactions that did not happen, with the first reason."""
    lines = ["| strategy | window | turns ended by an error | first at turn | failed compactions "
             "| first failure |", "|---|---|---|---|---|---|"]
    for run in runs:
        first_error = run.turn_errors[0] if run.turn_errors else None
        first_failure = run.compaction_failures[0] if run.compaction_failures else None
        lines.append(
            f"| {run.title} | {run.window // 1000}K | {len(run.turn_errors)} | "
            f"{first_error[0] if first_error else '-'} | {len(run.compaction_failures)} | "
            f"{_one_line(first_failure[2]) if first_failure else '-'} |")
    return "\n".join(lines)


def _one_line(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split()).replace("|", "/")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


LOST_LIMIT = 0.05


def judge(rows: Sequence[Row], window: int) -> Verdict:
    """The bar: zero overflows, cheapest zero-overflow row, fewest lost facts, lost <= 5%."""
    mine = [r for r in rows if r.window == window and r.ours]
    if not mine:
        return Verdict(window, False, False, False, False, ["no mini-claude row at this window"])
    ours = mine[0]
    others = [r for r in rows if r.window == window and not r.ours and not r.ablation]
    rivals = [r for r in others if r.overflowed == 0]
    verdict = Verdict(
        window,
        ours_zero_overflow=ours.overflowed == 0,
        ours_cheapest=all(ours.cost_usd <= r.cost_usd for r in rivals),
        ours_retention_best=all(ours.lost <= r.lost for r in others),
        ours_lost_within_limit=ours.lost_share <= LOST_LIMIT,
    )
    for rival in rivals:
        if rival.cost_usd < ours.cost_usd:
            verdict.notes.append(f"{rival.title} is cheaper: ${rival.cost_usd:.2f} against "
                                 f"${ours.cost_usd:.2f}")
    for other in others:
        if other.lost < ours.lost:
            verdict.notes.append(f"{other.title} loses fewer facts: {other.lost}/{other.needed} "
                                 f"against {ours.lost}/{ours.needed}")
    if not verdict.ours_lost_within_limit:
        verdict.notes.append(f"mini-claude lost {ours.lost} of {ours.needed} needed facts "
                             f"({ours.lost_share:.0%}, the limit is {LOST_LIMIT:.0%})")
    if ours.overflowed:
        verdict.notes.append(f"mini-claude overflowed {ours.overflowed} times")
    return verdict


# ---- Markdown --------------------------------------------------------------------------

REQUESTS_HEADING = "requests (summaries; keep-alive pings)"


def requests_cell(row: Row) -> str:
    """Every request, the summaries among them and, when there were any, the pings."""
    pings = f"; {row.pings} pings" if row.pings else ""
    return f"{row.requests} ({row.summary_requests}{pings})"


COLUMNS = (
    ("strategy", "strategy"), ("window", "window"),
    ("requests", REQUESTS_HEADING),
    ("overflowed", "overflowed"), ("peak", "peak util."), ("input", "input tokens"),
    ("read_share", "cache-read share"), ("writes", "cache-write tokens"),
    ("output", "output tokens"), ("cost", "cost"), ("compactions", "compactions"),
    ("retention", "facts in context"), ("recovered", "recovered (calls, $)"),
    ("lost", "lost"), ("estimate", "estimate error mean / worst"),
    ("pipeline", "pipeline ms median / worst"),
    ("wait", "compaction wait s median / p95 / total"),
)


def _cells(row: Row) -> dict[str, str]:
    name = f"**{row.title}**" if row.ours else row.title
    return {
        "strategy": name,
        "window": f"{row.window // 1000}K",
        "requests": requests_cell(row),
        "overflowed": str(row.overflowed),
        "peak": f"{row.peak_utilization:.0%}",
        "input": f"{row.input_tokens:,}",
        "read_share": f"{row.cache_read_share:.0%}",
        "writes": f"{row.cache_write_tokens:,}",
        "output": f"{row.output_tokens:,}",
        "cost": f"${row.cost_usd:.2f}",
        "compactions": str(row.compactions),
        "retention": f"{row.retained}/{row.needed}",
        "recovered": f"{row.recovered} ({row.recovery_calls}, ${row.recovery_cost_usd:.2f})",
        "lost": f"{row.lost} ({row.lost_share:.0%})",
        "estimate": f"{row.estimate_error_mean_pct:.1f}% / {row.estimate_error_worst_pct:.1f}%",
        "pipeline": f"{row.pipeline_ms_median:.2f} / {row.pipeline_ms_worst:.1f}",
        "wait": f"{row.wait_median_s:.1f} / {row.wait_p95_s:.1f} / {row.wait_total_s:.0f}",
    }


def markdown_table(rows: Sequence[Row]) -> str:
    header = "| " + " | ".join(title for _, title in COLUMNS) + " |"
    rule = "|" + "|".join("---" for _ in COLUMNS) + "|"
    lines = [header, rule]
    for row in rows:
        cells = _cells(row)
        lines.append("| " + " | ".join(cells[key] for key, _ in COLUMNS) + " |")
    return "\n".join(lines)


def breakdown_table(runs: Sequence[RunResult]) -> str:
    lines = ["| strategy | window | uncached input | cache writes | cache reads | output | "
             "of which summary and notes calls |", "|---|---|---|---|---|---|---|"]
    for run in runs:
        b = cost_breakdown(run)
        lines.append(f"| {run.title} | {run.window // 1000}K | ${b.uncached_input:.2f} | "
                     f"${b.cache_write:.2f} | ${b.cache_read:.2f} | ${b.output:.2f} | "
                     f"${b.summary_calls:.2f} |")
    return "\n".join(lines)


def tier_table(run: RunResult) -> str:
    lines = [f"mini-claude at {run.window // 1000}K: requests sent right after a history edit",
             "", "| tier | times fired | requests after it | their cache writes | cost of "
             "those writes | tokens freed |", "|---|---|---|---|---|---|"]
    summary_cost = sum(r.cost for r in run.requests if r.is_summary or r.is_notes)
    for cost in tier_costs(run):
        lines.append(f"| {cost.tier} | {cost.firings} | {cost.requests} | "
                     f"{cost.cache_write_tokens:,} | ${cost.cache_write_usd:.2f} | "
                     f"{cost.tokens_freed:,} |")
    lines.append(f"| (summary and notes calls themselves) | {run.compaction_attempts} | - | - | "
                 f"${summary_cost:.2f} in all | - |")
    for tier in at_admission():
        if run.tokens_freed.get(tier):
            lines.append(f"| {tier} (at admission, no cache break) | "
                         f"{run.tier_events.get(tier, 0)} | - | - | - | "
                         f"{run.tokens_freed[tier]:,} |")
    return "\n".join(lines)


# The real products' policies; ours must cost at most GOAL_COST_RATIO of the cheapest of them.
REAL_PRODUCTS = ("claude-code", "codex", "server")
GOAL_COST_RATIO = 0.80
GOAL_WAIT_P95_SECONDS = 1.0


def goal_lines(rows: Sequence[Row], window: int) -> list[str]:
    """This round's goals at one window: cost against the real products, and the wait."""
    ours = next((r for r in rows if r.window == window and r.ours), None)
    rivals = [r for r in rows if r.window == window and r.strategy in REAL_PRODUCTS]
    if ours is None or not rivals:
        return []
    cheapest = min(rivals, key=lambda r: r.cost_usd)
    ratio = ours.cost_usd / cheapest.cost_usd if cheapest.cost_usd else 0.0
    cost_met = ratio <= GOAL_COST_RATIO and ours.overflowed == 0 and (
        ours.lost_share <= LOST_LIMIT)
    wait_met = ours.wait_p95_s <= GOAL_WAIT_P95_SECONDS
    return [
        f"- {window // 1000}K cost goal: **{'MET' if cost_met else 'NOT MET'}** "
        f"({ratio:.2f}x {cheapest.title} ${cheapest.cost_usd:.2f}, the cheapest real product; "
        f"goal <= {GOAL_COST_RATIO:.2f}x with 0 overflows and <= {LOST_LIMIT:.0%} lost)",
        f"- {window // 1000}K wait goal: **{'MET' if wait_met else 'NOT MET'}** "
        f"(p95 {ours.wait_p95_s:.1f} s per compaction, median {ours.wait_median_s:.1f} s, "
        f"{ours.from_notes} of {ours.compactions} compactions from session notes; "
        f"goal p95 <= {GOAL_WAIT_P95_SECONDS:.0f} s)",
    ]


def verdict_lines(verdicts: Sequence[Verdict]) -> list[str]:
    lines = []
    for v in verdicts:
        status = "PASS" if v.passed else "NOT MET"
        checks = (f"zero overflows: {'yes' if v.ours_zero_overflow else 'no'}; "
                  f"cheapest zero-overflow row: {'yes' if v.ours_cheapest else 'no'}; "
                  f"fewest lost facts: {'yes' if v.ours_retention_best else 'no'}; "
                  f"lost <= {LOST_LIMIT:.0%}: {'yes' if v.ours_lost_within_limit else 'no'}")
        lines.append(f"- {v.window // 1000}K window: **{status}** ({checks})")
        lines.extend(f"  - {note}" for note in v.notes)
    return lines


def to_json(runs: Sequence[RunResult], rows: Sequence[Row], verdicts: Sequence[Verdict],
            extra: dict[str, Any]) -> dict[str, Any]:
    """Everything needed to redo the analysis: rows, per-request records, checks."""
    return {
        "rows": [asdict(r) | {"retention": r.retention, "lost": r.lost} for r in rows],
        "verdicts": [asdict(v) | {"passed": v.passed} for v in verdicts],
        "runs": [
            {
                "strategy": run.strategy,
                "window": run.window,
                "effective_window": run.effective_window,
                "wall_seconds": round(run.wall_seconds, 2),
                "pages_read_after_saved_output": run.pages_read,
                "recovery": asdict(run.recovery),
                "tokens_freed": run.tokens_freed,
                "tier_events": run.tier_events,
                "turn_errors": [list(e) for e in run.turn_errors],
                "compaction_failures": [list(e) for e in run.compaction_failures],
                "compactions": [asdict(c) for c in run.compactions],
                "needs": [asdict(n) for n in run.needs],
                "cost_breakdown": asdict(cost_breakdown(run)),
                "requests": [asdict(r) for r in run.requests],
            }
            for run in runs
        ],
        **extra,
    }
