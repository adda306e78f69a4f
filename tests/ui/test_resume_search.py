"""/resume finds sessions by what was said in them and by the name /rename gave; a resumed
session shows what the user typed (``/init``, not its expanded prompt; no reminders)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mini_claude.permissions.asking import allow_all
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator
from mini_claude.transcript import SessionInfo
from mini_claude.ui.commands import _session_label
from tests.support.repl import ReplDriver, running_repl, sim_settings


def test_resume_finds_by_content_and_name_and_shows_what_was_typed(
    simulator: Simulator, isolated_home: Path, tmp_path: Path,
) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Flamingos are pink."), Reply("CLAUDE.md written."), Reply("Penguins swim."),
        Reply("Noted."),
    ])

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("tell me about flamingo colours")
        await repl.wait_for("Flamingos are pink.", after=mark)
        mark = await repl.submit("/init")
        await repl.wait_for("CLAUDE.md written.", after=mark)
        first = repl.repl.session.session_id
        mark = await repl.submit("/rename bird notes")
        await repl.wait_for("is named 'bird notes'", after=mark)
        mark = await repl.submit("/clear")
        await repl.at_prompt()
        mark = await repl.submit("and penguins?")
        await repl.wait_for("Penguins swim.", after=mark)
        mark = await repl.submit("/clear")
        await repl.at_prompt()
        mark = await repl.submit("a third, unrelated question")
        await repl.wait_for("Noted.", after=mark)
        mark = await repl.submit("/resume nothing-said-anywhere")
        await repl.wait_for("mentions 'nothing-said-anywhere'", after=mark)
        # the penguin session is newer: only the search puts the flamingo one first
        mark = await repl.submit("/resume FLAMINGO")
        await repl.wait_for("Resume which session?", after=mark)
        await repl.keys("1")
        await repl.wait_for(f"resumed session {first}", after=mark)
        shown = repl.text[mark:]
        assert "> /init" in shown and "> tell me about flamingo colours" in shown
        assert "system-reminder" not in shown and "Study this project" not in shown
        mark = await repl.submit("/clear")
        await repl.at_prompt()
        mark = await repl.submit("/resume bird notes")
        await repl.wait_for("Resume which session?", after=mark)
        await repl.keys("1")
        await repl.wait_for(f"resumed session {first}", after=mark)

    async def main() -> None:
        async with running_repl(sim_settings(simulator, isolated_home), tmp_path,
                                approver=allow_all) as repl:
            await scenario(repl)
            assert await repl.exit() == 0

    asyncio.run(main())


def test_a_fork_is_labelled_with_its_origin(tmp_path: Path) -> None:
    fork = SessionInfo("20261127-1-b", tmp_path, "/p", 0.0, "hi", forked_from="20261127-1-a")
    assert "fork of 20261127-1-a" in _session_label(fork)
    assert "fork" not in _session_label(SessionInfo("x", tmp_path, "/p", 0.0, "hi"))
