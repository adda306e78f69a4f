"""The pieces of Claude Code compatibility alone: import scanning and limits, the trust gate,
rules, command files and arguments, memory notes, terminal notifications, hook answers."""

from __future__ import annotations

import asyncio
import io
import os
from pathlib import Path

from mini_claude.agent.hooks import HookCommand, HookRunner
from mini_claude.project.commands import CustomCommand, find_commands, with_arguments
from mini_claude.project.imports import MAX_FILE_CHARS, references
from mini_claude.project.instructions import find_instructions
from mini_claude.project.memory import append_memory, memory_note, memory_targets
from mini_claude.project.rules import PathRules, expand_braces, find_rules
from mini_claude.session.custom_commands import allowed_rules
from mini_claude.ui.notify import Notifier, choose_style, signal_text
from tests.support.claude_project import hook_script, logged, write


def test_imports_are_found_outside_code_only() -> None:
    text = (
        "See @a.md, and @docs/b.md.\nmail me at x@y.z\n`@in_span.md` and ``@also.md``\n"
        "```sh\n@fenced.md\n```\n~~~\n@tilde.md\n~~~\n@my\\ file.md\n- @~/notes.md\n"
    )
    assert references(text) == ["a.md", "docs/b.md", "my file.md", "~/notes.md"]


def test_imports_stop_at_five_hops_and_problems_are_one_warning_each(tmp_path: Path) -> None:
    project = tmp_path / "p"
    for i in range(1, 8):
        write(project / f"n{i}.md", f"NODE-{i} @n{i + 1}.md\n")
    write(project / "CLAUDE.md", "@n1.md @missing.md @alice @big.md @bin.md @folder\n"
          + "y" * MAX_FILE_CHARS)
    write(project / "big.md", "x" * (MAX_FILE_CHARS + 1))
    (project / "bin.md").write_bytes(b"\x00\x01binary")
    (project / "folder").mkdir()
    found = find_instructions(project, tmp_path / "home")
    assert [f"NODE-{i}" in found.text for i in range(1, 8)] == [True] * 5 + [False] * 2
    warnings = "\n".join(found.warnings)
    assert "deeper than 5 levels" in warnings
    assert "@missing.md not found" in warnings and "alice" not in warnings
    assert "big.md is not loaded" in warnings and "bin.md is not loaded (binary)" in warnings
    assert "folder is not a file" in warnings
    assert "CLAUDE.md has 40,050 characters; only the first 40,000 are loaded" in warnings
    assert len(found.warnings) == 6


def test_project_imports_outside_wait_for_approval_but_the_users_own_do_not(
    tmp_path: Path,
) -> None:
    user_home, home = Path(os.environ["HOME"]), tmp_path / "mini-home"
    write(user_home / "notes.md", "USER-NOTES")
    write(user_home / ".claude" / "CLAUDE.md", "@~/notes.md\n")
    project = tmp_path / "repo"
    write(project / ".git" / "HEAD", "ref\n")
    write(project / "docs" / "in.md", "INSIDE")
    write(project / "sub" / "CLAUDE.md", "@../docs/in.md @~/notes.md @" + str(home) + "/x.md\n")
    write(home / "x.md", "HOME-FILE")
    found = find_instructions(project / "sub", home)
    assert "USER-NOTES" in found.text  # imported by the user's file: no question
    assert "INSIDE" in found.text  # inside the repository (the .git folder's)
    assert "HOME-FILE" not in found.text
    assert [h.target.name for h in found.held] == ["x.md"]  # notes.md is loaded already


def test_running_in_the_home_folder_every_home_import_asks(tmp_path: Path) -> None:
    user_home = Path(os.environ["HOME"])
    write(user_home / ".ssh" / "id_rsa", "KEY")
    write(user_home / "CLAUDE.md", "@.ssh/id_rsa\n")
    found = find_instructions(user_home, tmp_path / "mini-home")
    assert "KEY" not in found.text and [h.target.name for h in found.held] == ["id_rsa"]


def test_local_and_user_files_and_rules_are_read(tmp_path: Path) -> None:
    project = tmp_path / "p"
    write(project / "AGENTS.md", "AGENTS")
    write(project / "CLAUDE.local.md", "LOCAL")
    write(project / ".claude" / "rules" / "web" / "ts.md",
          "---\npaths: src/**/*.{ts,tsx}\n---\nTS-RULE\n")
    write(project / ".claude" / "rules" / "bad.md", "---\npaths:\n  - a\n - b\n---\nBAD\n")
    found = find_instructions(project, tmp_path / "home")
    assert found.text.index("AGENTS") < found.text.index("LOCAL")
    assert [f.kind for f in found.files] == ["project", "local"]
    assert any("bad.md: the front matter is not valid YAML" in w for w in found.warnings)
    (rule,) = found.path_rules
    rules = PathRules([rule], project)
    assert rules.reminder_for("src/a/b.py") is None
    assert rules.reminder_for(None) is None
    reminder = rules.reminder_for(str(project / "src/a/b.tsx"))
    assert reminder is not None and "TS-RULE" in reminder
    assert rules.reminder_for("src/c.ts") is None  # once


def test_brace_globs_expand() -> None:
    assert expand_braces("src/*.{ts,tsx}") == ["src/*.ts", "src/*.tsx"]
    assert expand_braces("{a,b}/{c,d}") == ["a/c", "a/d", "b/c", "b/d"]
    assert find_rules([]).always == []


