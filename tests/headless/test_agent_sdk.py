"""The real Claude Agent SDK (``query()`` and ``ClaudeSDKClient``) driving mini-claude as its
CLI, over real HTTP to the simulator on both providers: tools, a permission callback, a hook
callback, an interrupt, an SDK-hosted MCP tool and the control requests between."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolPermissionContext,
    ToolUseBlock,
    UserMessage,
    create_sdk_mcp_server,
    query,
    tool,
)

from mini_claude.simulator import Reply, SimConversation, Simulator
from tests.support.agent_sdk import run, sdk_options
from tests.support.mcp import Recorder, call
from tests.support.printing import PROVIDERS


def _last_result(conv: SimConversation) -> Reply:
    return Reply(f"saw: {conv.last_tool_results()[0].content}")


async def _collect(client: ClaudeSDKClient) -> list[Any]:
    return [message async for message in client.receive_response()]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_query_runs_a_tool_and_reports_in_claude_codes_names(
    provider: str, simulator: Simulator, tmp_path: Path
) -> None:
    simulator.policy = Recorder([call("write_file", path="x.txt", content="hi\n"),
                                 Reply("done writing")])
    project = tmp_path / "project"
    options = sdk_options(simulator, provider, project, permission_mode="bypassPermissions")

    async def conversation() -> list[Any]:
        return [message async for message in query(prompt="write x", options=options)]

    messages = run(conversation())
    assert isinstance(messages[0], SystemMessage) and messages[0].subtype == "init"
    uses = [b for m in messages if isinstance(m, AssistantMessage) for b in m.content
            if isinstance(b, ToolUseBlock)]
    assert [(u.name, u.input) for u in uses] == [("Write", {"file_path": "x.txt",
                                                           "content": "hi\n"})]
    assert any(isinstance(m, UserMessage) for m in messages)
    result = messages[-1]
    assert isinstance(result, ResultMessage) and not result.is_error
    assert result.result == "done writing"
    assert (project / "x.txt").read_text() == "hi\n"
    assert all(r.protocol == provider for r in simulator.requests)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_client_asks_the_permission_callback_and_runs_the_hook_across_turns(
    provider: str, simulator: Simulator, tmp_path: Path
) -> None:
    recorder = Recorder([call("run_shell", command="echo hi"), _last_result,
                         call("write_file", path="y.txt", content="y\n"), _last_result])
    simulator.policy = recorder
    asked: list[tuple[str, dict[str, Any]]] = []
    hooked: list[dict[str, Any]] = []

    async def can_use_tool(name: str, tool_input: dict[str, Any],
                           context: ToolPermissionContext) -> Any:
        asked.append((name, tool_input))
        if name == "Bash":
            return PermissionResultDeny(message="no shell today")
        return PermissionResultAllow()

    async def pre_tool_use(hook_input: Any, tool_use_id: str | None, context: Any) -> Any:
        hooked.append(dict(hook_input))
        return {}

    project = tmp_path / "project"
    options = sdk_options(simulator, provider, project, can_use_tool=can_use_tool,
                          hooks={"PreToolUse": [HookMatcher(matcher="Bash|Write",
                                                            hooks=[pre_tool_use])]})

    async def conversation() -> tuple[list[Any], list[Any]]:
        async with ClaudeSDKClient(options) as client:
            await client.query("run echo")
            first = await _collect(client)
            await client.query("now write y")
            second = await _collect(client)
        return first, second

    first, second = run(conversation())
    assert asked == [("Bash", {"command": "echo hi"}),
                     ("Write", {"file_path": "y.txt", "content": "y\n"})]
    assert [h["tool_name"] for h in hooked] == ["Bash", "Write"]
    assert hooked[1]["tool_input"] == {"file_path": "y.txt", "content": "y\n"}
    assert "no shell today" in (first[-1].result or "")
    assert isinstance(second[-1], ResultMessage) and "Created" in (second[-1].result or "")
    assert (project / "y.txt").read_text() == "y\n"
    # one session: the second turn's request carries the first turn
    assert "run echo" in next(m.text for m in recorder.seen[-1].messages if m.role == "user")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_interrupt_ends_the_turn_with_a_result_and_the_session_goes_on(
    provider: str, simulator: Simulator, tmp_path: Path
) -> None:
    simulator.policy = Recorder([call("run_shell", command="sleep 60"), Reply("second turn")])
    options = sdk_options(simulator, provider, tmp_path / "project",
                          permission_mode="bypassPermissions")

    async def conversation() -> tuple[ResultMessage, ResultMessage]:
        async with ClaudeSDKClient(options) as client:
            await client.query("sleep")
            interrupted: ResultMessage | None = None
            async for message in client.receive_response():
                if isinstance(message, AssistantMessage):
                    await client.interrupt()
                if isinstance(message, ResultMessage):
                    interrupted = message
            await client.query("again")
            after = await _collect(client)
        assert interrupted is not None
        return interrupted, after[-1]

    interrupted, after = run(conversation())
    assert interrupted.is_error
    assert after.result == "second turn" and not after.is_error


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_tool_of_an_sdk_hosted_mcp_server(
    provider: str, simulator: Simulator, tmp_path: Path
) -> None:
    @tool("add", "Add two numbers", {"a": int, "b": int})
    async def add(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": str(args["a"] + args["b"])}]}

    server = create_sdk_mcp_server("calc", tools=[add])
    simulator.policy = Recorder([call("mcp__calc__add", a=2, b=3), _last_result])
    options = sdk_options(simulator, provider, tmp_path / "project",
                          mcp_servers={"calc": server}, allowed_tools=["mcp__calc__add"])

    async def conversation() -> list[Any]:
        return [m async for m in query(prompt="add 2 and 3", options=options)]

    messages = run(conversation())
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.result == "saw: 5"


def test_model_and_mode_change_over_the_channel_and_the_unsupported_fails_fast(
    simulator: Simulator, tmp_path: Path
) -> None:
    recorder = Recorder([Reply("one"), call("write_file", path="z.txt", content="z\n"),
                         _last_result])
    simulator.policy = recorder
    project = tmp_path / "project"
    options = sdk_options(simulator, "anthropic", project, permission_mode="bypassPermissions")

    async def conversation() -> tuple[list[Any], str]:
        async with ClaudeSDKClient(options) as client:
            await client.set_model("sim-haiku")
            await client.set_permission_mode("plan")
            await client.query("hello")
            messages = await _collect(client)
            await client.query("write z")
            messages += await _collect(client)
            try:
                await asyncio.wait_for(client.rewind_files("nothing"), 30)
            except Exception as exc:  # the SDK raises a plain Exception with our text
                refused = str(exc)
            else:
                refused = ""
        return messages, refused

    messages, refused = run(conversation())
    assert recorder.seen[0].model == "sim-haiku"
    assert not (project / "z.txt").exists()  # plan mode refused the write
    assert "plan mode" in ([m for m in messages if isinstance(m, ResultMessage)][-1].result or "")
    assert "does not support the control request 'rewind_files'" in refused
    texts = [b.text for m in messages if isinstance(m, AssistantMessage) for b in m.content
             if isinstance(b, TextBlock)]
    assert texts[0] == "one"
