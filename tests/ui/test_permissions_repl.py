"""The REPL side of permissions: "don't ask again" as a prefix rule, ``/permissions`` listing
and removing rules with their sources, Shift+Tab through the modes, the status line's marker."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from mini_claude.permissions.asking import PermissionRequest
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.ui.permissions import answer_labels
from mini_claude.ui.statusbar import status_text
from tests.support.repl import ReplDriver, running_repl, sim_settings, until

SHIFT_TAB = "\x1b[Z"


def shell(command: str) -> Reply:
    return Reply("Running.", [ToolCall("run_shell", {"command": command})])


def test_the_answers_name_the_proposed_rule() -> None:
    request = PermissionRequest("run_shell", "npm run test -- -x", "run_shell:npm run test -- -x",
                                rule="run_shell(npm run test:*)")
    assert answer_labels(request)[1] == (
        "Yes, and don't ask again for `npm run test` commands this session")
    exact = PermissionRequest("run_shell", "ls | wc", "run_shell:ls | wc",
                              rule="run_shell(ls | wc)")
    assert answer_labels(exact)[1] == "Yes, and don't ask again for `ls | wc` this session"
    assert answer_labels(request, "/work/repo")[1] == (
        "Yes, and don't ask again for `npm run test` commands in /work/repo")
    one_file = PermissionRequest("write_file", "Write a.txt", "write_file:a.txt")
    assert answer_labels(one_file, "/work/repo")[1].endswith("this session")
    domain = PermissionRequest("network", "reach pypi.org", "network:pypi.org",
                               kept_in="sandbox.network.allowedDomains")
    assert answer_labels(domain, "/work/repo")[1] == (
        "Yes, and don't ask again for `pypi.org` (kept in sandbox.network.allowedDomains)")


def status(repl: ReplDriver) -> str:
    return "".join(text for _style, text, *_ in repl.repl._status_line())


def test_dont_ask_again_allows_the_commands_family_and_permissions_lists_and_removes_it(
    simulator: Simulator, isolated_home: Path, tmp_path: Path,
) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    (project / "a.md").write_text("alpha\n")
    (project / "b.md").write_text("beta\n")
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "settings.json").write_text(json.dumps(
        {"permissions": {"deny": ["Bash(git push:*)"], "allow": ["Read(docs/**)"]}}))
    simulator.policy = ScriptedPolicy([
        shell("cat a.md"), shell("cat b.md"), Reply("Read both."),
        shell("cat a.md"), Reply("Asked again."),
    ])

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("read them")
        await repl.wait_for("Do you want to proceed?", after=mark)
        await repl.keys("2")
        await repl.wait_for("Read both.", after=mark)
        assert repl.text[mark:].count("Do you want to proceed?") == 1
        mark = await repl.submit("/permissions")
        await repl.wait_for("Bash(cat:*)", after=mark)
        listing = repl.text[mark:]
        assert "Bash(git push:*)" in listing and str(isolated_home / "settings.json") in listing
        assert listing.index("Bash(git push:*)") < listing.index("Bash(cat:*)")  # deny first
        assert "settings.local.json" in listing and "permission mode: default" in listing
        mark = await repl.submit("/permissions remove 3")
        await repl.wait_for("removed allow rule Bash(cat:*)", after=mark)
        mark = await repl.submit("/permissions remove 9")
        await repl.wait_for("no rule '9'", after=mark)
        mark = await repl.submit("again")
        await repl.wait_for("Do you want to proceed?", after=mark)  # the rule is gone
        await repl.keys("1")
        await repl.wait_for("Asked again.", after=mark)

    async def main() -> None:
        async with running_repl(sim_settings(simulator, isolated_home), project) as repl:
            await scenario(repl)
            assert await repl.exit() == 0

    asyncio.run(main())


def test_shift_tab_cycles_the_modes_and_plan_mode_refuses_writes_without_asking(
    simulator: Simulator, isolated_home: Path, tmp_path: Path,
) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    simulator.policy = ScriptedPolicy([
        Reply("Writing.", [ToolCall("write_file", {"path": "x.txt", "content": "x"})]),
        Reply("Refused, planning instead."),
    ])

    async def scenario(repl: ReplDriver) -> None:
        await repl.at_prompt()
        assert "accept edits" not in status(repl) and "plan mode" not in status(repl)
        await repl.keys(SHIFT_TAB)
        await until(lambda: "⏵⏵ accept edits on" in status(repl), "accept edits")
        await repl.keys(SHIFT_TAB)
        await until(lambda: "⏸ plan mode on (shift+tab to cycle)" in status(repl), "plan mode")
        mark = await repl.submit("write x")
        await repl.wait_for("Refused, planning instead.", after=mark)
        assert "Do you want to proceed?" not in repl.text[mark:]
        assert not (project / "x.txt").exists()
        mark = await repl.submit("/permissions")
        await repl.wait_for("permission mode: plan  (changed in this session", after=mark)
        await repl.keys(SHIFT_TAB)
        await until(lambda: "plan mode" not in status(repl), "default again")
        assert repl.session.permission_setup.permissions.mode == "default"

    async def main() -> None:
        async with running_repl(sim_settings(simulator, isolated_home), project) as repl:
            await scenario(repl)
            assert await repl.exit() == 0

    asyncio.run(main())


def test_bypass_mode_is_always_on_the_status_line(
    simulator: Simulator, isolated_home: Path, tmp_path: Path,
) -> None:
    project = tmp_path / "repo"
    project.mkdir()

    async def main() -> None:
        settings = sim_settings(simulator, isolated_home)
        async with running_repl(settings, project, mode_flag="bypassPermissions") as repl:
            await repl.at_prompt()
            assert status(repl).startswith(" ⚠ bypass permissions on (shift+tab to cycle)")
            agent = repl.session.agent
            narrow = status_text(agent.status(), agent.costs, "m", None, width=50,
                                 mode="⚠ bypass permissions on (shift+tab to cycle)")
            assert "bypass permissions on" in narrow and "%" in narrow
            await repl.keys(SHIFT_TAB)
            await until(lambda: "bypass" not in status(repl), "default")
            for _ in range(3):
                await repl.keys(SHIFT_TAB)
            await until(lambda: "bypass permissions on" in status(repl), "bypass again")
            assert await repl.exit() == 0

    asyncio.run(main())
