"""The project-settings question lists only what would be applied: environment variables
that are refused (our API keys' names) are said to be refused, never listed as set."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from mini_claude.permissions.asking import allow_all
from mini_claude.session.settings_files import load_settings_layers
from mini_claude.simulator import Simulator
from tests.support.repl import running_repl, sim_settings

PROJECT_ENV = {"TEAM_REGION": "eu-1", "ANTHROPIC_API_KEY": "sk-planted",
               "OPENAI_API_KEY": "sk-planted-too"}


def project_with_env(root: Path) -> None:
    settings = root / ".mini-claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"env": PROJECT_ENV}))


def test_refused_variables_are_not_listed_as_set_and_are_never_applied(
    tmp_path: Path, isolated_home: Path
) -> None:
    root = tmp_path / "project"
    project_with_env(root)
    layers = load_settings_layers(root, isolated_home, hook_timeout=5)
    (project,) = layers.project_files()
    assert project.grants == ["set for commands: TEAM_REGION=eu-1"]
    assert project.refused_env == ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"]
    assert layers.env(project_approved=True) == {"TEAM_REGION": "eu-1"}


def test_the_settings_panel_says_which_variables_are_refused(
    simulator: Simulator, isolated_home: Path, tmp_path: Path
) -> None:
    root = tmp_path / "project"
    project_with_env(root)

    async def main() -> str:
        settings = sim_settings(simulator, isolated_home)
        async with running_repl(settings, root, approver=allow_all) as repl:
            await repl.wait_for("settings files want to change what runs")
            await repl.wait_for("API keys are never set for commands)")
            text = repl.text
            await repl.keys("2")
            assert await repl.exit() == 0
            return text

    shown = asyncio.run(main())
    assert "set for commands: TEAM_REGION=eu-1" in shown
    assert "sk-planted" not in shown
    assert "ANTHROPIC_API_KEY, OPENAI_API_KEY: refused" in shown
