"""Small things that looked broken to a Claude Code user: counts, headers, /help, /memory."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mini_claude.permissions.asking import allow_all
from mini_claude.simulator import Simulator
from mini_claude.ui.paste import PastedTexts
from mini_claude.ui.render import main_argument
from tests.support.repl import ReplDriver, running_repl, sim_settings


@pytest.mark.parametrize(("text", "lines"), [
    ("".join(f"line {n}\n" for n in range(30)), 30),
    ("\n".join(f"line {n}" for n in range(30)), 30),
    ("\n".join(f"line {n}" for n in range(12)) + "\n\n", 13),
])
def test_a_paste_counts_the_lines_it_has(text: str, lines: int) -> None:
    assert PastedTexts().placeholder_for(text) == f"[Pasted text #1 +{lines} lines]"


def test_the_plan_tool_shows_the_plans_heading_not_json() -> None:
    shown = main_argument({"plan": "## Add a cache\n\n1. write the store\n2. test it\n"})
    assert shown == "Add a cache"


def test_help_lists_the_prefixes_and_memory_says_when_nothing_changed(
    simulator: Simulator, isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    monkeypatch.setenv("EDITOR", "true")  # opens and quits without writing, like :q!
    monkeypatch.delenv("VISUAL", raising=False)

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("/help")
        await repl.wait_for("Ctrl-D exits", after=mark)
        for prefix in ("!command", "@path", "# note"):
            assert prefix in repl.text[mark:], prefix
        mark = await repl.submit("/memory")
        await repl.wait_for("Edit which memory file?", after=mark)
        await repl.keys("1")
        await repl.wait_for("unchanged", after=mark)
        assert "edited" not in repl.text[mark:]
        assert not (root / "CLAUDE.md").exists()  # created to open it, left empty: removed

    async def main() -> None:
        async with running_repl(sim_settings(simulator, isolated_home), root,
                                approver=allow_all) as repl:
            await scenario(repl)
            assert await repl.exit() == 0

    asyncio.run(main())


def test_hooks_show_the_matcher_the_user_wrote(tmp_path: Path) -> None:
    from rich.console import Console

    from mini_claude.session.settings_files import load_settings_layers
    from mini_claude.ui.hooks_view import hooks_table

    root = tmp_path / "repo"
    (root / ".claude").mkdir(parents=True)
    (root / ".claude" / "settings.json").write_text(
        '{"hooks": {"PreToolUse": [{"matcher": "Edit|Write", '
        '"hooks": [{"type": "command", "command": "true"}]}]}}')
    layers = load_settings_layers(root, tmp_path / "home", 10.0)
    commands = layers.hooks(project_approved=True)
    assert commands and commands[0].matches("write_file")  # widened to our names inside
    console = Console(width=120, record=True)
    console.print(hooks_table(commands))
    shown = console.export_text()
    assert "Edit|Write" in shown and "(?:" not in shown


def test_text_a_person_reads_is_cut_between_words() -> None:
    from mini_claude.text import shorten_at_word

    assert shorten_at_word("alpha beta gamma delta", 15) == "alpha beta…"
    assert shorten_at_word("short", 15) == "short"
    assert len(shorten_at_word("x" * 50, 10)) == 10


def test_print_mode_narrates_a_denial_whole(
    project: Path, simulator: Simulator, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from mini_claude.cli import main
    from mini_claude.simulator import Reply, ScriptedPolicy, ToolCall
    from tests.support.printing import point_at

    simulator.policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("task", {"description": "x", "prompt": "y",
                                            "subagent_type": "quick"})]),
        Reply(text="ok"),
    ])
    point_at(simulator, "anthropic", monkeypatch)
    assert main(["-p", "go"]) == 0
    err = capsys.readouterr().err
    failed = next(line for line in err.splitlines() if line.startswith("  ✗"))
    assert failed.endswith(")"), failed  # the whole message, up to its closing parenthesis
