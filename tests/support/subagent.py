"""A session with sub-agents against the simulator: routing, requests by agent, results."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mini_claude.agent.loop import Agent
from mini_claude.conversation import ToolResultBlock
from mini_claude.permissions.asking import Approver, allow_all
from mini_claude.providers import create_provider
from mini_claude.session.wiring import Session
from mini_claude.settings import Settings
from mini_claude.simulator import RecordedRequest, Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.simulator.policies import Match, RoutedPolicy
from mini_claude.simulator.types import Policy

PARENT_SYSTEM = "You are mini-claude, a coding agent"
EXPLORE_SYSTEM = "You are an exploring sub-agent"
GENERAL_SYSTEM = "You are a sub-agent of mini-claude"


def task_call(prompt: str, description: str = "look around", **extra: Any) -> ToolCall:
    return ToolCall("task", {"description": description, "prompt": prompt, **extra})


def route(sim: Simulator, parent: Sequence[Reply], children: Sequence[tuple[Match, Policy]],
          parent_final: str = "Parent done.") -> ScriptedPolicy:
    """The parent plays ``parent``; each child request goes to the first matching policy."""
    script = ScriptedPolicy(parent, final=Reply(parent_final))
    sim.policy = RoutedPolicy(children, default=script)
    return script


def start(settings: Settings, project: Path, approver: Approver = allow_all) -> Session:
    session = Session(settings, project, create_provider(settings), approver)
    session.start_new()
    return session


def requests_of(sim: Simulator, system_marker: str) -> list[RecordedRequest]:
    """Answered, non-summary requests whose system prompt has the marker."""
    return [
        r for r in sim.requests
        if r.status == 200 and r.conversation is not None and not r.is_side_request
        and system_marker in r.conversation.system
    ]


def request_text(request: RecordedRequest) -> str:
    return json.dumps(request.body, ensure_ascii=False)


def tool_names(request: RecordedRequest) -> list[str]:
    assert request.conversation is not None
    return list(request.conversation.tool_names)


def results(agent: Agent, name: str = "task") -> list[ToolResultBlock]:
    return [
        block for message in agent.conversation.messages for block in message.blocks
        if isinstance(block, ToolResultBlock) and block.tool_name == name
    ]


def transcript_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def events_of(path: Path, kind: str) -> list[dict[str, Any]]:
    return [r for r in transcript_records(path) if r["type"] == "event" and r["kind"] == kind]


def close(session: Session, loop: asyncio.AbstractEventLoop) -> None:
    loop.run_until_complete(session.provider.close())
    loop.close()
    session.agent.transcript.close()
