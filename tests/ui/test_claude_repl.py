"""A Claude Code repository in the REPL: the imports question, custom commands in /help and at
work, ``# note``, ``/memory``, ``/context`` and the notifications of a waiting question."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from mini_claude.permissions.asking import allow_all
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.claude_project import (
    PY,
    claude_project,
    hook,
    hook_script,
    logged,
    write,
    write_hooks,
)
from tests.support.repl import ReplDriver, running_repl, sim_settings, until

# The first turn of a test process imports the provider's SDK, which takes long on a loaded
# machine; later waits use the driver's own limit.
FIRST_TURN_SECONDS = 120.0


async def first_turn_shows(repl: ReplDriver, needle: str, mark: int) -> None:
    await until(lambda: needle in repl.text[mark:], repr(needle), timeout=FIRST_TURN_SECONDS)


def test_a_claude_code_repository_in_the_repl(
    simulator: Simulator, isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = claude_project(tmp_path / "repo")
    write(root / "CLAUDE.local.md", "LOCAL-MARKER @../shared.md\n")
    write(tmp_path / "shared.md", "SHARED-MARKER\n")
    editor = write(tmp_path / "editor.py", (
        "import sys\nopen(sys.argv[1], 'a').write('EDITED-IN-EDITOR\\n')\n"))
    monkeypatch.setenv("EDITOR", f"{PY} {editor}")
    monkeypatch.delenv("VISUAL", raising=False)
    simulator.policy = ScriptedPolicy([Reply("Status explained."), Reply("Noted.")])

    async def scenario(repl: ReplDriver) -> None:
        await repl.wait_for("This project brings")  # the imports and the command, at once
        assert "instruction import(s) from outside" in repl.text
        assert "/build-status: runs shell lines" in repl.text
        await repl.keys("3")
        await repl.wait_for("import files from outside the project")
        assert "CLAUDE.local.md imports" in repl.text and "shared.md" in repl.text
        await repl.keys("1")
        await repl.wait_for("approved: ")
        prompt = repl.repl._prompt
        assert prompt is not None and prompt.completer is not None
        popup = {(c.text, c.display_meta_text) for c in prompt.completer.get_completions(
            Document("/fro"), CompleteEvent())}
        assert popup == {("/frontend:component", "Scaffold a UI component (project)")}
        mark = await repl.submit("/help")
        await repl.wait_for("Scaffold a UI component", after=mark)
        assert "/frontend:component <name> <folder>" in repl.text[mark:]
        assert "/build-status" in repl.text[mark:] and "/memory" in repl.text[mark:]
        mark = await repl.submit("/build-status 5")  # approved at start: no question now
        await first_turn_shows(repl, "Status explained.", mark)
        assert "comes with this project" not in repl.text[mark:]
        first = simulator.requests[0].conversation
        assert first is not None
        assert "STATUS-OF-5" in first.last_user_text and "SHARED-MARKER" in first.system
        mark = await repl.submit("# always use tabs")
        await repl.wait_for("in which memory file", after=mark)
        await repl.keys("2")
        await repl.wait_for("saved to", after=mark)
        assert (root / "CLAUDE.local.md").read_text().endswith("- always use tabs\n")
        mark = await repl.submit("thanks")
        await repl.wait_for("Noted.", after=mark)
        second = simulator.requests[1].conversation
        assert second is not None and "always use tabs" in second.last_user_text
        mark = await repl.submit("/context")
        await repl.wait_for("instruction file", after=mark)
        shown = repl.text[mark:]
        assert "docs/style.md" in shown and "shared.md" in shown and "import" in shown
        assert "rule for src/**/*.py (waits for a match)" in shown
        mark = await repl.submit("/memory")
        await repl.wait_for("Edit which memory file?", after=mark)
        await repl.keys("1")
        await repl.wait_for("edited", after=mark)
        assert (root / "CLAUDE.md").read_text().endswith("EDITED-IN-EDITOR\n")

    async def main() -> None:
        async with running_repl(sim_settings(simulator, isolated_home), root,
                                approver=allow_all) as repl:
            await scenario(repl)
            assert await repl.exit() == 0

    asyncio.run(main())


def test_a_waiting_question_and_a_long_turn_notify_the_terminal_and_the_hook(
    simulator: Simulator, isolated_home: Path, tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    logs = tmp_path / "logs"
    write_hooks(isolated_home / "settings.json", {
        "Notification": [hook(hook_script(logs, "note", ""))],
        "SessionEnd": [hook(hook_script(logs, "end", ""))]})
    simulator.policy = ScriptedPolicy([
        Reply("Running.", [ToolCall("run_shell", {"command": "echo hi"})]), Reply("Done."),
    ])

    async def main() -> None:
        settings = sim_settings(simulator, isolated_home, notify="osc9", notify_after_seconds=0.01)
        async with running_repl(settings, root) as repl:
            mark = await repl.submit("say hi")
            await first_turn_shows(repl, "Do you want", mark)
            await repl.keys("1")
            await repl.wait_for("Done.", after=mark)
            await repl.wait_for("waiting for your input\x07", after=mark)
            assert "\x1b]9;mini-claude: mini-claude needs your permission to use run_shell\x07" \
                in repl.text[mark:]
            mark = await repl.submit("/clear")
            await repl.wait_for("new conversation", after=mark)
            assert await repl.exit() == 0

    asyncio.run(main())
    kinds = [e["notification_type"] for e in logged(logs, "note")]
    assert kinds == ["permission_prompt", "idle_prompt"]
    assert [e["reason"] for e in logged(logs, "end")] == ["clear", "prompt_input_exit"]


def test_the_cli_asks_about_outside_imports_before_the_first_prompt(
    tmp_path: Path, isolated_home: Path,
) -> None:
    import sys

    import pexpect

    from tests.ui.test_startup import WAIT_SECONDS, _environment

    project = tmp_path / "project"
    write(project / "CLAUDE.md", "@../shared.md\n")
    write(tmp_path / "shared.md", "SHARED-FROM-CLI\n")
    policy = ScriptedPolicy([Reply(text="Answered.")])
    command = str(Path(sys.executable).with_name("mini-claude"))
    with Simulator(policy) as sim:
        child = pexpect.spawn(command, cwd=str(project), env=_environment(sim),
                              dimensions=(30, 120), encoding="utf-8", codec_errors="replace")
        try:
            child.expect("import files from outside the project", timeout=WAIT_SECONDS)
            child.send("1")
            child.expect("imports loaded", timeout=WAIT_SECONDS)
            child.expect("> ", timeout=WAIT_SECONDS)  # the prompt, drawn after the answer
            child.send("hello\r")
            child.expect("Answered.", timeout=FIRST_TURN_SECONDS)
            child.sendcontrol("d")
            child.expect(pexpect.EOF, timeout=WAIT_SECONDS)
        finally:
            child.close(force=True)
    assert sim.requests and "SHARED-FROM-CLI" in json.dumps(sim.requests[0].body)
