"""What the task tool buys: one exploration done inline, then the same one through `task`.

Both runs play the same exploring model (list, search, read every module one by one,
answer) against the simulator through the real stack; in the second the session hands
the exploration to an explore sub-agent. A few follow-up calls afterwards show what the
parent pays to carry (or not carry) the exploration in its context.

    python -m mini_claude.bench.delegation [--files N] [--lines N] [--follow-ups N]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mini_claude.permissions.asking import allow_all
from mini_claude.session.wiring import Session
from mini_claude.settings import Settings
from mini_claude.simulator import FunctionPolicy, Reply, Simulator, ToolCall
from mini_claude.simulator.policies import RoutedPolicy, files_in_listing, system_contains
from mini_claude.simulator.types import SimConversation, SimMessage

Mode = Literal["inline", "task"]
ProviderName = Literal["anthropic", "openai"]
PARENT_MARKER = "You are mini-claude, a coding agent"
CHILD_MARKER = "You are an exploring sub-agent"
QUESTION = "Where are the records validated, and which module owns each step?"
FOLLOW_UP = "FOLLOW-UP: check the readme a few times."
MODEL = "sim-sonnet"


@dataclass(frozen=True)
class DelegationRow:
    mode: Mode
    provider: ProviderName
    parent_peak_tokens: int  # largest prompt the parent sent
    parent_last_tokens: int  # the parent's last prompt: what it carries on
    total_tokens: int  # prompt + output of every call, sub-agent and summaries included
    dollars: float
    requests: int
    parent_requests: int


def write_project(root: Path, files: int, lines: int) -> None:
    (root / "pkg").mkdir(parents=True, exist_ok=True)
    (root / "README.md").write_text("# records\nA pipeline of record steps.\n")
    for n in range(files):
        body = [f'"""Step {n} of the record pipeline."""', ""]
        body += [f"def step_{n}_{i}(record):\n    return validate(record, rule={i * 31 + n})\n"
                 for i in range(lines // 2)]
        (root / "pkg" / f"step_{n}.py").write_text("\n".join(body))


def _turn_uses(turn: list[SimMessage], name: str) -> int:
    return sum(1 for m in turn for u in m.tool_uses if u.name == name)


def explore(conv: SimConversation) -> Reply:
    """List, search, then read every module one per call, then answer."""
    turn = conv.current_turn()
    if not _turn_uses(turn, "list_files"):
        return Reply("Listing.", [ToolCall("list_files", {"path": "pkg"})])
    if not _turn_uses(turn, "grep_search"):
        return Reply("Searching.", [ToolCall("grep_search", {"pattern": "def step_"})])
    listing = "\n".join(
        r.content for m in turn for r in m.tool_results if "step_" in r.content
    )
    read = {str(u.input.get("path")) for m in turn for u in m.tool_uses if u.name == "read_file"}
    modules = [p for p in files_in_listing(listing, 1_000) if p.endswith(".py")]
    unread = [p for p in modules if p not in read and f"pkg/{p}" not in read]
    if unread:
        path = unread[0] if unread[0].startswith("pkg/") else f"pkg/{unread[0]}"
        return Reply(f"Reading {path}.", [ToolCall("read_file", {"path": path})])
    return Reply(f"Records are validated by validate() in each of the {len(read)} step "
                 "modules under pkg/; step_N.py owns step N.")


def parent(mode: Mode, follow_ups: int) -> FunctionPolicy:
    def respond(conv: SimConversation) -> Reply:
        turn = conv.current_turn()
        if FOLLOW_UP in turn[0].text:
            if _turn_uses(turn, "read_file") < follow_ups:
                return Reply("Checking.", [ToolCall("read_file", {"path": "README.md"})])
            return Reply("Follow-up done.")
        if mode == "inline":
            return explore(conv)
        if not _turn_uses(turn, "task"):
            call = ToolCall("task", {"description": "find the validation", "prompt": QUESTION})
            return Reply("Delegating.", [call])
        return Reply("The sub-agent says: " + turn[-1].tool_results[0].content)

    return FunctionPolicy(respond)


async def _play(session: Session, follow_ups: int) -> None:
    agent = session.agent
    try:
        async for _ in agent.turn(QUESTION):
            pass
        if follow_ups:
            async for _ in agent.turn(FOLLOW_UP):
                pass
    finally:
        await session.aclose()


def run(mode: Mode, provider: ProviderName, *, files: int = 8, lines: int = 300,
        follow_ups: int = 5, window: int | None = None) -> DelegationRow:
    with tempfile.TemporaryDirectory() as folder, Simulator() as sim:
        root = Path(folder)
        write_project(root / "repo", files, lines)
        sim.policy = RoutedPolicy([(system_contains(CHILD_MARKER), FunctionPolicy(explore))],
                                  default=parent(mode, follow_ups))
        settings = Settings(
            provider=provider, model=MODEL, home=root / "home", context_window=window,
            api_keys={"anthropic": "bench", "openai": "bench"},
            base_urls={"anthropic": sim.anthropic_base_url, "openai": sim.openai_base_url},
        )
        session = Session.open(settings, root / "repo", allow_all)
        session.start_new()
        asyncio.run(_play(session, follow_ups))
        answered = [r for r in sim.requests if r.status == 200 and r.conversation is not None]
        parents = [r for r in answered if PARENT_MARKER in r.conversation.system  # type: ignore[union-attr]
                   and not r.is_side_request]
        costs = session.agent.costs
        return DelegationRow(
            mode=mode,
            provider=provider,
            parent_peak_tokens=max(r.prompt_tokens for r in parents),
            parent_last_tokens=parents[-1].prompt_tokens,
            total_tokens=costs.usage.prompt_tokens + costs.usage.output_tokens,
            dollars=costs.dollars,
            requests=costs.requests,
            parent_requests=len(parents),
        )


def table(rows: Sequence[DelegationRow]) -> str:
    lines = [
        "| provider | mode | parent peak context | parent last prompt | total tokens | $ "
        "| model calls (parent) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.provider} | {r.mode} | {r.parent_peak_tokens:,} | {r.parent_last_tokens:,} "
            f"| {r.total_tokens:,} | ${r.dollars:.4f} | {r.requests} ({r.parent_requests}) |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--lines", type=int, default=300)
    parser.add_argument("--follow-ups", type=int, default=5)
    args = parser.parse_args(argv)
    rows = [
        run(mode, provider, files=args.files, lines=args.lines, follow_ups=args.follow_ups)
        for provider in ("anthropic", "openai")
        for mode in ("inline", "task")
    ]
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
