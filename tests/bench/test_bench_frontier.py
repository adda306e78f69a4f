"""mini-claude's own cheaper settings are played against what they lose, on tuning seeds only."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mini_claude.bench import BenchUsageError, build_parser
from mini_claude.bench.frontier import FRONTIER_PEER, FrontierPoint, render_frontier
from mini_claude.bench.report import Row
from mini_claude.bench.sessions import TUNING_SEEDS
from mini_claude.bench.strategies import (
    FRONTIER_THRESHOLDS,
    PREVIOUS_THRESHOLD,
    own_candidates,
)
from mini_claude.bench.suite import BenchOptions, _strategy_of, plan_jobs
from mini_claude.settings import Settings
from tests.support.bench_rows import bench_row


def _row(cost: float, lost: int = 0) -> Row:
    return bench_row(cost, strategy="mini", ours=True, lost=lost)


def _point(costs: list[float], fair_lost: int = 0, poor_lost: int = 0) -> FrontierPoint:
    fair = {i: _row(c, lost=fair_lost if i == 0 else 0) for i, c in enumerate(costs)}
    poor = {i: _row(c, lost=poor_lost if i == 1 else 0) for i, c in enumerate(costs)}
    return FrontierPoint("x", 200_000, fair, poor)


def test_each_threshold_also_clears_inside_a_turn_and_the_first_two_are_the_defaults() -> None:
    base = Settings(context_window=200_000)
    candidates = own_candidates()
    assert candidates[0].configure(base) == base
    assert base.clearing_pays  # the default clears inside a turn at every window
    previous = candidates[1].configure(base)
    assert previous.autocompact_tokens == PREVIOUS_THRESHOLD and not previous.clearing_pays
    others = [c.configure(base) for c in candidates[2:]]
    assert [s.autocompact_tokens for s in others] == list(FRONTIER_THRESHOLDS)
    assert all(s.clearing_pays for s in others)


def test_a_setting_that_loses_under_the_poor_summarizer_misses_the_bar() -> None:
    peer = {0: _row(10.0), 1: _row(10.0), 2: _row(10.0)}
    cheap = _point([7.0, 7.5, 7.8], poor_lost=2)
    assert cheap.meets_cost_goal(peer) and not cheap.meets_bar
    faithful = _point([9.0, 9.5, 9.8])
    assert faithful.meets_bar and not faithful.meets_cost_goal(peer)
    assert cheap.ratios(peer) == pytest.approx([0.70, 0.75, 0.78])


def test_one_session_over_the_worst_ratio_misses_the_cost_goal() -> None:
    peer = {0: _row(10.0), 1: _row(10.0), 2: _row(10.0)}
    assert not _point([7.0, 7.0, 9.5]).meets_cost_goal(peer)


def test_the_report_names_the_settings_that_meet_both_or_none() -> None:
    peer = {200_000: {0: _row(10.0), 1: _row(10.0)}}
    text = render_frontier([_point([7.0, 7.0], poor_lost=3)], peer, ["a", "b"], 1.0)
    assert "Settings meeting both: none." in text
    assert "| x | 200K | $7.00 | 0.70x | 0.70x | 0 | 0% | 11% | - | yes | no |" in text
    both = render_frontier([_point([7.0, 7.0])], peer, ["a", "b"], 1.0)
    assert "Settings meeting both: x at 200K." in both
    caused = replace(_point([7.0, 7.0], poor_lost=3), causes={"compaction": 1, "microcompact": 2})
    assert "| 11% | 2 microcompact, 1 compaction | yes |" in render_frontier(
        [caused], peer, ["a", "b"], 1.0)


def test_the_frontier_plays_every_setting_under_both_summarizers_beside_codex() -> None:
    options = BenchOptions.from_args(build_parser().parse_args(
        ["--frontier", "--windows", "200000"]))
    assert {s.seed for s in options.sessions} == set(TUNING_SEEDS)
    jobs = plan_jobs(options)
    per_session = len(own_candidates()) * 2 + 1
    assert len(jobs) == per_session * len(TUNING_SEEDS)
    peers = [j for j in jobs if j.strategy == FRONTIER_PEER]
    assert len(peers) == len(TUNING_SEEDS) and all(j.variant == -1 for j in peers)
    ours = [j for j in jobs if j.strategy == "mini"]
    assert {(j.variant, j.summarizer) for j in ours} == {
        (n, s) for n in range(len(own_candidates())) for s in ("realistic", "poor")}
    assert _strategy_of(ours[-1]).title.startswith("mini-claude (")


def test_the_frontier_runs_alone() -> None:
    with pytest.raises(BenchUsageError):
        BenchOptions.from_args(build_parser().parse_args(["--frontier", "--tune-peers"]))
