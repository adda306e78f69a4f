"""Rules the user keeps are written where Claude Code writes them: "don't ask again" to the
project's ``.claude/settings.local.json`` (so a later session does not ask), ``/permissions add``
to the file of the scope asked for, each leaving the file's other keys and layout as they were."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from mini_claude.project.trust import ProjectTrust
from mini_claude.session.json_edit import append_to_list
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.repl import ReplDriver, running_repl, sim_settings

LOCAL_SETTINGS = Path(".claude") / "settings.local.json"


def shell(command: str) -> Reply:
    return Reply("Running.", [ToolCall("run_shell", {"command": command})])


def test_a_rule_is_spliced_into_the_file_leaving_the_rest_of_its_text_alone() -> None:
    text = ('{\n    "model": "opus",   \n    "permissions": {\n        "deny": ["Read(.env)"]\n'
            '    },\n    "env": {"A": "1"}\n}\n')
    added = append_to_list(text, ("permissions", "allow"), "Bash(cat:*)")
    assert added == ('{\n    "model": "opus",   \n    "permissions": {\n'
                     '        "deny": ["Read(.env)"],\n        "allow": [\n'
                     '            "Bash(cat:*)"\n        ]\n    },\n    "env": {"A": "1"}\n}\n')
    again = append_to_list(added, ("permissions", "allow"), "Bash(ls:*)")
    assert json.loads(again)["permissions"]["allow"] == ["Bash(cat:*)", "Bash(ls:*)"]
    assert again.startswith('{\n    "model": "opus",   \n')
    assert append_to_list(again, ("permissions", "allow"), "Bash(ls:*)") == again


def test_dont_ask_again_writes_the_rule_to_settings_local_and_a_later_session_does_not_ask(
    simulator: Simulator, isolated_home: Path, tmp_path: Path,
) -> None:
    project = tmp_path / "repo"
    (project / ".claude").mkdir(parents=True)
    (project / "a.md").write_text("alpha\n")
    local = project / LOCAL_SETTINGS
    local.write_text('{\n  "permissions": {\n    "deny": ["Read(secret.txt)"]\n  },\n'
                     '  "spinnerTipsEnabled": false\n}\n')
    simulator.policy = ScriptedPolicy([
        shell("cat a.md"), Reply("Read it."),
        shell("cat a.md"), Reply("Read it again, unasked."),
    ])

    async def first(repl: ReplDriver) -> None:
        mark = await repl.submit("read it")
        await repl.wait_for("Do you want to proceed?", after=mark)
        await repl.keys("2")
        await repl.wait_for("Read it.", after=mark)
        assert "Bash(cat:*): saved to .claude/settings.local.json" in repl.text[mark:]

    async def second(repl: ReplDriver) -> None:
        mark = await repl.submit("again")
        await repl.wait_for("Read it again, unasked.", after=mark)
        assert "Do you want to proceed?" not in repl.text[mark:]
        assert "Project settings" not in repl.text  # the user's own answer needs no approval

    async def main() -> None:
        settings = sim_settings(simulator, isolated_home)
        async with running_repl(settings, project) as repl:
            await first(repl)
            assert await repl.exit() == 0
        async with running_repl(settings, project) as repl:
            await second(repl)
            assert await repl.exit() == 0

    asyncio.run(main())
    written = local.read_text()
    assert json.loads(written) == {"permissions": {"deny": ["Read(secret.txt)"],
                                                   "allow": ["Bash(cat:*)"]},
                                   "spinnerTipsEnabled": False}
    assert written.endswith('  "spinnerTipsEnabled": false\n}\n')
    assert ProjectTrust(isolated_home).status(project, local, local.read_bytes()) == "approved"


def test_permissions_add_writes_each_scope_and_the_rule_counts_at_once(
    simulator: Simulator, isolated_home: Path, tmp_path: Path,
) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    simulator.policy = ScriptedPolicy([shell("git push origin main"), Reply("Refused, fine.")])
    user_file = Path.home() / ".claude" / "settings.json"

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("/permissions add deny 'Bash(git push:*)' --scope user")
        await repl.wait_for("deny Bash(git push:*): saved to ~/.claude/settings.json", after=mark)
        mark = await repl.submit("/permissions add ask WebFetch -s project")
        await repl.wait_for("ask WebFetch: saved to .claude/settings.json", after=mark)
        mark = await repl.submit("/permissions add allow Bash(npm test:*)")
        await repl.wait_for("saved to .claude/settings.local.json", after=mark)
        mark = await repl.submit("/permissions add allow Frobnicate(x)")
        await repl.wait_for("Frobnicate", after=mark)
        mark = await repl.submit("/permissions add maybe Bash")
        await repl.wait_for("usage: /permissions", after=mark)
        mark = await repl.submit("/permissions")
        await repl.wait_for("Bash(npm test:*)", after=mark)
        assert "Bash(git push:*)" in repl.text[mark:] and "WebFetch" in repl.text[mark:]
        mark = await repl.submit("push it")
        await repl.wait_for("Refused, fine.", after=mark)
        assert "Do you want to proceed?" not in repl.text[mark:]
        assert "Permission denied by" in repl.text[mark:]

    async def main() -> None:
        async with running_repl(sim_settings(simulator, isolated_home), project) as repl:
            await scenario(repl)
            assert await repl.exit() == 0

    asyncio.run(main())
    assert json.loads(user_file.read_text()) == {"permissions": {"deny": ["Bash(git push:*)"]}}
    assert json.loads((project / ".claude" / "settings.json").read_text()) == {
        "permissions": {"ask": ["WebFetch"]}}
    assert json.loads((project / LOCAL_SETTINGS).read_text()) == {
        "permissions": {"allow": ["Bash(npm test:*)"]}}
