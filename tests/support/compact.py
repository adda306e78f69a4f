"""Builders for hand-made histories used by the compaction tests."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from mini_claude.context.compact import Compactor
from mini_claude.context.meter import TokenMeter
from mini_claude.context.rebuild import Planner
from mini_claude.context.store import DiskResultStore
from mini_claude.conversation import (
    Conversation,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    target_of,
)
from mini_claude.settings import Settings

_ids = itertools.count(1)


def words(count: int) -> str:
    """Prose of about ``count`` tokens: short common words, one token each."""
    vocabulary = ("alpha", "beta", "gamma", "delta", "kappa", "sigma")
    return " ".join(vocabulary[i % len(vocabulary)] for i in range(count))


def user(text: str) -> Message:
    return Message("user", [TextBlock(text)])


def reply(text: str) -> Message:
    return Message("assistant", [TextBlock(text)])


def call(name: str, **args: Any) -> ToolUseBlock:
    return ToolUseBlock(f"toolu_{next(_ids):04d}", name, dict(args))


def exchange(*uses: ToolUseBlock, output: str = "ok", note: str = "") -> list[Message]:
    """An assistant message with tool calls and the message answering them."""
    blocks: list[Any] = [TextBlock(note)] if note else []
    assistant = Message("assistant", [*blocks, *uses])
    results = Message(
        "user",
        [
            ToolResultBlock(u.id, output, tool_name=u.name, target=target_of(u),
                            original_chars=len(output), original_lines=output.count("\n") + 1)
            for u in uses
        ],
    )
    return [assistant, results]


def read(path: str, output: str = "ok", **args: Any) -> list[Message]:
    return exchange(call("read_file", path=path, **args), output=output)


def shell(command: str, output: str = "ok") -> list[Message]:
    return exchange(call("run_shell", command=command), output=output)


def settings_for(home: Path, *, window: int = 100_000, **changes: Any) -> Settings:
    """Round numbers: output reserve 20K, so the effective window is ``window - 20_000``."""
    values: dict[str, Any] = {
        "home": home,
        "context_window": window,
        "model": "sim-model",
        "chars_per_token": 4.0,
        # The rebuild tests size their histories around these; the defaults moved later.
        "post_compact_target_pct": 0.50,
        "post_compact_threshold_share": 1.0,
        "compact_tail_share": 0.15,
    }
    values.update(changes)
    return Settings(**values)


def make_compactor(settings: Settings, fixed_chars: int = 0) -> Compactor:
    meter = TokenMeter(settings, fixed_chars=fixed_chars)
    return Compactor(settings, meter, DiskResultStore(settings, "test-session"))


def planner(
    compactor: Compactor,
    messages: list[Message],
    root: Path,
    *,
    summary: str = "The summary.",
    transcript: str = "/tmp/transcript.jsonl",
) -> Planner:
    meter = compactor.meter

    def estimate(candidate: list[Message]) -> int:
        probe = Conversation(candidate)
        probe.epoch = 1
        return meter.estimate(probe)

    def size_of(message: Message) -> int:
        probe = Conversation([message])
        probe.epoch = -1
        return meter.estimate(probe) - meter.estimate(Conversation())

    return Planner(
        messages=messages,
        summary=summary,
        transcript_path=transcript,
        root=root,
        limits=compactor.limits(),
        store=compactor.store,
        estimate=estimate,
        size_of=size_of,
    )
