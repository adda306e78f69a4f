"""The REPL side of plans, skills and hooks: the start-up question about project hooks, the
checklist as the plan changes, /todos, /skills and /hooks."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from mini_claude.permissions.asking import allow_all
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.repl import ReplDriver, running_repl, sim_settings


def project_with_hook(root: Path, marker: Path) -> None:
    hook = root.parent / "hook.py"
    hook.write_text(f"import sys\nsys.stdin.read()\nopen({str(marker)!r}, 'a').write('ran ')\n")
    settings = root / ".mini-claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "run_shell", "hooks": [{"type": "command",
                                            "command": f"{sys.executable} {hook}"}]}]}}))
    skill = root / ".claude" / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: deploy\ndescription: How we deploy.\n---\nSteps.\n")


def test_approved_project_hooks_run_and_the_plan_shows_as_a_checklist(
    simulator: Simulator, isolated_home: Path, tmp_path: Path
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    marker = tmp_path / "marker.txt"
    project_with_hook(root, marker)
    todos = [{"content": "Look around", "status": "in_progress"},
             {"content": "Report back", "status": "pending"}]
    progress = [{"content": "Look around", "status": "completed"},
                {"content": "Report back", "status": "in_progress"}]
    simulator.policy = ScriptedPolicy([
        Reply("Planning.", [ToolCall("todo_write", {"todos": todos})]),
        Reply("Looking.", [ToolCall("run_shell", {"command": "echo hi"})]),
        Reply("Progress.", [ToolCall("todo_write", {"todos": progress})]),
        Reply("Done."),
    ])

    async def main() -> None:
        settings = sim_settings(simulator, isolated_home)
        async with running_repl(settings, root, approver=allow_all) as repl:
            await scenario(repl)
            assert await repl.exit() == 0

    async def scenario(repl: ReplDriver) -> None:
        await repl.wait_for("settings files want to change what runs")
        assert "run as a PreToolUse hook" in repl.text and "hook.py" in repl.text
        await repl.keys("1")
        await repl.wait_for("project settings approved")
        mark = await repl.submit("look around and report")
        await repl.wait_for("todo list · 1/2 done", after=mark)
        shown = repl.text[mark:]
        # Redrawn in place under the spinner while the turn ran; the scrollback gets the plan
        # once, as it stands when the turn ends.
        assert "todo list · 0/2 done" not in shown and shown.count("todo list ·") == 1
        assert "[~] Look around" not in shown  # the tool's own text stays off the screen
        assert "☒ Look around" in shown and "▶ Report back" in shown
        assert shown.index("Done.") < shown.index("todo list · 1/2 done")
        assert repl.repl.activity.plan == []
        assert marker.read_text() == "ran "
        mark = await repl.submit("/todos")
        await repl.wait_for("▶ Report back", after=mark)
        mark = await repl.submit("/skills")
        await repl.wait_for("How we deploy.", after=mark)
        assert "deploy" in repl.text[mark:] and "(project)" in repl.text[mark:]
        mark = await repl.submit("/hooks")
        await repl.wait_for("hook.py", after=mark)

    asyncio.run(main())


def test_declined_project_hooks_do_not_run_and_the_answer_is_kept(
    simulator: Simulator, isolated_home: Path, tmp_path: Path
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    marker = tmp_path / "marker.txt"
    project_with_hook(root, marker)
    simulator.policy = ScriptedPolicy([
        Reply("Looking.", [ToolCall("run_shell", {"command": "echo hi"})]), Reply("Done."),
    ])

    async def main(answer: str | None) -> str:
        settings = sim_settings(simulator, isolated_home)
        async with running_repl(settings, root, approver=allow_all) as repl:
            if answer is not None:
                await repl.wait_for("settings files want to change what runs")
                await repl.keys(answer)
            mark = await repl.submit("look")
            await repl.wait_for("Done.", after=mark)
            text = repl.text
            assert await repl.exit() == 0
            return text

    asyncio.run(main("2"))
    assert not marker.exists()
    simulator.policy = ScriptedPolicy([Reply("Done.")])
    second = asyncio.run(main(None))  # not asked again: the denial is remembered
    assert "settings files want to change" not in second
    assert "project settings not used" in second and "/hooks approve uses them" in second
