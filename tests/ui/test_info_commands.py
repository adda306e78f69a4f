"""The commands a Claude Code user types to see where they stand: /status, /config, /doctor,
/export, /agents, /vim and /bashes, in a running REPL against the simulator."""

from __future__ import annotations

import asyncio
import base64
import re
from pathlib import Path

import pytest
from prompt_toolkit.enums import EditingMode

from mini_claude.permissions.asking import allow_all
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.repl import ReplDriver, running_repl, sim_settings, until


def test_status_config_doctor_and_vim(
    simulator: Simulator, isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MINI_CLAUDE_AUTOCOMPACT_PCT", "70")  # where the 70 below came from

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("/status")
        await repl.wait_for("permission mode", after=mark)
        shown = repl.text[mark:]
        assert repl.repl.session.session_id in shown and repl.repl.settings.model in shown
        assert "tokens" in shown and "MCP servers" in shown
        mark = await repl.submit("/config")
        await repl.wait_for("autocompact_pct", after=mark)
        assert "environment (MINI_CLAUDE_AUTOCOMPACT_PCT)" in repl.text[mark:]
        assert "test-key" not in repl.text  # a key is never shown
        mark = await repl.submit("/doctor")
        await repl.wait_for("ripgrep", after=mark)
        for check in ("install", "API key", "sandbox", "terminal"):
            assert check in repl.text[mark:], check
        mark = await repl.submit("/vim")
        await repl.wait_for("vim editing mode", after=mark)
        await repl.at_prompt()
        prompt = repl.repl._prompt
        assert prompt is not None and prompt.app.editing_mode == EditingMode.VI
        mark = await repl.submit("/vim")
        await repl.wait_for("standard editing mode", after=mark)
        assert prompt.app.editing_mode == EditingMode.EMACS

    async def main() -> None:
        settings = sim_settings(simulator, isolated_home, autocompact_pct=70)
        async with running_repl(settings, tmp_path, approver=allow_all) as repl:
            await scenario(repl)
            assert await repl.exit() == 0

    asyncio.run(main())


def test_export_agents_and_bashes(
    simulator: Simulator, isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    simulator.policy = ScriptedPolicy([
        Reply("Starting it.", [ToolCall("run_shell", {
            "command": "echo serving-on-8000; sleep 120", "run_in_background": True})]),
        Reply("It runs in the background."),
    ])

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("start the server")
        await repl.wait_for("It runs in the background.", after=mark)
        shell_id = repl.repl.session.shells.all()[0].id
        await until(lambda: repl.repl.session.shells.all()[0].log_size() > 0, "output")
        mark = await repl.submit(f"/bashes {shell_id}")
        await repl.wait_for("serving-on-8000", after=mark)
        mark = await repl.submit("/export notes/chat.md")
        await repl.wait_for("conversation exported", after=mark)
        exported = (tmp_path / "notes" / "chat.md").read_text()
        assert "## You\n\nstart the server" in exported
        assert "**→ run_shell**" in exported and "It runs in the background." in exported
        mark = await repl.submit("/export --clipboard")
        await repl.wait_for("copied to the clipboard", after=mark)
        sent = re.search(r"\x1b\]52;c;([A-Za-z0-9+/=]+)\x07", repl.text)
        assert sent and "start the server" in base64.b64decode(sent.group(1)).decode()
        mark = await repl.submit("/agents new reviewer")
        await repl.wait_for("wrote .claude/agents/reviewer.md", after=mark)
        mark = await repl.submit("/agents")
        await repl.wait_for("reviewer", after=mark)
        assert "explore" in repl.text[mark:] and "built in" in repl.text[mark:]
        mark = await repl.submit("/agents reviewer")
        await repl.wait_for("You are reviewer.", after=mark)

    async def main() -> None:
        async with running_repl(sim_settings(simulator, isolated_home), tmp_path,
                                approver=allow_all) as repl:
            await scenario(repl)
            assert await repl.exit() == 0

    asyncio.run(main())
