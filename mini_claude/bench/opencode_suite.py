"""The real opencode as a row: its settings searched on the tuning sessions, then played on the
held-out sessions beside the cheapest modelled real product and mini-claude.

opencode is the real product that runs at small windows the way a user runs a local model
(a declared 32K context), so the small-window cost goal is judged against it as well as
against Codex CLI. Its settings are searched the way a user tuning it would: each
documented compaction setting (and the model's declared output limit, which sets where it
compacts) on the tuning sessions only; the cheapest meeting the quality bar is kept.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mini_claude.bench.aggregate import GOAL_WORST_RATIO, meets_cost_goal, ratio_cell
from mini_claude.bench.real_opencode import OPENCODE_PACKAGE, REAL_OPENCODE, output_limit
from mini_claude.bench.report import (
    GOAL_COST_RATIO,
    LOST_LIMIT,
    REQUESTS_HEADING,
    Row,
    requests_cell,
)
from mini_claude.bench.tuning import Candidate, choose

OPENCODE_WINDOWS = (200_000, 32_000)
# The modelled real product the goal was judged against before opencode was a row.
MODELLED_RIVAL = "codex"


@dataclass(frozen=True, slots=True)
class OpenCodeSetting:
    """One documented setting: its ``compaction`` block and the model's declared output."""

    title: str
    compaction: dict[str, Any] = field(default_factory=dict)
    output: int | None = None  # None: the model's own (output_limit)
    windows: tuple[int, ...] = (200_000, 32_000)  # where the setting can change anything

    def output_at(self, window: int) -> int:
        return self.output if self.output is not None else output_limit(window)


OPENCODE_SETTINGS = (
    OpenCodeSetting("as installed"),
    OpenCodeSetting("compaction.prune on", {"prune": True}),
    # Below: what is kept after a summary, and where it compacts (a smaller declared output
    # leaves more of the window before it does); at 200K a summary is rare, so only at 32K.
    OpenCodeSetting("preserve_recent_tokens 2,000", {"preserve_recent_tokens": 2_000},
                    windows=(32_000,)),
    OpenCodeSetting("prune on, preserve_recent_tokens 2,000",
                    {"prune": True, "preserve_recent_tokens": 2_000}, windows=(32_000,)),
    OpenCodeSetting("prune on, output limit 4,096", {"prune": True}, output=4_096,
                    windows=(32_000,)),
)
# Chosen on the tuning sessions (docs/bench/real-opencode-tuning.md), one per window.
CHOSEN = {200_000: 0, 32_000: 2}


def chosen_setting(window: int) -> int:
    return CHOSEN.get(window, 0)


LABELS = {REAL_OPENCODE: "opencode (real CLI)", MODELLED_RIVAL: "Codex CLI (model)",
          "mini": "mini-claude"}


def _line(session: str, window: int, label: str, row: Row, peak: int) -> str:
    return (f"| {session} | {window // 1000}K | {label} | {requests_cell(row)} | "
            f"{row.overflowed} | {peak:,} | "
            f"{row.cache_read_share:.0%} | {row.cache_write_tokens:,} | ${row.cost_usd:.2f} | "
            f"{row.lost} ({row.lost_share:.0%}) | {row.tool_calls} |")


def verdict_lines(by: dict[tuple[int, int, str], Row], sessions: int) -> tuple[list[str],
                                                                                list[dict[str,
                                                                                          Any]]]:
    """Per window: mini-claude over real opencode, and over the cheaper of opencode and the
    modelled Codex CLI session by session (the goal's measure)."""
    lines = ["| window | opencode cost median | Codex CLI (model) cost median | mini-claude / "
             "opencode, median (worst) | mini-claude / cheapest real, median (worst) | goal |",
             "|---|---|---|---|---|---|"]
    found = []
    for window in OPENCODE_WINDOWS:
        real = [by[(s, window, REAL_OPENCODE)] for s in range(sessions)
                if (s, window, REAL_OPENCODE) in by]
        rival = [by[(s, window, MODELLED_RIVAL)] for s in range(sessions)
                 if (s, window, MODELLED_RIVAL) in by]
        over_real, over_cheapest = [], []
        for s in range(sessions):
            ours = by.get((s, window, "mini"))
            # opencode's refusals are part of how it works (it compacts when the server
            # refuses), so its row counts whatever they were; the model must not overflow.
            rows = [by[k] for k in ((s, window, REAL_OPENCODE), (s, window, MODELLED_RIVAL))
                    if k in by and (k[2] == REAL_OPENCODE or by[k].overflowed == 0)]
            if ours is None or not rows:
                continue
            if (s, window, REAL_OPENCODE) in by:
                over_real.append(ours.cost_usd / by[(s, window, REAL_OPENCODE)].cost_usd)
            over_cheapest.append(ours.cost_usd / min(r.cost_usd for r in rows))
        if not over_cheapest:
            continue
        met = meets_cost_goal(over_cheapest)
        lines.append(
            f"| {window // 1000}K | {_money(real)} | {_money(rival)} | {ratio_cell(over_real)} | "
            f"{ratio_cell(over_cheapest)} | <= {GOAL_COST_RATIO:.2f}x ({GOAL_WORST_RATIO:.2f}x): "
            f"**{'MET' if met else 'NOT MET'}** |")
        found.append({"window": window, "ours_over_opencode": over_real,
                      "ours_over_cheapest": over_cheapest})
    return lines, found


