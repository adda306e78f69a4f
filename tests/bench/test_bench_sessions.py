"""Sessions from seeds and shapes; the tuning and held-out seeds never meet."""

from __future__ import annotations

from mini_claude.bench import build_parser
from mini_claude.bench.aggregate import SessionRows, goal_lines, ratios, row_kind
from mini_claude.bench.report import Row
from mini_claude.bench.sessions import (
    HELD_OUT_SEEDS,
    TUNING_SEEDS,
    held_out_sessions,
    tuning_sessions,
)
from mini_claude.bench.suite import BenchOptions, plan_jobs
from mini_claude.scenario.script import LONG_IDLE_SECONDS
from tests.support.bench_rows import bench_row


def test_tuning_and_held_out_seeds_are_apart() -> None:
    assert set(TUNING_SEEDS).isdisjoint(HELD_OUT_SEEDS)
    assert {s.seed for s in held_out_sessions()} == set(HELD_OUT_SEEDS)
    assert {s.seed for s in tuning_sessions()} == set(TUNING_SEEDS)


def test_the_default_run_judges_on_held_out_seeds_and_tuning_runs_on_tuning_seeds() -> None:
    default = BenchOptions.from_args(build_parser().parse_args([]))
    assert {s.seed for s in default.sessions} == set(HELD_OUT_SEEDS)
    tuning = BenchOptions.from_args(build_parser().parse_args(["--tune-peers"]))
    assert {s.seed for s in tuning.sessions} == set(TUNING_SEEDS)
    jobs = plan_jobs(tuning)
    assert jobs and all(job.part == "tune" for job in jobs)


def test_shapes_differ_in_length_idle_gaps_and_output_size() -> None:
    sessions = held_out_sessions()
    scripts = [s.script(s.plan()) for s in sessions]
    turns = {len(script.turns) for script in scripts}
    assert min(turns) == 30 and max(turns) >= 60
    long_gaps = [sum(t.idle_before >= LONG_IDLE_SECONDS[0] for t in script.turns)
                 for script in scripts]
    assert 0 in long_gaps and max(long_gaps) > 0
    sizes = {sum(s.plan().module_lines.values()) for s in sessions}
    assert len(sizes) == len(sessions)
    long = held_out_sessions(long=True)
    assert len(long[-1].script(long[-1].plan()).turns) == 300


def _row(key: str, window: int, cost: float, ours: bool = False, overflowed: int = 0) -> Row:
    return bench_row(cost, strategy=key, window=window, ours=ours, overflowed=overflowed,
                     needed=3)


def test_a_row_below_a_products_smallest_window_is_an_extrapolation() -> None:
    assert row_kind("claude-code", 200_000) == "real product"
    assert row_kind("claude-code", 32_000) == "extrapolation"
    assert row_kind("server", 32_000) == "extrapolation"
    assert row_kind("codex", 32_000) == "real product"
    assert row_kind("learn", 200_000) == "baseline"


def test_ratios_are_per_session_against_the_cheapest_real_row() -> None:
    sessions = [
        SessionRows("a", (_row("mini", 32_000, 7.0, ours=True), _row("codex", 32_000, 10.0),
                          _row("claude-code", 32_000, 5.0))),  # an extrapolation: not a rival
        SessionRows("b", (_row("mini", 32_000, 9.0, ours=True), _row("codex", 32_000, 10.0))),
    ]
    assert [round(r.value, 2) for r in ratios(sessions, 32_000)] == [0.7, 0.9]
    lines = goal_lines(sessions, [32_000])
    assert "median 0.80x, worst 0.90x" in lines[0] and "**MET**" in lines[0]


def test_a_ratio_just_over_the_goal_shows_the_decimal_that_decides_it() -> None:
    sessions = [
        SessionRows("a", (_row("mini", 32_000, 7.0, ours=True), _row("codex", 32_000, 10.0))),
        SessionRows("b", (_row("mini", 32_000, 9.01, ours=True), _row("codex", 32_000, 10.0))),
    ]
    (line, *_) = goal_lines(sessions, [32_000])
    assert "worst 0.901x" in line and "b: 0.901x codex" in line and "**NOT MET**" in line
    assert "a: 0.70x codex" in line  # far from the goal: two decimals say it


def test_a_session_whose_every_real_row_overflowed_is_named_not_dropped() -> None:
    sessions = [
        SessionRows("a", (_row("mini", 32_000, 7.0, ours=True), _row("codex", 32_000, 10.0))),
        SessionRows("b", (_row("mini", 32_000, 9.0, ours=True),
                          _row("codex", 32_000, 8.0, overflowed=2))),
    ]
    assert [r.session for r in ratios(sessions, 32_000)] == ["a"]
    (line, *_) = goal_lines(sessions, [32_000])
    assert "a: 0.70x codex" in line
    assert "b: not judged, every real-product row overflowed" in line
