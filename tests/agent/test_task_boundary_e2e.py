"""Compaction at a task boundary, over HTTP on both providers: when a todo item is marked done
and the context is past the set share of the threshold, the summary comes then, before the
next task starts; off (the default), it waits for the threshold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mini_claude import events as ev
from mini_claude.plan import Plan, TodoItem
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    for i in range(3):
        (root / f"big_{i}.txt").write_text("".join(f"BIG-{i} row {n}\n" for n in range(300)))
    return root


def todos(*pairs: tuple[str, str]) -> ToolCall:
    return ToolCall("todo_write", {"todos": [{"content": c, "status": s} for c, s in pairs]})


SCRIPT = [
    Reply("Planning.", [todos(("read the data", "in_progress"), ("write notes", "pending"))]),
    *[Reply(f"Reading {i}.", [ToolCall("read_file", {"path": f"big_{i}.txt"})])
      for i in range(3)],
    Reply("Data read.", [todos(("read the data", "completed"), ("write notes", "in_progress"))]),
    Reply("Notes written."),
]


def compactions(events: list[ev.Event]) -> list[str]:
    return [e.reason for e in events if isinstance(e, ev.CompactionFinished)]


@pytest.mark.parametrize("enabled", [True, False])
def test_a_finished_todo_item_past_the_share_compacts_before_the_next_task(
        provider: str, enabled: bool, make_run: Any, simulator: Simulator) -> None:
    simulator.policy = ScriptedPolicy(SCRIPT)
    run = make_run(provider, context_window=40_000, session_memory=False,
                   task_boundary_compact=enabled, task_boundary_compact_pct=0.3)
    run.start()
    events = run.turn("read the data, then write notes")

    assert compactions(events) == (["task-boundary"] if enabled else [])
    if enabled:  # right after the todo_write that finished the item, before "Notes written."
        kinds = [type(e).__name__ for e in events]
        done = max(i for i, e in enumerate(events)
                   if isinstance(e, ev.PlanUpdated) and e.items[0].status == "completed")
        assert kinds.index("CompactionFinished", done) < kinds.index("TurnFinished")
        assert "BIG-0 row 150" not in str(run.model_requests()[-1].body)


def test_a_plan_restored_or_written_done_is_no_boundary() -> None:
    plan = Plan()
    plan.replace([TodoItem("old", "completed")])
    assert not plan.take_finished()
    plan.replace([TodoItem("old", "completed"), TodoItem("new", "in_progress")])
    assert not plan.take_finished()
    plan.replace([TodoItem("old", "completed"), TodoItem("new", "completed")])
    assert plan.take_finished() and not plan.take_finished()
