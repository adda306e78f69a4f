"""One approval panel at start for everything a project brings: servers, settings, commands with
shell lines, outside imports; one answer, details on request, each item's own record kept."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from mini_claude.mcp.config import PROJECT_CONFIG_NAME, load_config
from mini_claude.project.trust import ProjectTrust
from mini_claude.simulator import ScriptedPolicy, Simulator
from tests.support.claude_project import hook, write, write_hooks
from tests.support.mcp import stdio_entry, write_config
from tests.support.repl import ReplDriver, running_repl, sim_settings, until

COMMAND = "---\ndescription: status\n---\nStatus: !`echo STATUS`\n"


def _project(root: Path, marker: Path) -> Path:
    write_config(root / PROJECT_CONFIG_NAME, {"sample": stdio_entry(marker)})
    write_hooks(root / ".claude" / "settings.json", {"Stop": [hook("true")]})
    write(root / ".claude" / "commands" / "status.md", COMMAND)
    return root


def _records(home: Path, project: Path) -> dict[str, str]:
    trust = ProjectTrust(home)
    config = load_config(project / PROJECT_CONFIG_NAME, "project", {})
    assert config is not None
    files = {
        "servers": (project / PROJECT_CONFIG_NAME, config.trusted_content),
        "settings": (project / ".claude" / "settings.json",
                     (project / ".claude" / "settings.json").read_bytes()),
        "command": (project / ".claude" / "commands" / "status.md", COMMAND.encode()),
    }
    return {name: trust.status(project, path, content) for name, (path, content) in files.items()}


def _run(simulator: Simulator, home: Path, project: Path, scenario: object) -> None:
    async def main() -> None:
        async with running_repl(sim_settings(simulator, home), project) as repl:
            await scenario(repl)  # type: ignore[operator]
            assert await repl.exit() == 0

    asyncio.run(main())


def test_one_panel_lists_everything_shows_details_on_request_and_one_yes_approves_each(
    simulator: Simulator, isolated_home: Path, tmp_path: Path,
) -> None:
    marker = tmp_path / "started.txt"
    project = _project(tmp_path / "project", marker)
    simulator.policy = ScriptedPolicy([])

    async def scenario(repl: ReplDriver) -> None:
        await repl.wait_for("This project brings")
        text = repl.text
        assert "MCP servers from .mcp.json: sample" in text
        assert "settings (hooks, rules, mode, env) in .claude/settings.json" in text
        assert "/status: runs shell lines" in text
        assert "Project MCP servers" not in text  # no separate questions
        await repl.keys("3")  # the details: each item's own panel
        await repl.wait_for("Project command")
        assert "Project MCP servers" in repl.text and "Project settings" in repl.text
        assert "sample_server.py" in repl.text and "echo STATUS" in repl.text
        await repl.keys("1")
        await repl.wait_for("approved: MCP servers")
        await until(lambda: marker.exists(), "the approved server to start")

    _run(simulator, isolated_home, project, scenario)
    assert _records(isolated_home, project) == {
        "servers": "approved", "settings": "approved", "command": "approved"}


def test_one_no_denies_each_and_a_later_start_asks_nothing(
    simulator: Simulator, isolated_home: Path, tmp_path: Path,
) -> None:
    marker = tmp_path / "started.txt"
    project = _project(tmp_path / "project", marker)
    simulator.policy = ScriptedPolicy([])

    async def first(repl: ReplDriver) -> None:
        await repl.wait_for("This project brings")
        await repl.keys("2")
        await repl.wait_for("none of them is used")

    async def second(repl: ReplDriver) -> None:
        await repl.at_prompt()
        assert "This project brings" not in repl.text
        assert "esc means no" not in repl.text

    _run(simulator, isolated_home, project, first)
    assert _records(isolated_home, project) == {
        "servers": "denied", "settings": "denied", "command": "denied"}
    _run(simulator, isolated_home, project, second)
    assert not marker.exists()


def test_a_single_item_keeps_its_own_question(
    simulator: Simulator, isolated_home: Path, tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps(
        {"permissions": {"allow": ["Bash(make:*)"]}}))
    simulator.policy = ScriptedPolicy([])

    async def scenario(repl: ReplDriver) -> None:
        await repl.wait_for("Project settings")
        assert "This project brings" not in repl.text
        await repl.keys("2")
        await repl.wait_for("project settings not used")

    _run(simulator, isolated_home, project, scenario)
