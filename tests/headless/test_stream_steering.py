"""A user message sent over stream-json input while a turn runs steers that turn, as Claude
Code does there: the model reads it after the step's tool results, the turn writes its one
result line, and no line echoes the message. What the turn cannot deliver (it ends without
another model call, or is interrupted) runs as the next turn. Driven by the real Claude
Agent SDK's ``ClaudeSDKClient`` on both providers."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultMessage,
    ToolUseBlock,
)

from mini_claude.simulator import Reply, SimConversation, Simulator, ToolCall
from tests.support.agent_sdk import run, sdk_options
from tests.support.printing import PROVIDERS

STEER = "also say banana"
MAX_STEPS = 8  # the first turn gives up after this many slow steps without hearing STEER


def _user_texts(conv: SimConversation) -> list[str]:
    return [m.text for m in conv.messages if m.role == "user"]


class SlowStepsUntilSteered:
    """The first turn runs slow shell steps until the steering message shows up; any other
    turn answers with the last thing the user said."""

    def __init__(self) -> None:
        self.seen: list[SimConversation] = []
        self.steps = 0

    def respond(self, conv: SimConversation) -> Reply:
        if conv.is_summary_request or not conv.tool_names:
            return Reply("ok")
        self.seen.append(conv)
        if "third" not in " ".join(_user_texts(conv)):  # the first turn
            if any(STEER in text for text in _user_texts(conv)):
                return Reply("heard: banana")
            if self.steps < MAX_STEPS:
                self.steps += 1
                return Reply(tool_calls=[ToolCall("run_shell", {
                    "command": f"sleep 1; echo step{self.steps}"})])
            return Reply("gave up")
        return _answer(conv)


def _answer(conv: SimConversation) -> Reply:
    """Which message a turn answers, from the words the tests send."""
    said = conv.last_user_text
    words = ("after the interrupt", "again", "second", "third")
    return Reply(next((f"answer to: {w}" for w in words if w in said), "answer to: ?"))


def _steering_records(home: Path) -> list[dict[str, Any]]:
    records = []
    for path in home.rglob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if isinstance(record, dict) and record.get("type") == "steering":
                records.append(record)
    return records


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_message_sent_during_a_turn_reaches_the_model_in_that_turn(
    provider: str, simulator: Simulator, tmp_path: Path
) -> None:
    policy = SlowStepsUntilSteered()
    simulator.policy = policy
    options = sdk_options(simulator, provider, tmp_path / "project",
                          permission_mode="bypassPermissions")

    async def conversation() -> tuple[list[Any], list[Any]]:
        async with ClaudeSDKClient(options) as client:
            await client.query("work slowly")
            first: list[Any] = []
            async for message in client.receive_response():
                if isinstance(message, AssistantMessage) and not any(
                        isinstance(m, AssistantMessage) for m in first):
                    await client.query(STEER)  # while the first step's tool runs
                first.append(message)
            await client.query("third")  # idle now: a turn of its own
            third = [message async for message in client.receive_response()]
        return first, third

    first, third = run(conversation())
    results = [m for m in first if isinstance(m, ResultMessage)]
    assert [r.result for r in results] == ["heard: banana"]
    assert 1 <= policy.steps < MAX_STEPS
    # no line echoes the steering message (Claude Code writes none without a replay flag)
    assert not any(STEER in repr(getattr(m, "content", "")) for m in first
                   if not isinstance(m, AssistantMessage))
    # the model read it in the first turn, after that step's tool results
    heard = next(conv for conv in policy.seen if any(STEER in t for t in _user_texts(conv)))
    last = heard.messages[-1]
    assert last.role == "user" and last.tool_results and STEER in last.text
    assert _user_texts(heard)[0].endswith("work slowly")
    # the next message, sent when idle, is a turn with its own result
    assert [m.result for m in third if isinstance(m, ResultMessage)] == ["answer to: third"]
    records = _steering_records(tmp_path / "mini-claude-home")
    assert [r["text"] for r in records] == [STEER]


class GatedAnswer:
    """The first turn's only model call answers without tools once the test opens the gate;
    later turns answer with the last thing the user said."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.calls = 0

    def respond(self, conv: SimConversation) -> Reply:
        if conv.is_summary_request or not conv.tool_names:
            return Reply("ok")
        self.calls += 1
        if self.calls == 1:
            self.gate.wait(30)
            return Reply("first answer")
        return _answer(conv)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_message_the_ending_turn_cannot_deliver_runs_as_the_next_turn(
    provider: str, simulator: Simulator, tmp_path: Path
) -> None:
    policy = GatedAnswer()
    simulator.policy = policy
    options = sdk_options(simulator, provider, tmp_path / "project",
                          permission_mode="bypassPermissions")

    async def conversation() -> list[ResultMessage]:
        async with ClaudeSDKClient(options) as client:
            await client.query("answer at once")
            await client.query("second")  # while the only model call of the turn runs
            await asyncio.sleep(1)
            policy.gate.set()
            results: list[ResultMessage] = []
            await _next_result(client, results)
            await client.query("third")
            while "third" not in str(results[-1].result):
                await _next_result(client, results)
        return results

    results = run(conversation())
    assert [r.result for r in results] == ["first answer", "answer to: second",
                                           "answer to: third"]


