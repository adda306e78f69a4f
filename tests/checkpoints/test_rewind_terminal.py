"""Esc Esc and the rewind picker in a real pseudo-terminal, narrow and wide."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_claude.simulator import Reply, ScriptedPolicy, Simulator
from tests.support.pty_terminal import Screen, Spawn, spawner
from tests.support.rewind import edit, write_project

CLOCK = re.compile(r"\d\d:\d\d")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "project")


@pytest.fixture
def spawn(project: Path, isolated_home: Path) -> Iterator[Spawn]:
    yield from spawner(project)


def at_prompt(screen: Screen) -> None:
    screen.wait(lambda s: s.has_empty_prompt and "context" in s.last_row, "the prompt")


@pytest.mark.parametrize("columns", [60, 120])
def test_escape_twice_opens_the_picker_and_rewinds(spawn: Spawn, project: Path,
                                                   columns: int) -> None:
    policy = ScriptedPolicy([
        Reply("Editing a.", [edit("a.txt", "alpha one", "alpha two")]), Reply("Made a two."),
        Reply("Editing b.", [edit("b.txt", "beta one", "beta two")]), Reply("Made b two."),
    ])
    with Simulator(policy) as sim:
        screen = spawn(sim, "--yes", columns=columns, rows=30)
        at_prompt(screen)
        screen.type("first: make a two\r")
        screen.wait_text("Made a two.")
        at_prompt(screen)
        screen.type("second: make b two\r")
        screen.wait_text("Made b two.")
        at_prompt(screen)

        screen.type("half typed")
        screen.wait(lambda s: any(r.startswith("> half typed") for r in s.rows), "the draft")
        screen.type("\x1b\x1b")  # with text in the box, Esc Esc clears it
        at_prompt(screen)
        assert "Rewind to" not in screen.text

        screen.type("\x1b\x1b")
        screen.wait_text("Rewind to before which message?")
        screen.wait(lambda s: "2. " in s.text, "both messages in the picker")
        assert "checkpointed" in screen.text  # what is not tracked is said plainly
        rows = screen.rows
        first = next(r for r in rows if "1. " in r)
        second = next(r for r in rows if "2. " in r)
        assert "second" in first and "first" in second  # newest first
        for row in (first, second):
            assert CLOCK.search(row) and len(row) <= columns
        assert "2 files changed since" in second or "2f" in second
        screen.type("2")
        screen.wait_text("Restore code and conversation")
        assert "Restore code only" in screen.text and "Never mind" in screen.text
        screen.type("1")
        screen.wait_text("conversation rewound")
        screen.wait(lambda s: any(r.startswith("> first: make a two") for r in s.rows),
                    "the message back in the input box")
        assert (project / "a.txt").read_text() == "alpha one\n"
        assert (project / "b.txt").read_text() == "beta one\n"
        screen.type("\x03")  # clears the box
        at_prompt(screen)
        screen.type("\x04")
        screen.wait_text("resume with")
