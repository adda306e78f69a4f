"""What an MCP tool and the user's own `!cmd` change is undone by /rewind, in the REPL
(pipe input), over HTTP against the simulator, on both providers."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from mini_claude.permissions.asking import allow_all
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.agent import PROVIDERS
from tests.support.mcp import write_config
from tests.support.repl import ReplDriver, running_repl, sim_settings

FILE_SERVER = Path(__file__).parents[1] / "support" / "mcp_servers" / "file_server.py"


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def settings_for(simulator: Simulator, home: Path, provider: str) -> Any:
    if provider == "anthropic":
        return sim_settings(simulator, home)
    return sim_settings(simulator, home, provider="openai", api_keys={"openai": "test-key"},
                        base_urls={"openai": simulator.openai_base_url})


def make_project(root: Path) -> Path:
    root.mkdir()
    (root / "notes.txt").write_text("the user's notes\n")
    (root / "run.sh").write_text("#!/bin/sh\necho run\n")
    os.chmod(root / "run.sh", 0o750)
    return root


async def rewind_code_to_newest_message(repl: ReplDriver) -> int:
    mark = await repl.submit("/rewind")
    await repl.wait_for("Rewind to before which message?", after=mark)
    await repl.keys("1")  # the newest message
    await repl.wait_for("changed since then by mini-claude", after=mark)
    await repl.keys("3")  # restore code only
    await repl.wait_for("files: ", after=mark)
    return mark


def test_files_an_mcp_tool_changed_and_deleted_are_restored_by_rewind(
        simulator: Simulator, isolated_home: Path, tmp_path: Path, provider: str) -> None:
    project = make_project(tmp_path / "project")
    write_config(isolated_home / "mcp.json",
                 {"files": {"command": sys.executable, "args": [str(FILE_SERVER)]}})
    simulator.policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("mcp__files__write",
                                   {"path": "notes.txt", "text": "overwritten by a tool\n"})]),
        Reply(tool_calls=[ToolCall("mcp__files__remove", {"path": "run.sh"})]),
        Reply("The tool changed them."),
    ], final=Reply("Noted."))

    async def scenario() -> None:
        settings = settings_for(simulator, isolated_home, provider)
        async with running_repl(settings, project, approver=allow_all) as repl:
            await repl.wait_for("MCP server files connected")
            mark = await repl.submit("tidy up with the files server")
            await repl.wait_for("The tool changed them.", after=mark)
            assert (project / "notes.txt").read_text() == "overwritten by a tool\n"
            assert not (project / "run.sh").exists()
            mark = await rewind_code_to_newest_message(repl)
            assert "files: 2 restored" in repl.text[mark:]
            assert (project / "notes.txt").read_text() == "the user's notes\n"
            assert (project / "run.sh").read_text() == "#!/bin/sh\necho run\n"
            assert (project / "run.sh").stat().st_mode & 0o777 == 0o750
            await repl.exit()

    asyncio.run(scenario())


def test_files_the_users_own_bang_command_changed_are_restored_by_rewind(
        simulator: Simulator, isolated_home: Path, tmp_path: Path, provider: str) -> None:
    project = make_project(tmp_path / "project")
    simulator.policy = ScriptedPolicy([], final=Reply("Noted."))

    async def scenario() -> None:
        settings = settings_for(simulator, isolated_home, provider)
        async with running_repl(settings, project, approver=allow_all) as repl:
            mark = await repl.submit("here is my project")
            await repl.wait_for("Noted.", after=mark)
            mark = await repl.submit("!sed -i s/notes/NOTES/ notes.txt && rm run.sh")
            await repl.wait_for("goes to the model with your next message", after=mark)
            assert (project / "notes.txt").read_text() == "the user's NOTES\n"
            mark = await repl.submit("what did my command do?")
            await repl.wait_for("Noted.", after=mark)
            mark = await repl.submit("/rewind")
            await repl.wait_for("Rewind to before which message?", after=mark)
            await repl.keys("\x1b[B")  # down to the message before the command
            await repl.keys("\r")
            await repl.wait_for("changed since then by mini-claude", after=mark)
            await repl.keys("3")  # restore code only
            await repl.wait_for("files: 2 restored", after=mark)
            assert (project / "notes.txt").read_text() == "the user's notes\n"
            assert (project / "run.sh").stat().st_mode & 0o777 == 0o750
            await repl.exit()

    asyncio.run(scenario())
