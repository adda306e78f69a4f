"""``-w/--worktree``: a session in a new git worktree of the project, removed at the end when
nothing was done in it, kept (with how to merge it) when something was."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mini_claude.cli import main
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.printing import point_at, run_from


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = run_from(tmp_path / "repo", monkeypatch)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "T")
    (root / "app.py").write_text("print('hi')\n")
    (root / ".gitignore").write_text(".env\n.claude/worktrees/\n")
    (root / ".env").write_text("LOCAL=1\n")
    (root / ".worktreeinclude").write_text(".env\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    return root


def test_a_session_in_a_worktree_edits_there_and_says_how_to_merge(
    repo: Path, simulator: Simulator, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("write_file", {"path": "new.py", "content": "x = 1\n"})]),
        Reply(text="written"),
    ])
    point_at(simulator, "anthropic", monkeypatch)
    assert main(["-p", "add a file", "--yes", "--worktree", "feature-x"]) == 0
    err = capsys.readouterr().err
    tree = repo / ".claude" / "worktrees" / "feature-x"
    assert (tree / "new.py").read_text() == "x = 1\n"
    assert not (repo / "new.py").exists()  # the main checkout is untouched
    assert (tree / ".env").read_text() == "LOCAL=1\n"  # carried in by .worktreeinclude
    assert "git merge worktree-feature-x" in err
    assert "worktree-feature-x" in git(repo, "branch")


def test_a_worktree_nothing_was_done_in_is_removed(
    repo: Path, simulator: Simulator, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = ScriptedPolicy([Reply(text="nothing to do")])
    point_at(simulator, "anthropic", monkeypatch)
    assert main(["-p", "look only", "-w"]) == 0
    err = capsys.readouterr().err
    assert "had no changes and was removed" in err
    assert not any((repo / ".claude" / "worktrees").iterdir())
    assert "worktree-" not in git(repo, "branch")


def test_outside_a_repository_it_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    run_from(tmp_path / "plain", monkeypatch)
    assert main(["-p", "hi", "-w", "x"]) == 2
    assert capsys.readouterr().err.strip() == (
        "mini-claude: --worktree needs a git repository; this folder is in none")
