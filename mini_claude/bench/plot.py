"""Context size per request for each strategy, one panel per window, compactions marked.

matplotlib is an optional extra; without it the report says so and goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mini_claude.bench.runner import RunResult

PLOT_NAME = "context.png"
MISSING = "matplotlib is not installed (pip install 'mini-claude[bench]'); the plot was skipped"


def plot_runs(runs: Sequence[RunResult], out_dir: Path) -> tuple[Path | None, str]:
    """Write the plot; returns its path (None when skipped) and a one-line note."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None, MISSING
    windows = sorted({run.window for run in runs}, reverse=True)
    figure, axes = plt.subplots(len(windows), 1, figsize=(11, 4.2 * len(windows)), squeeze=False)
    for axis, window in zip(axes[:, 0], windows, strict=True):
        _panel(axis, [run for run in runs if run.window == window], window)
    figure.tight_layout()
    path = out_dir / PLOT_NAME
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path, f"plot written to {path}"


def _panel(ax: Any, runs: Sequence[RunResult], window: int) -> None:
    effective = runs[0].effective_window if runs else window
    for run in runs:
        xs = [r.index for r in run.requests]
        ys = [r.prompt_tokens / 1000 for r in run.requests]
        (line,) = ax.plot(xs, ys, label=run.title, linewidth=2.2 if run.ours else 1.2)
        summary = [(r.index, r.prompt_tokens / 1000) for r in run.requests if r.is_summary]
        if summary:
            ax.scatter(*zip(*summary, strict=True), marker="D", s=28,
                       color=line.get_color(), zorder=3)
        overflow = [(r.index, r.prompt_tokens / 1000) for r in run.requests if r.overflowed]
        if overflow:
            ax.scatter(*zip(*overflow, strict=True), marker="x", s=36,
                       color="red", zorder=4)
    ax.axhline(window / 1000, color="black", linestyle=":", linewidth=1,
               label="window")
    ax.axhline(effective / 1000, color="grey", linestyle="--", linewidth=1,
               label="effective window")
    ax.set_title(f"{window // 1000}K window: prompt tokens per request "
                 "(diamonds: summary calls, red x: overflow)")
    ax.set_xlabel("request number")
    ax.set_ylabel("prompt tokens (thousands)")
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(alpha=0.3)
