"""In a real terminal: the status bar measures the way to the next summary (not the window)
and never promises one that will not come; a resumed session redraws its last exchanges as
they happened (the harness is tests/support/pty_terminal.py)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_claude.simulator import Fault, Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.pty_terminal import Screen, Spawn, spawner, write_notes_project

READING = re.compile(r"context (\d+)%(?: \([^)]*\))? \S+ ([\d.]+)(k?)/([\d.]+)k · window 12k")


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
    return int(match.group(1)), tokens, round(float(match.group(4)) * 1000)


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


LONG_ANSWER = "FACT-9 the parser keeps its state per file. " + " ".join(
    f"Step {i}: the module reads its input, checks the header and stores the rows."
    for i in range(200)
)


def test_failed_auto_compaction_is_said_once_and_the_status_stops_promising(
        spawn: Spawn, monkeypatch: pytest.MonkeyPatch) -> None:
    # Failing summary calls are under test: session notes would stand in for them.
    monkeypatch.setenv("MINI_CLAUDE_SESSION_MEMORY", "0")
    policy = ScriptedPolicy([Reply(text=LONG_ANSWER), Reply(text=LONG_ANSWER + " Again.")],
                            final=Reply(text="Answered anyway."))
    with Simulator(policy) as sim:
        term = spawn(sim, columns=150, rows=40)
        reading(term)
        term.type("explain the parser\r")
        term.wait_text("Step 199")
        reading(term)
        term.type("and the writer\r")
        term.wait_text("Again.")
        shown, _, _ = reading(term)
        assert shown > 100 and "(compacts on the next message)" in term.bottom

        sim.inject(Fault("summary_error", times=3))
        for number in range(3):
            term.type(f"question {number}\r")
            answers = number + 1
            term.wait(lambda t: t.text.count("Answered anyway.") == answers,  # noqa: B023
                      f"the answer to question {number}")
            reading(term)
        bottom = term.bottom
        flat = " ".join(" ".join(row for row in term.rows if row != bottom.rstrip()).split())
        assert flat.count("auto-compact failed") == 1  # the streak is told once ...
        assert flat.count("auto-compact stopped after 3 failed summaries") == 1  # ... and its end
        assert "compaction failed" not in flat
        assert "(/compact to summarize)" in bottom
        assert "auto-compact stopped after 3 failed summaries" in bottom
        assert "compacts on the next message" not in bottom and "auto-compact due" not in bottom

        term.type("/compact\r")
        term.wait_text("✓ compacted (/compact)")
        after, _, _ = reading(term)
        assert after < 100 and "stopped" not in term.bottom


def at_prompt(term: Screen) -> None:
    term.wait(lambda t: t.has_empty_prompt and "context " in t.bottom, "the prompt")


def test_resuming_a_compacted_session_shows_the_exchanges_compaction_and_interruption(
        spawn: Spawn) -> None:
    policy = ScriptedPolicy([
        Reply(text="Hi, this is the first answer."),
        Reply(text="Tidying up first.", tool_calls=[ToolCall("compact", {})]),
        Reply(text="Final answer: everything is tidy and the tests pass."),
    ])
    with Simulator(policy) as sim:
        term = spawn(sim, columns=110, rows=40)
        at_prompt(term)
        term.type("hello there\r")
        term.wait_text("first answer")
        at_prompt(term)
        term.type("tidy up and finish\r")
        term.wait_text("Final answer")
        at_prompt(term)
        sim.inject(Fault("slow", delay_s=60))
        term.type("one more question\r")
        term.wait(lambda t: "esc to interrupt" in t.text, "the running turn")
        term.type("\x03")
        term.wait_text("Interrupted")
        at_prompt(term)
        term.type("/exit\r")
        deadline = time.monotonic() + 30
        while term.child.isalive() and time.monotonic() < deadline:
            term.pump()

        again = spawn(sim, "-c", columns=110, rows=40)
        again.wait_text("resumed:")
        at_prompt(again)
        flat = " ".join(again.text.split())
        order = ["> hello there", "first answer", "> tidy up and finish", "● compact",
                 "✓ compacted (requested by the model)",
                 "Final answer: everything is tidy and the tests pass.",
                 "> one more question", "⎿ Interrupted", "resumed:"]
        positions = [flat.find(text) for text in order]
        assert -1 not in positions, [t for t, p in zip(order, positions, strict=True) if p < 0]
        assert positions == sorted(positions)
