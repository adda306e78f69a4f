"""A small real project and a long scripted coding session, for long-session tests."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from mini_claude import events as ev
from mini_claude.agent.loop import Agent
from mini_claude.bench.runner import is_ping
from mini_claude.permissions.asking import allow_all
from mini_claude.providers import create_provider
from mini_claude.session.wiring import Session
from mini_claude.settings import Settings
from mini_claude.simulator import Reply, SimClock, SimConversation, Simulator, ToolCall
from mini_claude.simulator.types import RecordedRequest

WORDS = ("alpha", "beta", "gamma", "delta", "value", "result", "config", "parser", "token", "cache")

EventT = TypeVar("EventT", bound=ev.Event)


def make_project(root: Path, seed: int = 7) -> list[str]:
    """A few dozen source files of mixed sizes, a big log and a big data file."""
    rng = random.Random(seed)
    files: list[str] = []
    for i in range(24):
        lines = []
        for j in range(rng.randint(20, 400)):
            w = rng.choice(WORDS)
            lines.append(f"def {w}_{i}_{j}(x):\n    return x * {rng.randint(1, 99)}  # {w}")
        rel = f"src/mod_{i:02d}.py"
        (root / "src").mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("\n".join(lines) + "\n")
        files.append(rel)
    (root / "logs").mkdir(exist_ok=True)
    log = "\n".join(
        f"2026-11-25 10:{i % 60:02d} INFO worker-{i % 7} processed batch {i} ok"
        for i in range(2_500)
    )
    (root / "logs" / "big.log").write_text(log + "\n")
    (root / "data.csv").write_text("\n".join(f"{i},{i * 3},{WORDS[i % 10]}" for i in range(4_000)))
    return files


def step_call(i: int, files: list[str]) -> ToolCall:
    """The i-th tool call: a working set of files read again and again, searches, shell runs."""
    kind = i % 10
    working = files[(i // 20) % len(files)]  # the file being worked on changes every 20 steps
    if kind == 0:
        return ToolCall("list_files", {"path": "src"})
    if kind in (3, 9):
        return ToolCall("read_file", {"path": working})
    if kind == 5:
        return ToolCall("grep_search", {"pattern": f"def {WORDS[i % 3]}_1", "path": "src"})
    if kind == 6:
        return ToolCall("run_shell", {"command": "cat logs/big.log"})
    if kind == 7:
        return ToolCall("read_file", {"path": "data.csv"})
    return ToolCall("read_file", {"path": files[(i * 7) % len(files)]})


@dataclass
class LongSessionPolicy:
    """Plays ``calls_per_turn`` tool calls per user turn, then answers; counts its own steps."""

    files: list[str]
    calls_per_turn: int
    step: int = 0
    in_turn: int = 0

    def respond(self, conv: SimConversation) -> Reply:
        if self.in_turn >= self.calls_per_turn:
            self.in_turn = 0
            return Reply(text=f"finished a batch at step {self.step}")
        call = step_call(self.step, self.files)
        self.step += 1
        self.in_turn += 1
        note = f"Step {self.step}: checking {call.input.get('path') or call.input.get('command')}."
        return Reply(text=note, tool_calls=[call])


@dataclass
class RunRecord:
    events: list[ev.Event] = field(default_factory=list)

    def of(self, kind: type[EventT]) -> list[EventT]:
        return [e for e in self.events if isinstance(e, kind)]


def build_agent(
    sim: Simulator,
    provider: str,
    root: Path,
    home: Path,
    window: int,
    clock: SimClock,
    **overrides: object,
) -> tuple[Session, Agent]:
    settings = Settings(
        provider=provider,
        model="sim-sonnet",
        context_window=window,
        home=home,
        api_keys={"anthropic": "test-key", "openai": "test-key"},
        base_urls={"anthropic": sim.anthropic_base_url, "openai": sim.openai_base_url},
    )
    settings = settings.with_overrides(**overrides)
    session = Session(settings, root, create_provider(settings), allow_all, clock=clock.now)
    return session, session.start_new()


async def run_turn(
    agent: Agent, text: str, record: RunRecord, on_event: Callable[[ev.Event], None] | None = None
) -> None:
    async for event in agent.turn(text):
        record.events.append(event)
        if on_event:
            on_event(event)


def keepalive_pings(sim: Simulator) -> list[RecordedRequest]:
    """The keep-alive pings the simulator answered (one-output-token reads of the cache)."""
    return [r for r in sim.requests if is_ping(r)]
