"""In a real terminal, as a Claude Code user types them: ``/add-dir``, ``--add-dir``, ``-r``
without an id (the session picker) and ``--append-system-prompt``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from mini_claude.simulator import Reply, Simulator, ToolCall
from tests.support.mcp import Recorder
from tests.support.pty_terminal import Spawn, spawner, write_notes_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_notes_project(tmp_path / "project")


@pytest.fixture
def spawn(project: Path, isolated_home: Path) -> Iterator[Spawn]:
    yield from spawner(project, size_in_env=True)


def _write_into(folder: Path) -> list[Reply]:
    target = str(folder / "new.txt")
    return [Reply(tool_calls=[ToolCall("write_file", {"path": target, "content": "x\n"})]),
            Reply("written")]


def test_add_dir_command_lets_edits_into_another_folder(
    spawn: Spawn, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    with Simulator(Recorder(_write_into(other))) as sim:
        term = spawn(sim, "--permission-mode", "acceptEdits", columns=120, rows=30)
        term.wait(lambda t: t.has_empty_prompt, "the prompt")
        term.type(f"/add-dir {other}\r")
        term.wait_text("tools may now read and edit in")
        term.type("write the file\r")
        term.wait_text("written")
    assert (other / "new.txt").read_text() == "x\n"  # acceptEdits, no question asked


def test_add_dir_flag_and_appended_instructions(spawn: Spawn, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    recorder = Recorder(_write_into(other))
    with Simulator(recorder) as sim:
        term = spawn(sim, "--permission-mode", "acceptEdits", "--add-dir", str(other),
                     "--append-system-prompt", "Always answer in haiku.", columns=120, rows=30)
        term.wait(lambda t: t.has_empty_prompt, "the prompt")
        term.type("write the file\r")
        term.wait_text("written")
    assert (other / "new.txt").read_text() == "x\n"
    assert recorder.seen[0].system.rstrip().endswith("Always answer in haiku.")


def test_resume_without_an_id_opens_the_picker(spawn: Spawn) -> None:
    with Simulator(Recorder([Reply("first answer")])) as sim:
        first = spawn(sim, columns=120, rows=30)
        first.wait(lambda t: t.has_empty_prompt, "the prompt")
        first.type("remember the lighthouse\r")
        first.wait_text("first answer")
        first.type("/exit\r")
        first.child.expect(pexpect.EOF, timeout=60)  # the session is written and closed
        picker = spawn(sim, "-r", columns=120, rows=30)
        picker.wait_text("remember the lighthouse")  # the picker lists the earlier session
