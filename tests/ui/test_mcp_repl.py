"""MCP in the REPL: the start-up question, tools that arrive mid-session, /mcp, permissions."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mini_claude.mcp.config import PROJECT_CONFIG_NAME, load_config
from mini_claude.project.trust import ProjectTrust
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.ui.mcp_view import CONNECTING_LABEL
from tests.support.mcp import stdio_entry, write_config
from tests.support.repl import ReplDriver, running_repl, sim_settings, until

CONNECT_SECONDS = 90.0


def _run(
    simulator: Simulator,
    home: Path,
    project: Path,
    scenario: Callable[[ReplDriver], Awaitable[None]],
    **settings: Any,
) -> None:
    async def main() -> None:
        async with running_repl(sim_settings(simulator, home, **settings), project) as repl:
            await scenario(repl)
            if not repl.task.done():
                assert await repl.exit() == 0

    asyncio.run(main())


def _state(repl: ReplDriver, name: str) -> str:
    connection = repl.session.mcp.connections.get(name)
    return connection.state if connection is not None else "absent"


def test_approved_project_server_tools_arrive_and_ask_before_running(
    simulator: Simulator, isolated_home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    marker = tmp_path / "started.txt"
    write_config(project / PROJECT_CONFIG_NAME, {"sample": stdio_entry(marker)})
    simulator.policy = ScriptedPolicy(
        [
            Reply(tool_calls=[ToolCall("mcp__sample__echo", {"text": "from the repl"})]),
            lambda conv: Reply("the server said: " + conv.last_tool_results()[0].content),
        ]
    )

    async def scenario(repl: ReplDriver) -> None:
        await repl.wait_for("Project MCP servers")
        assert "sample" in repl.text and "sample_server.py" in repl.text
        await repl.keys("1")
        await repl.wait_for("project MCP servers approved")
        await until(lambda: _state(repl, "sample") != "connecting", "the server",
                    CONNECT_SECONDS)
        assert _state(repl, "sample") == "connected"
        assert marker.exists()
        await repl.wait_for("MCP server sample connected · 7 tools")
        mark = await repl.submit("/mcp")
        await repl.wait_for("connected", after=mark)
        await repl.wait_for("echo, getenv, big, picture", after=mark)

        mark = await repl.submit("call the server")
        await repl.wait_for("mcp__sample__echo", after=mark)
        await repl.wait_for("Do you want to proceed?", after=mark)  # the permission box
        await repl.keys("1")  # yes, once (keys typed before the box is shown answer nothing)
        await repl.wait_for("the server said: echo: from the repl", after=mark)
        request = simulator.requests[0]
        assert any(t.get("name") == "mcp__sample__echo" for t in request.body["tools"])

    _run(simulator, isolated_home, project, scenario)
    config = project / PROJECT_CONFIG_NAME
    loaded = load_config(config, "project", {})
    assert loaded is not None
    assert ProjectTrust(isolated_home).status(project, config, loaded.trusted_content) == "approved"


def test_denied_project_servers_stay_off_until_mcp_approve(
    simulator: Simulator, isolated_home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    marker = tmp_path / "started.txt"
    write_config(project / PROJECT_CONFIG_NAME, {"sample": stdio_entry(marker)})

    async def scenario(repl: ReplDriver) -> None:
        await repl.wait_for("Project MCP servers")
        await repl.keys("2")
        await repl.wait_for("/mcp approve starts them")
        mark = await repl.submit("/mcp")
        await repl.wait_for("denied", after=mark)
        await repl.at_prompt()
        assert not marker.exists()
        assert repl.session.mcp.connections == {}

        mark = await repl.submit("/mcp approve")
        await repl.wait_for("approved", after=mark)
        await until(lambda: _state(repl, "sample") != "connecting", "the server",
                    CONNECT_SECONDS)
        assert _state(repl, "sample") == "connected"
        assert "mcp__sample__echo" in [t.name for t in repl.repl.agent.tools]

    _run(simulator, isolated_home, project, scenario)


def test_a_user_server_that_fails_is_reported_once_and_listed(
    simulator: Simulator, isolated_home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    write_config(isolated_home / "mcp.json", {"ghost": {"command": str(tmp_path / "missing")}})

    async def scenario(repl: ReplDriver) -> None:
        await repl.wait_for("MCP server ghost failed")
        assert "Project MCP servers" not in repl.text  # user servers need no approval
        mark = await repl.submit("/mcp")
        await repl.wait_for("ghost", after=mark)
        await repl.wait_for("user", after=mark)
        await repl.wait_for("failed", after=mark)
        assert repl.text.count("MCP server ghost failed") == 1

    _run(simulator, isolated_home, project, scenario)


def test_a_message_sent_at_once_waits_for_a_server_still_connecting(
    simulator: Simulator, isolated_home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    write_config(isolated_home / "mcp.json", {"sample": stdio_entry(start_delay=2.0)})
    simulator.policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("mcp__sample__echo", {"text": "tokyo"})]),
        lambda conv: Reply("the server said: " + conv.last_tool_results()[0].content),
    ])

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("what time is it in Tokyo?")  # the server is still starting
        await until(lambda: repl.repl.activity.label == CONNECTING_LABEL, "the waiting state")
        await repl.wait_for("Do you want to proceed?", after=mark)
        await repl.keys("1")
        await repl.wait_for("the server said: echo: tokyo", after=mark)
        first = simulator.requests[0]
        assert any(t.get("name") == "mcp__sample__echo" for t in first.body["tools"])

    _run(simulator, isolated_home, project, scenario)


def test_the_wait_for_a_server_is_bounded_by_its_setting(
    simulator: Simulator, isolated_home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    write_config(isolated_home / "mcp.json", {"sample": stdio_entry(start_delay=60.0)})
    simulator.policy = ScriptedPolicy([Reply("Answered without it.")])

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("hello")
        await repl.wait_for("Answered without it.", after=mark)
        assert "MCP server sample still connecting" in repl.text[mark:]
        assert _state(repl, "sample") == "connecting"

    _run(simulator, isolated_home, project, scenario, mcp_startup_wait_seconds=0.5)