def test_arguments_fill_in_and_unplaced_ones_are_appended() -> None:
    assert with_arguments("Fix #$1 ($2): $ARGUMENTS", '12 "very high" now') == (
        'Fix #12 (very high): 12 "very high" now')
    assert with_arguments("Review $3.", "a b") == "Review ."
    assert with_arguments("Review the diff.", "carefully") == (
        "Review the diff.\n\nARGUMENTS: carefully")
    assert with_arguments("Plain.", "") == "Plain."


def test_allowed_tools_are_read_as_permission_rules_on_our_tools(tmp_path: Path) -> None:
    command = CustomCommand(name="ship", path=tmp_path / "ship.md", body="", description="",
                            allowed_tools=("Bash(git diff:*)", "Read", "Edit(src/**)",
                                           "mcp__x__y", "WebSearch"))
    rules, warnings = allowed_rules(command, tmp_path)
    assert len(rules) == 4
    diff, read, edit, mcp = rules
    assert diff.allows("run_shell", {"command": "git diff HEAD"})
    assert not diff.allows("run_shell", {"command": "git push"})
    assert read.allows("grep_search", {"pattern": "x"}) and not read.applies_to("edit_file")
    assert edit.allows("write_file", {"path": str(tmp_path / "src" / "a.py")})
    assert not edit.allows("edit_file", {"path": str(tmp_path / "setup.py")})
    assert mcp.applies_to("mcp__x__y") and not mcp.applies_to("mcp__x__z")
    assert len(warnings) == 1 and "WebSearch" in warnings[0]


def test_commands_are_namespaced_and_the_projects_win(tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "home"
    write(project / ".claude" / "commands" / "frontend" / "Component.md", "Make $1\n")
    write(project / ".mini-claude" / "commands" / "review.md",
          "---\ndescription: Review\nallowed-tools:\n  - Bash(git diff:*)\n  - Read\n---\nGo\n")
    write(home / "commands" / "review.md", "Mine\n")
    write(Path(os.environ["HOME"]) / ".claude" / "commands" / "empty.md", "---\n---\n")
    catalog = find_commands(project, home)
    assert sorted(catalog.commands) == ["frontend:component", "review"]
    assert catalog.get("component") is catalog.commands["frontend:component"]
    review = catalog.commands["review"]
    assert review.allowed_tools == ("Bash(git diff:*)", "Read") and review.needs_trust
    assert catalog.commands["frontend:component"].description == "Make $1"
    assert any("hidden by" in w for w in catalog.warnings)
    assert any("has no prompt" in w for w in catalog.warnings)


def test_memory_notes_go_to_the_chosen_file(tmp_path: Path) -> None:
    assert memory_note("# use tabs") == "use tabs"
    assert memory_note("## heading") is None and memory_note("#") is None
    assert memory_note("#!/bin/sh\necho") is None
    project = tmp_path / "p"
    project.mkdir()
    targets = memory_targets(project, tmp_path / "home")
    assert [t.path.name for t in targets] == ["CLAUDE.md", "CLAUDE.local.md", "MINI-CLAUDE.md"]
    write(project / "CLAUDE.md", "# Notes")
    append_memory(targets[0].path, "use tabs")
    append_memory(targets[2].path, "answer in French")
    assert (project / "CLAUDE.md").read_text() == "# Notes\n- use tabs\n"
    assert (tmp_path / "home" / "MINI-CLAUDE.md").read_text() == "- answer in French\n"


def test_the_terminal_signal_follows_the_setting_and_the_terminal() -> None:
    assert choose_style("auto", {"TERM_PROGRAM": "iTerm.app"}) == "osc9"
    assert choose_style("auto", {"TERM": "foot"}) == "osc777"
    assert choose_style("auto", {"TERM": "xterm-256color"}) == "bell"
    assert choose_style("OSC777", {}) == "osc777" and choose_style("nonsense", {}) == "bell"
    assert signal_text("osc9", "done; ok\x1b") == "\x1b]9;mini-claude: done, ok\x07"
    assert signal_text("osc777", "hi") == "\x1b]777;notify;mini-claude;hi\x07"
    assert signal_text("off", "hi") == ""


def test_a_notification_reaches_the_terminal_and_the_hook(tmp_path: Path) -> None:
    command = hook_script(tmp_path, "note", "")
    runner = HookRunner([HookCommand("Notification", "permission_prompt", command, 10,
                                     tmp_path / "s.json")], cwd=tmp_path, env=dict(os.environ))
    stream = io.StringIO()
    warnings = asyncio.run(Notifier(stream, "osc9").notify("needs you", "permission_prompt",
                                                           runner))
    assert warnings == [] and stream.getvalue() == "\x1b]9;mini-claude: needs you\x07"
    (event,) = logged(tmp_path, "note")
    assert event["hook_event_name"] == "Notification"
    assert (event["message"], event["notification_type"]) == ("needs you", "permission_prompt")
    asyncio.run(Notifier(stream, "bell").notify("done", "idle_prompt", runner))
    assert len(logged(tmp_path, "note")) == 1  # the matcher names the kind


def test_continue_false_and_system_messages_are_read_from_any_event(tmp_path: Path) -> None:
    command = hook_script(tmp_path, "stop", (
        "print(json.dumps({'continue': False, 'stopReason': 'budget spent', "
        "'systemMessage': 'heads up'}))\n"))
    runner = HookRunner([HookCommand("UserPromptSubmit", "", command, 10, tmp_path / "s.json")],
                        cwd=tmp_path, env=dict(os.environ))
    outcome = asyncio.run(runner.user_prompt_submit("hi"))
    assert outcome.stop_reason == "budget spent" and outcome.messages == ["heads up"]
