"""Does a pipeline pass cost what was appended, or the whole history?

A conversation of N messages goes through the pipeline once (which may clear
results); then, repeatedly, two messages are appended and one pass is timed.
If the tiers index incrementally, the three figures stay flat as N grows.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from mini_claude.context.meter import TokenMeter
from mini_claude.context.pipeline import ContextPipeline
from mini_claude.context.store import DiskResultStore
from mini_claude.conversation import (
    Conversation,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    user_text,
)
from mini_claude.settings import Settings

HISTORY_SIZES = (100, 1_000, 5_000)
RESULT_CHARS = (80, 320)
TOOLS = ("read_file", "grep_search", "list_files", "run_shell")


@dataclass(frozen=True, slots=True)
class ScalingPoint:
    messages: int
    first_pass_ms: float  # the pass over the whole history
    append_pass_ms_median: float  # a pass after appending two messages
    append_pass_ms_worst: float


class _Exchanges:
    """Tool call / result pairs of realistic shape, drawn from a seeded generator."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.count = 0

    def pair(self) -> tuple[Message, Message]:
        self.count += 1
        tool = TOOLS[self.count % len(TOOLS)]
        target = f"src/pkg/module_{self.rng.randrange(60)}.py"
        key = "command" if tool == "run_shell" else "path"
        use = ToolUseBlock(f"toolu_{self.count:08d}", tool, {key: target})
        size = self.rng.randint(*RESULT_CHARS)
        text = "".join(self.rng.choice("abcdefgh \n") for _ in range(size))
        result = ToolResultBlock(use.id, text, tool_name=tool, target=target,
                                 original_chars=len(text), original_lines=text.count("\n") + 1)
        return Message("assistant", [TextBlock("Checking."), use]), Message("user", [result])


def _history(size: int, exchanges: _Exchanges) -> Conversation:
    conversation = Conversation([user_text("Start the task.")])
    while len(conversation) < size:
        for message in exchanges.pair():
            conversation.append(message)
    return conversation


def measure(size: int, *, repeats: int, home: Path, seed: int = 1) -> ScalingPoint:
    settings = Settings(model="sim-sonnet", context_window=200_000, home=home)
    meter = TokenMeter(settings, fixed_chars=4_000)
    pipeline = ContextPipeline(settings, DiskResultStore(settings, f"scaling-{size}"), meter)
    exchanges = _Exchanges(seed)
    conversation = _history(size, exchanges)
    now = 1_000.0
    meter.observe(round(conversation.total_chars / settings.chars_per_token), conversation)
    started = time.perf_counter()
    pipeline.run(conversation, now=now, last_call_at=now - 1)
    first = time.perf_counter() - started
    timings = []
    for _ in range(repeats):
        for message in exchanges.pair():
            conversation.append(message)
        now += 5
        started = time.perf_counter()
        pipeline.run(conversation, now=now, last_call_at=now - 1)
        timings.append(time.perf_counter() - started)
    return ScalingPoint(size, first * 1000, statistics.median(timings) * 1000,
                        max(timings) * 1000)


def measure_all(sizes: tuple[int, ...] = HISTORY_SIZES, *, repeats: int = 30) -> list[ScalingPoint]:
    with tempfile.TemporaryDirectory(prefix="mini-claude-scaling-") as folder:
        return [measure(size, repeats=repeats, home=Path(folder)) for size in sizes]


def scaling_table(points: list[ScalingPoint]) -> str:
    lines = ["| history (messages) | first pass over the history | pass after appending 2 "
             "messages, median / worst |", "|---|---|---|"]
    for p in points:
        lines.append(f"| {p.messages:,} | {p.first_pass_ms:.2f} ms | "
                     f"{p.append_pass_ms_median:.3f} ms / {p.append_pass_ms_worst:.3f} ms |")
    return "\n".join(lines)
