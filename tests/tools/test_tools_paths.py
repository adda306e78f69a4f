"""Where tools may read and write: the project, the mini-claude home, and everything else."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_claude.permissions.asking import PermissionDecision
from mini_claude.tools.base import NOTHING_TO_ASK
from mini_claude.tools.builtin.grep_search import GrepSearchTool, PythonBackend
from mini_claude.tools.builtin.list_files import ListFilesTool
from mini_claude.tools.builtin.read_file import ReadFileTool
from mini_claude.tools.registry import default_registry
from tests.support.tools import ScriptedApprover, run, tool_context


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A project and, beside it, a folder that is not part of it."""
    project = tmp_path / "project"
    outside = tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / "inside.txt").write_text("inside\n")
    (outside / "secret.txt").write_text("secret\n")
    return project, outside


def test_reads_inside_the_project_need_no_permission(layout: tuple[Path, Path]) -> None:
    project, _ = layout
    assert ReadFileTool().permission({"path": "inside.txt"}, tool_context(project)).request is None


@pytest.mark.parametrize("how", ["absolute", "dotdot", "symlink"])
def test_reads_outside_the_project_ask_first(layout: tuple[Path, Path], how: str) -> None:
    project, outside = layout
    (project / "link").symlink_to(outside, target_is_directory=True)
    raw = {
        "absolute": str(outside / "secret.txt"),
        "dotdot": "../outside/secret.txt",
        "symlink": "link/secret.txt",
    }[how]
    request = ReadFileTool().permission({"path": raw}, tool_context(project)).request
    assert request is not None
    assert request.tool_name == "read_file"
    assert request.subject == f"read:{outside.resolve()}"
    assert str(outside.resolve() / "secret.txt") in request.summary


def test_search_and_list_outside_the_project_ask_too(layout: tuple[Path, Path]) -> None:
    project, outside = layout
    ctx = tool_context(project)
    grep = GrepSearchTool(PythonBackend()).permission({"pattern": "x", "path": str(outside)},
                                                      ctx).request
    listing = ListFilesTool().permission({"path": "../outside"}, ctx).request
    assert grep is not None and grep.subject == f"read:{outside.resolve()}"
    assert listing is not None and listing.subject == f"read:{outside.resolve()}"
    assert ListFilesTool().permission({}, ctx).request is None


def test_denied_outside_read_returns_the_refusal_to_the_model(layout: tuple[Path, Path]) -> None:
    project, outside = layout
    approver = ScriptedApprover(PermissionDecision(False, reason="stay in the project"))
    ctx = tool_context(project, approve=approver)
    out = run(default_registry(PythonBackend()).execute(
        "read_file", {"path": str(outside / "secret.txt")}, ctx))
    assert out.is_error
    assert out.content == "Permission denied by the user: stay in the project"
    assert "secret" not in out.content.replace("secret.txt", "")


def test_approved_outside_read_shows_the_file(layout: tuple[Path, Path]) -> None:
    project, outside = layout
    approver = ScriptedApprover(PermissionDecision(True))
    ctx = tool_context(project, approve=approver)
    out = run(default_registry(PythonBackend()).execute(
        "read_file", {"path": str(outside / "secret.txt")}, ctx))
    assert out.content == "     1\tsecret"
    assert len(approver.requests) == 1


def test_reads_under_the_home_folder_are_free(layout: tuple[Path, Path]) -> None:
    project, _ = layout
    ctx = tool_context(project)
    saved = ctx.settings.tool_results_dir / "session" / "result-1.txt"
    saved.parent.mkdir(parents=True)
    saved.write_text("persisted output\n")
    assert ReadFileTool().permission({"path": str(saved)}, ctx).request is None
    shown = run(ReadFileTool().run({"path": str(saved)}, ctx, NOTHING_TO_ASK)).content
    assert shown == "     1\tpersisted output"


@pytest.mark.parametrize("tool", ["write_file", "edit_file"])
@pytest.mark.parametrize("how", ["absolute", "dotdot", "symlinked folder", "dangling link"])
def test_writes_outside_the_project_are_refused(
    layout: tuple[Path, Path], tool: str, how: str
) -> None:
    project, outside = layout
    (project / "link").symlink_to(outside, target_is_directory=True)
    (project / "dangling.txt").symlink_to(outside / "created-through-link.txt")
    raw = {
        "absolute": str(outside / "secret.txt"),
        "dotdot": "../outside/secret.txt",
        "symlinked folder": "link/secret.txt",
        "dangling link": "dangling.txt",
    }[how]
    args = {"path": raw, "content": "pwned\n"} if tool == "write_file" else {
        "path": raw, "old": "secret", "new": "pwned"}
    approver = ScriptedApprover(PermissionDecision(True))
    out = run(default_registry(PythonBackend()).execute(
        tool, args, tool_context(project, approve=approver)))
    assert out.is_error
    assert "outside the project folder" in out.content
    assert approver.requests == []  # refused outright, nobody is asked
    assert (outside / "secret.txt").read_text() == "secret\n"
    assert not (outside / "created-through-link.txt").exists()


def test_writes_under_the_home_folder_are_refused_too(layout: tuple[Path, Path]) -> None:
    project, _ = layout
    ctx = tool_context(project)
    target = ctx.settings.home / "planted.txt"
    out = run(default_registry(PythonBackend()).execute(
        "write_file", {"path": str(target), "content": "x"}, ctx))
    assert out.is_error
    assert not target.exists()
