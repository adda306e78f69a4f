"""One benchmark table row with only what a test cares about set (the rest neutral)."""

from __future__ import annotations

from mini_claude.bench.report import Row


def bench_row(cost: float, *, strategy: str = "codex", window: int = 200_000,
              ours: bool = False, lost: int = 0, overflowed: int = 0, needed: int = 27) -> Row:
    return Row(strategy, strategy, ours, window, 10, 0, overflowed, 0.5, 100, 0.9, 10, 10, cost,
               0, needed - lost, needed, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 10, 0)