def _money(rows: list[Row]) -> str:
    return f"${statistics.median(r.cost_usd for r in rows):.2f}" if rows else "-"


def write_report(out: Path, session_names: Sequence[str], rows: list[tuple[int, int, str, Row,
                                                                          int]],
                 seconds: float, workers: int, version: str) -> str:
    """real-opencode.md and .json: every play, then the verdict per window."""
    intro = [
        "# The real opencode against mini-claude", "",
        f"Each held-out session played by the real opencode CLI ({version}, `{OPENCODE_PACKAGE}` "
        "from the npm registry) against the simulator, by the benchmark's model of Codex CLI (the "
        "cheapest real-product row of the main report) and by mini-claude, at a 200K window and "
        "at 32K. opencode runs as `opencode run` once per turn, each turn continuing one "
        "session, with a project `opencode.json` that points its Anthropic provider at the "
        "simulator and declares the model's window (context, and output: "
        f"{output_limit(200_000):,} at 200K as listed for Claude Sonnet, "
        f"{output_limit(32_000):,} at 32K as for a local model). Its settings: "
        + "; ".join(f"{w // 1000}K {OPENCODE_SETTINGS[chosen_setting(w)].title}"
                    for w in OPENCODE_WINDOWS)
        + ", chosen on the tuning sessions (real-opencode-tuning.md). The same scripted model "
        "answers every row through its own tools; cost is the server's token counts at the "
        f"same prices. The run took {seconds:.0f} s with {workers} worker(s).", ""]
    table = [f"| session | window | row | {REQUESTS_HEADING} | overflowed | peak prompt | "
             "cache-read share | cache-write tokens | cost | lost | tool calls |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    by: dict[tuple[int, int, str], Row] = {}
    for session, window, key, row, peak in rows:
        by[(session, window, key)] = row
        table.append(_line(session_names[session], window, LABELS[key], row, peak))
    verdict, found = verdict_lines(by, len(session_names))
    text = "\n".join([*intro, *table, "", *verdict]) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / "real-opencode.md").write_text(text, encoding="utf-8")
    dump = [{"session": session_names[s], "window": w, "row": LABELS[k], **asdict(r)}
            for (s, w, k), r in by.items()]
    (out / "real-opencode.json").write_text(json.dumps(
        {"rows": dump, "ratios": found, "seconds": seconds, "version": version}, indent=1),
        encoding="utf-8")
    return text


def write_tuning(out: Path, session_names: Sequence[str],
                 rows: dict[tuple[int, int], list[Row]], seconds: float, workers: int) -> str:
    """real-opencode-tuning.md: each setting's cost and losses on the tuning sessions, and the
    one kept per window (the cheapest meeting the bar, as for every peer)."""
    lines = ["# opencode's settings searched on the tuning sessions", "",
             "Sessions: " + "; ".join(session_names) + ". Each candidate is a documented "
             "setting of opencode's config (`compaction.prune`, "
             "`compaction.preserve_recent_tokens`, the model's declared `limit.output`, which "
             "sets where it compacts). The best is the cheapest (median cost) among those "
             f"losing at most {LOST_LIMIT:.0%} of the needed facts on every tuning session. "
             "Refusals do not disqualify a setting here as an overflow disqualifies a modelled "
             "peer's: opencode compacts when the server refuses a request and the turn goes on "
             "(a refused request costs nothing), so they are how it works at a small window; "
             "counting them would keep a dearer setting and flatter mini-claude. The run took "
             f"{seconds:.0f} s on {workers} worker(s).", "",
             "| setting | window | cost median | cost worst | refused (overflowed) | lost worst "
             "| meets the bar |", "|---|---|---|---|---|---|---|"]
    chosen = []
    for window in OPENCODE_WINDOWS:
        candidates = [Candidate(setting.title, tuple(rows.get((window, n), [])))
                      for n, setting in enumerate(OPENCODE_SETTINGS)]
        candidates = [c for c in candidates if c.rows]
        if not candidates:
            continue
        for c in candidates:
            lines.append(f"| {c.title} | {window // 1000}K | ${c.median_cost:.2f} | "
                         f"${c.worst_cost:.2f} | {c.overflows} | {c.worst_lost:.0%} | "
                         f"{'yes' if c.worst_lost <= LOST_LIMIT else 'no'} |")
        best = choose(candidates, refusals_by_design=True)
        chosen.append(f"- best at {window // 1000}K: {best.describe()}")
    text = "\n".join([*lines, "", *chosen]) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / "real-opencode-tuning.md").write_text(text, encoding="utf-8")
    dump = [{"window": w, "setting": OPENCODE_SETTINGS[n].title, "rows": [asdict(r) for r in rs]}
            for (w, n), rs in sorted(rows.items())]
    (out / "real-opencode-tuning.json").write_text(
        json.dumps({"candidates": dump, "seconds": seconds}, indent=1), encoding="utf-8")
    return text
