"""Shell commands undone by /rewind: real SDK clients over HTTP against the simulator, both
providers. Each command runs through run_shell as the model asked for it."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from mini_claude.conversation import SummaryBlock
from mini_claude.session.state import read_saved_state
from mini_claude.simulator import Simulator, ToolCall
from mini_claude.ui.rewind_view import change_note
from tests.support.agent import PROVIDERS, Run
from tests.support.rewind import point_for, rewinder, scripted_policy

Tree = dict[str, tuple[bytes, int] | None]  # path -> (content, mode); None: a folder
BINARY = bytes(range(256)) * 8


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def shell(command: str, **more: object) -> ToolCall:
    return ToolCall("run_shell", {"command": command, **more})


def tree(root: Path) -> Tree:
    """Every file's bytes and mode, and every folder, under ``root`` (.git aside)."""
    found: Tree = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        base = Path(folder)
        for name in dirs:
            found[str((base / name).relative_to(root))] = None
        for name in files:
            path = base / name
            found[str(path.relative_to(root))] = (path.read_bytes(), path.stat().st_mode & 0o7777)
    return found


def make_project(root: Path) -> Path:
    (root / "src" / "pkg").mkdir(parents=True)
    for number in range(20):
        (root / "src" / "pkg" / f"m{number}.py").write_text(f"value = {number}\n")
    (root / "src" / "run.sh").write_text("#!/bin/sh\necho run\n")
    (root / "src" / "run.sh").chmod(0o750)
    (root / "notes.txt").write_text("first line\nsecond line\n")
    (root / "blob.bin").write_bytes(BINARY)
    (root / "tool.sh").write_text("echo tool\n")
    return root


def session(simulator: Simulator, provider: str, home: Path, project: Path,
            turns: list[tuple[str, list[ToolCall]]], **overrides: Any) -> Run:
    simulator.policy = scripted_policy(turns)
    run = Run(simulator, provider, home, project, context_window=200_000, **overrides)
    run.start()
    return run


def play(run: Run, turns: list[tuple[str, list[ToolCall]]]) -> list[Tree]:
    """The project before each turn."""
    states = []
    for prompt, _ in turns:
        states.append(tree(run.project))
        run.turn(prompt)
    return states


def test_rm_sed_mv_chmod_and_a_binary_file_are_undone_across_a_compaction(
        simulator: Simulator, isolated_home: Path, tmp_path: Path, provider: str) -> None:
    project = make_project(tmp_path / "project")
    turns = [
        ("turn 1: edit notes", [shell("sed -i 's/first/1st/' notes.txt")]),
        ("turn 2: clean up", [shell("rm -rf src/ blob.bin"), shell("mv notes.txt moved.txt"),
                              shell("chmod +x tool.sh && mkdir -p new/deep && echo n > "
                                    "new/deep/n.txt")]),
        ("turn 3: more", [shell("printf 'x' >> moved.txt")]),
    ]
    run = session(simulator, provider, isolated_home, project, turns)
    try:
        states = play(run, turns[:2])
        run.compact()
        assert any(isinstance(b, SummaryBlock) for m in run.agent.conversation.messages
                   for b in m.blocks)
        states += play(run, turns[2:])
        assert not (project / "src").exists() and (project / "new" / "deep").is_dir()
        assert (project / "tool.sh").stat().st_mode & 0o111

        point = point_for(run, "turn 2")
        changes = rewinder(run).changes_since(point)
        notes = {Path(c.path).name: change_note(c) for c in changes}
        assert "deleted by run_shell" in notes["m3.py"]
        assert "deleted by run_shell" in notes["blob.bin"]
        assert "created by run_shell" in notes["moved.txt"]
        assert "changed by run_shell" in notes["tool.sh"]

        rewinder(run).rewind(point, code=True, conversation=True)
        assert tree(project) == states[1]  # every byte, every mode; new/ is gone
        assert not any(isinstance(b, SummaryBlock) for m in run.agent.conversation.messages
                       for b in m.blocks)  # back before the compaction

        rewinder(run).rewind(point_for(run, "turn 1"), code=True, conversation=False)
        assert tree(project) == states[0]

        redo = next(p for p in rewinder(run).points() if p.kind == "rewind")
        rewinder(run).rewind(redo, code=True, conversation=False)
        assert tree(project) == states[1]
    finally:
        run.close()


