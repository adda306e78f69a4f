"""The status bar in a real terminal measures the way to the next summary, not the window
(the harness is tests/support/pty_terminal.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.pty_terminal import Screen, Spawn, spawner, write_notes_project

READING = re.compile(r"context (\d+)% \S+ ([\d.]+)(k?)/(\d+)k · window 12k")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_notes_project(tmp_path / "project")


@pytest.fixture
def spawn(project: Path, isolated_home: Path) -> Iterator[Spawn]:
    yield from spawner(project, size_in_env=True)


def reading(term: Screen) -> tuple[int, float, int]:
    """(percent, tokens, compaction point) from the idle status bar."""
    term.wait(lambda t: t.has_empty_prompt and READING.search(t.bottom) is not None,
              "the prompt with its status bar")
    match = READING.search(term.bottom)
    assert match is not None
    tokens = float(match.group(2)) * (1000 if match.group(3) else 1)
    return int(match.group(1)), tokens, int(match.group(4)) * 1000


def test_the_bar_reads_against_the_auto_compact_threshold(
        spawn: Spawn, monkeypatch: pytest.MonkeyPatch) -> None:
    # A 12k window (9k after the output reserve) whose summary threshold is capped at 6k.
    monkeypatch.setenv("MINI_CLAUDE_AUTOCOMPACT_MAX_TOKENS", "6000")
    policy = ScriptedPolicy([
        Reply(text="Reading.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]),
        Reply(text="The notes are about the build."),
    ])
    with Simulator(policy) as sim:
        term = spawn(sim, columns=120, rows=30)
        reading(term)
        term.type("what do the notes say?\r")
        term.wait_text("The notes are about the build.")
        shown, tokens, point = reading(term)
        assert point == 6000
        assert shown == pytest.approx(tokens / point * 100, abs=2)
        assert shown > tokens / 9000 * 100 + 10  # not the share of the window

        term.type("/context\r")
        term.wait_text("of the way to auto-compact")
        term.wait_text("effective window")
        flat = " ".join(term.text.split())
        assert f"{shown}% of the way to auto-compact" in flat
