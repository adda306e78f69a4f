"""`mini-claude --acp` driven by the Agent Client Protocol package's own client side, as an
editor drives it: a subprocess on stdio, the simulator behind it, both providers."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import pytest
from acp import PROTOCOL_VERSION, Client, RequestError, spawn_agent_process, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UserMessageChunk,
)

from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.printing import PROVIDERS

WAIT = 60.0
THOUGHT = "First the file, then the answer."


class EditorClient:
    """An editor in miniature: it records what it is shown and answers questions as told."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.questions: list[tuple[ToolCallUpdate, list[PermissionOption]]] = []
        self.answer = "allow"  # an option id, or "" to answer "cancelled"
        self.hold = asyncio.Event()  # cleared: a question waits until it is set
        self.hold.set()

    async def request_permission(self, session_id: str, tool_call: ToolCallUpdate,
                                 options: list[PermissionOption],
                                 **_: Any) -> RequestPermissionResponse:
        self.questions.append((tool_call, options))
        await self.hold.wait()
        if not self.answer:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=self.answer))

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)

    def of(self, kind: type) -> list[Any]:
        return [u for u in self.updates if isinstance(u, kind)]

    def said(self) -> str:
        return "".join(u.content.text for u in self.of(AgentMessageChunk))


def agent_environment(simulator: Simulator, provider: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "OPENAI"))}
    env["MINI_CLAUDE_MODEL"] = "sim-sonnet"
    env["MINI_CLAUDE_THINKING_TOKENS"] = "2048"
    if provider == "anthropic":
        env.update(ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=simulator.anthropic_base_url)
    else:
        env.update(OPENAI_API_KEY="test-key", OPENAI_BASE_URL=simulator.openai_base_url)
    return env


@asynccontextmanager
async def editor_on(simulator: Simulator, provider: str, project: Path,
                    client: EditorClient) -> AsyncIterator[ClientSideConnection]:
    """The agent started as an editor starts it, initialized; it ends when stdin closes."""
    async with spawn_agent_process(
        cast(Client, client),  # it implements the calls these tests reach
        sys.executable, "-m", "mini_claude.cli", "--acp",
        env=agent_environment(simulator, provider), cwd=project,
    ) as (conn, process):
        reply = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=True)),
        )
        assert reply.agent_info is not None and reply.agent_info.name == "mini-claude"
        assert reply.agent_capabilities is not None
        assert reply.agent_capabilities.load_session is True
        yield conn
        assert process.stdin is not None
        process.stdin.close()
        assert await asyncio.wait_for(process.wait(), WAIT) == 0


async def wait_until(condition: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_prompt_streams_its_tool_call_and_asks_the_editor_before_a_change(
    provider: str, project: Path, simulator: Simulator,
) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Making it.", [ToolCall("write_file", {"path": "made.txt", "content": "hi\n"})],
              thinking=THOUGHT),
        lambda conv: Reply("Result: " + conv.last_tool_results()[0].content[:60]),
        Reply("Trying again.", [ToolCall("run_shell", {"command": "touch refused.txt"})]),
        lambda conv: Reply("Then: " + conv.last_tool_results()[0].content[:60]),
    ])
    client = EditorClient()

    async def scenario() -> None:
        async with editor_on(simulator, provider, project, client) as conn:
            session = await conn.new_session(cwd=str(project))
            assert session.modes is not None and session.modes.current_mode_id == "default"
            done = await conn.prompt(session_id=session.session_id,
                                     prompt=[text_block("make the file")])
            assert done.stop_reason == "end_turn"
            assert (project / "made.txt").read_text() == "hi\n"
            assert "Result: Created made.txt" in client.said()
            client.answer = "reject"
            before = len(client.updates)
            done = await conn.prompt(session_id=session.session_id,
                                     prompt=[text_block("now touch another")])
            assert done.stop_reason == "end_turn"
            assert "Then: Permission denied" in client.said()
            refused = [u for u in client.updates[before:] if isinstance(u, ToolCallProgress)]
            assert refused[-1].status == "failed"

    asyncio.run(scenario())
    assert not (project / "refused.txt").exists()
    (write, write_options), (shell, _) = client.questions
    starts = client.of(ToolCallStart)
    assert [s.title for s in starts] == ["write_file made.txt", "run_shell touch refused.txt"]
    assert starts[0].kind == "edit" and starts[0].status == "pending"
    assert starts[0].locations is not None
    assert starts[0].locations[0].path == str(project / "made.txt")
    assert starts[1].kind == "execute"
    assert write.tool_call_id == starts[0].tool_call_id and write.title == "create made.txt"
    assert shell.tool_call_id == starts[1].tool_call_id
    assert [o.kind for o in write_options] == ["allow_once", "allow_always", "reject_once"]
    finished = [u for u in client.of(ToolCallProgress) if u.tool_call_id == write.tool_call_id]
    assert [u.status for u in finished] == ["in_progress", "completed"]
    assert finished[-1].content is not None and "+hi" in finished[-1].content[0].content.text
    if provider == "anthropic":  # the OpenAI wire sends no reasoning text
        assert THOUGHT in "".join(u.content.text for u in client.of(AgentThoughtChunk))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cancel_stops_the_running_command_and_the_session_goes_on(
    provider: str, project: Path, simulator: Simulator,
) -> None:
    marker = project / "started"
    simulator.policy = ScriptedPolicy([
        Reply("Waiting.", [ToolCall("run_shell", {"command": "touch started; sleep 30"})]),
        Reply("Back again."),
    ])
    client = EditorClient()

    async def scenario() -> None:
        async with editor_on(simulator, provider, project, client) as conn:
            session = await conn.new_session(cwd=str(project))
            turn = asyncio.ensure_future(conn.prompt(session_id=session.session_id,
                                                     prompt=[text_block("wait")]))
            await wait_until(marker.exists, "the command to start")
            started = time.monotonic()
            await conn.cancel(session_id=session.session_id)
            done = await asyncio.wait_for(turn, WAIT)
            assert done.stop_reason == "cancelled"
            assert time.monotonic() - started < 25  # not the sleep's 30 seconds
            done = await conn.prompt(session_id=session.session_id,
                                     prompt=[text_block("and now?")])
            assert done.stop_reason == "end_turn"
            assert client.said().endswith("Back again.")

    asyncio.run(scenario())
    assert len(client.questions) == 1  # run_shell asked, and was allowed


