"""What a session keeps besides its messages, read back from the transcript on resume.

The todo plan, the loaded skills and the plan approved in plan mode are written as
transcript events when they change (``todos``, ``skill_loaded``, ``plan_approved``);
replaying those events gives a resumed session the plans and the skills it had, so the
next compaction re-attaches them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from mini_claude.plan import TodoItem, items_from_dicts


@dataclass
class SavedState:
    todos: tuple[TodoItem, ...] = ()
    skills: list[str] = field(default_factory=list)  # oldest first
    approved_plan: str | None = None  # the plan approved when leaving plan mode


def read_saved_state(path: Path) -> SavedState:
    """The last plan and every loaded skill; damaged lines are skipped (resume warns)."""
    state = SavedState()
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return state
    for line in lines:
        if '"kind"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("type") != "event":
            continue
        if record.get("kind") == "todos" and isinstance(record.get("todos"), list):
            state.todos = items_from_dicts(record["todos"])
        elif record.get("kind") == "skill_loaded" and isinstance(record.get("name"), str):
            state.skills.append(record["name"])
        elif record.get("kind") == "plan_approved" and isinstance(record.get("plan"), str):
            state.approved_plan = record["plan"]
    return state