async def _sent_during_the_first_tool_call(
        options: ClaudeAgentOptions, first: str, during: str,
        *, interrupt: bool = False) -> list[ResultMessage]:
    """Every result of a session where ``during`` is sent (and the turn interrupted, if asked)
    as soon as ``first``'s turn shows a tool call, then "again" once that turn has ended."""
    async with ClaudeSDKClient(options) as client:
        await client.query(first)
        results: list[ResultMessage] = []
        async for message in client.receive_response():
            if isinstance(message, AssistantMessage) and any(
                    isinstance(b, ToolUseBlock) for b in message.content):
                await client.query(during)
                if interrupt:
                    await client.interrupt()
            if isinstance(message, ResultMessage):
                results.append(message)
        await client.query("again")
        while "again" not in str(results[-1].result):
            await _next_result(client, results)
    return results


async def _next_result(client: ClaudeSDKClient, results: list[ResultMessage]) -> None:
    async for message in client.receive_response():
        if isinstance(message, ResultMessage):
            results.append(message)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_interrupt_keeps_the_undelivered_message_for_the_next_turn(
    provider: str, simulator: Simulator, tmp_path: Path
) -> None:
    calls = [0]

    def respond(conv: SimConversation) -> Reply:
        if conv.is_summary_request or not conv.tool_names:
            return Reply("ok")
        calls[0] += 1
        if calls[0] == 1:
            return Reply(tool_calls=[ToolCall("run_shell", {"command": "sleep 60"})])
        return _answer(conv)

    simulator.policy = type("Policy", (), {"respond": staticmethod(respond)})()
    options = sdk_options(simulator, provider, tmp_path / "project",
                          permission_mode="bypassPermissions")

    interrupted, *after = run(_sent_during_the_first_tool_call(
        options, "sleep", "after the interrupt", interrupt=True))
    assert interrupted.is_error
    assert [(r.result, r.is_error) for r in after] == [
        ("answer to: after the interrupt", False), ("answer to: again", False)]


class CommandAfterSlowStep:
    """One slow step, then an answer; a request that carries the command's raw text (it was
    steered in instead of run) says so."""

    def __init__(self) -> None:
        self.calls = 0

    def respond(self, conv: SimConversation) -> Reply:
        if conv.is_summary_request or not conv.tool_names:
            return Reply("ok")
        self.calls += 1
        said = " ".join(_user_texts(conv))
        if "/greet Ada" in said:
            return Reply("steered raw")
        if "Greet Ada warmly" in conv.last_user_text:
            return Reply("greeted")
        if self.calls == 1:
            return Reply(tool_calls=[ToolCall("run_shell", {"command": "sleep 2"})])
        return _answer(conv) if "again" in conv.last_user_text else Reply("first done")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_command_sent_during_a_turn_waits_and_runs_as_a_turn(
    provider: str, simulator: Simulator, tmp_path: Path
) -> None:
    simulator.policy = CommandAfterSlowStep()
    commands = tmp_path / "project" / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "greet.md").write_text("Greet $ARGUMENTS warmly.\n", encoding="utf-8")
    options = sdk_options(simulator, provider, tmp_path / "project",
                          permission_mode="bypassPermissions")

    results = run(_sent_during_the_first_tool_call(options, "work", "/greet Ada"))
    assert [r.result for r in results] == ["first done", "greeted", "answer to: again"]