def test_cancel_while_the_editor_asks_stops_the_turn_without_running_the_call(
    project: Path, simulator: Simulator,
) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Asking.", [ToolCall("run_shell", {"command": "touch never.txt"})]),
        Reply("Still here."),
    ])
    client = EditorClient()
    client.hold.clear()
    client.answer = ""  # the editor answers "cancelled", as the protocol asks after a cancel

    async def scenario() -> None:
        async with editor_on(simulator, "anthropic", project, client) as conn:
            session = await conn.new_session(cwd=str(project))
            turn = asyncio.ensure_future(conn.prompt(session_id=session.session_id,
                                                     prompt=[text_block("touch it")]))
            await wait_until(lambda: client.questions, "the question")
            await conn.cancel(session_id=session.session_id)
            client.hold.set()
            assert (await asyncio.wait_for(turn, WAIT)).stop_reason == "cancelled"
            done = await conn.prompt(session_id=session.session_id,
                                     prompt=[text_block("hello")])
            assert done.stop_reason == "end_turn" and client.said().endswith("Still here.")

    asyncio.run(scenario())
    assert not (project / "never.txt").exists()


def test_a_session_is_loaded_and_replayed_to_the_editor(
    project: Path, simulator: Simulator,
) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Reading.", [ToolCall("read_file", {"path": "README.md"})]),
        Reply("It is a demo project."),
        Reply("Yes, I remember."),
    ])
    first, second = EditorClient(), EditorClient()

    async def scenario() -> None:
        async with editor_on(simulator, "openai", project, first) as conn:
            session = await conn.new_session(cwd=str(project))
            await conn.prompt(session_id=session.session_id,
                              prompt=[text_block("what is this project?")])
            session_id = session.session_id
        async with editor_on(simulator, "openai", project, second) as conn:
            with pytest.raises(RequestError) as refused:  # one line, and the agent goes on
                await conn.load_session(cwd=str(project), session_id="20990101-000000-none")
            assert "20990101-000000-none" in (refused.value.data or {})["details"]
            with pytest.raises(RequestError):
                await conn.new_session(cwd="relative/folder")
            await conn.load_session(cwd=str(project), session_id=session_id)
            replayed = list(second.updates)
            done = await conn.prompt(session_id=session_id,
                                     prompt=[text_block("do you remember?")])
            assert done.stop_reason == "end_turn"
        users = [u.content.text for u in replayed if isinstance(u, UserMessageChunk)]
        assert users and "what is this project?" in users[0]
        assert any(isinstance(u, ToolCallStart) and u.title == "read_file README.md"
                   for u in replayed)
        assert "It is a demo project." in "".join(
            u.content.text for u in replayed if isinstance(u, AgentMessageChunk))

    asyncio.run(scenario())
    assert second.said().endswith("It is a demo project.Yes, I remember.")
    last = simulator.requests[-1].body
    assert "It is a demo project." in str(last)  # the model saw the resumed history
