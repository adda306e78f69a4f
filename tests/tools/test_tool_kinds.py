"""Tools say what they are and every other room asks them: a new reading tool is covered by
read rules, runs in plan mode and answers to its Claude Code name with no other file
touched; protected paths and hard links ask in every mode but bypassPermissions."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_claude import tool_kinds as kinds
from mini_claude.context.ledger import LedgerState, update
from mini_claude.context.rebuild import path_key, touched_paths
from mini_claude.conversation import Message, ToolResultBlock, ToolUseBlock
from mini_claude.permissions.asking import PermissionDecision
from mini_claude.permissions.mode_table import PermissionMode
from mini_claude.permissions.modes import Permissions
from mini_claude.permissions.protected_paths import is_protected_path, protected_paths
from mini_claude.permissions.rules import CLAUDE_TOOL_NAMES, PermissionRules, parse_rule
from mini_claude.project.claude_tools import our_tool_names
from mini_claude.protocol import ToolOutput, ToolSpec
from mini_claude.tool_kinds import ToolTraits
from mini_claude.tools.base import NOTHING_TO_ASK, Prepared, ToolContext
from mini_claude.tools.registry import ToolRegistry, default_registry, tools_of_kind
from tests.support.tools import ScriptedApprover, run, tool_context


class ReadNotebookTool:
    """A new reading tool, declared like read_file and named nowhere else."""

    spec = ToolSpec("read_notebook", "Read a notebook.", {
        "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
    read_only = True
    traits = ToolTraits("read", "path", "path", ("Read",), plan_mode=True)

    def permission(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        return NOTHING_TO_ASK

    async def run(self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared) -> ToolOutput:
        return ToolOutput((ctx.root / args["path"]).read_text())


@pytest.fixture
def notebook_registry() -> Iterator[ToolRegistry]:
    registry = ToolRegistry([ReadNotebookTool()])
    yield registry
    kinds.forget("read_notebook")


def context(root: Path, mode: PermissionMode = "default", *, allow: tuple[str, ...] = (),
            deny: tuple[str, ...] = (), answer: bool = False
            ) -> tuple[ToolContext, ScriptedApprover]:
    approver = ScriptedApprover(PermissionDecision(answer, reason="no"))
    ctx = tool_context(root, approve=approver)
    rules = PermissionRules(allow=tuple(parse_rule(t, "settings", root) for t in allow),
                            deny=tuple(parse_rule(t, "settings", root) for t in deny))
    ctx.rules = Permissions(rules, mode=mode)
    return ctx, approver


def test_the_registry_answers_which_tools_read_edit_and_run_commands() -> None:
    default_registry()
    assert tools_of_kind("read") == ("read_file",)
    assert set(tools_of_kind("search")) == {"grep_search", "list_files"}
    assert set(tools_of_kind("edit")) == {"write_file", "edit_file"}
    assert tools_of_kind("shell") == ("run_shell",)
    assert tools_of_kind("web") == ("web_fetch",)
    registry = default_registry()
    assert registry.of_kind("edit") == ["write_file", "edit_file"]


def test_a_new_reading_tool_is_treated_as_read_file_everywhere(
    tmp_path: Path, notebook_registry: ToolRegistry
) -> None:
    (tmp_path / ".env").write_text("SECRET=1\n")
    (tmp_path / "a.ipynb").write_text("{}\n")
    rule = parse_rule("Read(.env)", "settings", tmp_path)
    assert {"read_file", "read_notebook"} <= rule.tools
    assert "read_notebook" in CLAUDE_TOOL_NAMES["Read"]
    assert our_tool_names("Read") == ("read_file", "read_notebook")
    assert "read_notebook" in tools_of_kind("read")

    denied, _ = context(tmp_path, deny=("Read(.env)",))
    refused = run(notebook_registry.execute("read_notebook", {"path": ".env"}, denied))
    assert refused.is_error and "Read(.env)" in refused.content
    planning, _ = context(tmp_path, "plan")
    assert run(notebook_registry.execute("read_notebook", {"path": "a.ipynb"}, planning)
               ).content == "{}\n"

    use = ToolUseBlock("u1", "read_notebook", {"path": "a.ipynb"})
    result = ToolResultBlock("u1", "{}\n", tool_name="read_notebook")
    state = update(LedgerState(), [Message("assistant", [use]), Message("user", [result])])
    assert "a.ipynb" in state.files
    assert touched_paths([Message("assistant", [use])]) == {path_key("a.ipynb")}
    assert notebook_registry.traits("read_notebook").file_argument == "path"
    assert notebook_registry.traits("grep_search").file_argument is None


def test_protected_paths_are_one_list_for_a_project_and_a_home(tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "h"
    project.mkdir()
    home.mkdir()
    listed = {entry.path for entry in protected_paths(project, home)}
    assert {project / ".git", project / ".claude", home / ".claude", home / ".bashrc",
            project / "CLAUDE.md", home / ".mini-claude"} <= listed
    for path in (".git/hooks/pre-commit", ".claude/settings.json", ".mini-claude/hooks.json",
                 "CLAUDE.local.md", "docs/AGENTS.md", "vendor/lib/.git/config",
                 str(home / ".zshrc"), str(home / ".claude" / "commands" / "go.md")):
        assert is_protected_path(Path(path), project, home), path
    for path in ("src/app.py", "README.md", "gitignore.txt", str(home / "notes.txt")):
        assert is_protected_path(Path(path), project, home) is None, path
    os.symlink(project / ".git", project / "looks-harmless")
    assert is_protected_path(Path("looks-harmless/config"), project, home)


def test_only_an_allow_rule_naming_the_path_or_bypass_lets_a_protected_write_through(
    tmp_path: Path,
) -> None:
    registry = default_registry()
    args = {"path": ".claude/settings.json", "content": "{}\n"}
    broad, approver = context(tmp_path, "acceptEdits", allow=("Write", "Edit(**)"))
    assert run(registry.execute("write_file", args, broad)).is_error
    assert "configuration that other sessions run" in approver.requests[0].summary
    exact, _ = context(tmp_path, "acceptEdits", allow=("Write(.claude/settings.json)",))
    assert not run(registry.execute("write_file", args, exact)).is_error
    bypass, _ = context(tmp_path, "bypassPermissions")
    assert not run(registry.execute("write_file", {**args, "content": "{ }\n"}, bypass)).is_error


def test_yes_for_a_protected_path_is_remembered_for_that_path_only(tmp_path: Path) -> None:
    registry = default_registry()
    ctx, approver = context(tmp_path, "acceptEdits")
    approver.decision = PermissionDecision(True, remember=True)
    first = {"path": ".claude/agents/a.md", "content": "a\n"}
    assert not run(registry.execute("write_file", first, ctx)).is_error
    assert not run(registry.execute("write_file", {**first, "content": "b\n"}, ctx)).is_error
    assert not run(registry.execute("write_file", {"path": ".claude/agents/b.md",
                                                    "content": "b\n"}, ctx)).is_error
    assert [r.summary.split(" (")[0] for r in approver.requests] == [
        "create .claude/agents/a.md", "create .claude/agents/b.md"]


def test_a_hard_link_made_while_a_write_waits_stops_it(tmp_path: Path) -> None:
    registry = default_registry()
    target = tmp_path / "notes.txt"
    target.write_text("old\n")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    ctx, _ = context(tmp_path)

    async def link_then_allow(request: Any) -> PermissionDecision:
        os.link(target, outside)
        return PermissionDecision(True)

    ctx.approve = link_then_allow
    result = run(registry.execute("write_file", {"path": "notes.txt", "content": "new\n"}, ctx))
    assert result.is_error and "changed while the write waited" in result.content
    assert outside.read_text() == "old\n"
    outside.unlink()