def git(project: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(project.parent),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    subprocess.run(["git", *args], cwd=project, env=env, check=True, capture_output=True)


def test_git_checkout_and_git_clean_are_undone(simulator: Simulator, isolated_home: Path,
                                               tmp_path: Path, provider: str) -> None:
    project = make_project(tmp_path / "project")
    git(project, "init", "-q")
    git(project, "add", ".")
    git(project, "commit", "-qm", "start")
    (project / "notes.txt").write_text("uncommitted work\n")
    (project / "draft.txt").write_text("an untracked draft\n")
    turns = [("turn 1: discard", [shell("git checkout -- . && git clean -fdq")])]
    run = session(simulator, provider, isolated_home, project, turns)
    try:
        states = play(run, turns)
        assert (project / "notes.txt").read_text() == "first line\nsecond line\n"
        assert not (project / "draft.txt").exists()
        rewinder(run).rewind(point_for(run, "turn 1"), code=True, conversation=True)
        assert tree(project) == states[0]
    finally:
        run.close()


def test_ignored_and_oversized_files_are_listed_as_not_restorable(
        simulator: Simulator, isolated_home: Path, tmp_path: Path, provider: str) -> None:
    project = make_project(tmp_path / "project")
    (project / ".gitignore").write_text("build/\n*.log\n")
    (project / "big.dat").write_bytes(b"b" * 5000)
    (project / "old.log").write_text("old\n")
    turns = [("turn 1: build", [shell("mkdir -p build && echo o > build/out.o && "
                                      "echo more >> big.dat && rm old.log && "
                                      "echo k >> notes.txt")])]
    run = session(simulator, provider, isolated_home, project, turns,
                  checkpoint_max_file_bytes=4096)
    try:
        play(run, turns)
        point = point_for(run, "turn 1")
        notes = {Path(c.path).name: change_note(c) for c in rewinder(run).changes_since(point)}
        assert "not restorable" in notes["build"] and ".gitignore" in notes["build"]
        assert "not restorable" in notes["old.log"] and ".gitignore" in notes["old.log"]
        assert "not restorable" in notes["big.dat"] and "size limit" in notes["big.dat"]
        plan = rewinder(run).plan(point)
        assert {f.path.name for f in plan.problems} >= {"build", "big.dat"}

        rewinder(run).rewind(point, code=True, conversation=False, plan=plan)
        assert (project / "notes.txt").read_text() == "first line\nsecond line\n"
        assert (project / "build" / "out.o").exists()  # left as it is, and said so
        assert not (project / "old.log").exists()
    finally:
        run.close()


def test_a_background_servers_log_belongs_to_the_turn_it_was_written_in(
        simulator: Simulator, isolated_home: Path, tmp_path: Path, provider: str) -> None:
    project = make_project(tmp_path / "project")
    server = "for i in 1 2 3; do echo line $i >> server.log; done; rm tool.sh"
    turns = [("turn 1: start the server", [shell(server, run_in_background=True)]),
             ("turn 2: look", [shell("true")])]
    run = session(simulator, provider, isolated_home, project, turns)
    try:
        before = tree(project)
        run.turn(turns[0][0])
        deadline = time.monotonic() + 30
        while run.session.shells.running() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (project / "server.log").read_text().count("line") == 3
        run.turn(turns[1][0])

        turn_two = rewinder(run).changes_since(point_for(run, "turn 2"))
        assert not turn_two  # written during turn 1: recorded before turn 2's message
        changes = rewinder(run).changes_since(point_for(run, "turn 1"))
        by = {Path(c.path).name: c.by for c in changes}
        assert by == {"server.log": "a background shell", "tool.sh": "a background shell"}

        rewinder(run).rewind(point_for(run, "turn 1"), code=True, conversation=True)
        assert tree(project) == before
    finally:
        run.close()


def todos(*names: str) -> ToolCall:
    return ToolCall("todo_write", {"todos": [{"content": n, "status": "pending"} for n in names]})


def test_the_todo_list_is_rewound_with_the_conversation(
        simulator: Simulator, isolated_home: Path, tmp_path: Path, provider: str) -> None:
    project = make_project(tmp_path / "project")
    turns = [("turn 1: plan", [todos("first")]), ("turn 2: plan more", [todos("first", "second")])]
    run = session(simulator, provider, isolated_home, project, turns)
    try:
        play(run, turns)
        assert [i.content for i in run.agent.tool_context.plan.items] == ["first", "second"]
        rewinder(run).rewind(point_for(run, "turn 2"), code=False, conversation=True)
        assert [i.content for i in run.agent.tool_context.plan.items] == ["first"]
        saved = read_saved_state(run.agent.transcript.path)  # what -c starts with
        assert [i.content for i in saved.todos] == ["first"]

        redo = next(p for p in rewinder(run).points() if p.kind == "rewind")
        rewinder(run).rewind(redo, code=False, conversation=True)
        assert [i.content for i in run.agent.tool_context.plan.items] == ["first", "second"]
    finally:
        run.close()
