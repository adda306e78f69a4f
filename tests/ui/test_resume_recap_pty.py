"""`mini-claude -c` after a compacted, interrupted session redraws its last exchanges as
they happened, in a real terminal (the harness is tests/support/pty_terminal.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_claude.simulator import Fault, Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.pty_terminal import Screen, Spawn, spawner, write_notes_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_notes_project(tmp_path / "project")


@pytest.fixture
def spawn(project: Path, isolated_home: Path) -> Iterator[Spawn]:
    yield from spawner(project, size_in_env=True)


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
