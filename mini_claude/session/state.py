"""What a session keeps besides its messages, read back from the transcript on resume.

The todo plan, the loaded skills and the plan approved in plan mode are written as
transcript events when they change (``todos``, ``skill_loaded``, ``plan_approved``);
replaying those events gives a resumed session the plans and the skills it had, so the
next compaction re-attaches them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mini_claude.plan import TodoItem, items_from_dicts
from mini_claude.transcript_check import read_record


@dataclass(frozen=True, slots=True)
class SavedNotes:
    """The last complete session notes of the history as it stands (see session_memory)."""

    text: str
    covered: int
    history_tokens: int


@dataclass
class SavedState:
    todos: tuple[TodoItem, ...] = ()
    skills: list[str] = field(default_factory=list)  # oldest first
    approved_plan: str | None = None  # the plan approved when leaving plan mode
    notes: SavedNotes | None = None


def read_saved_state(path: Path) -> SavedState:
    """The last plan and every loaded skill; damaged lines are skipped (resume warns)."""
    state = SavedState()
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    except OSError:
        return state
    rewinds = [read_record(line) for line in lines if '"type": "rewind"' in line]
    targets = {r["to_line"] for r in rewinds if r is not None and r.get("conversation", True)
               and isinstance(r.get("to_line"), int)}
    todos_at: dict[int, tuple[TodoItem, ...]] = {}  # the list as it stood before each target
    for number, line in enumerate(lines, 1):
        if number in targets:
            todos_at[number] = state.todos
        if '"kind"' not in line and '"type": "compaction"' not in line and (
            '"type": "fold"' not in line
        ) and '"type": "rewind"' not in line:
            continue  # a message: nothing of the saved state
        record = read_record(line)
        if record is None:
            continue
        if record.get("type") == "rewind":  # the todo list goes back with the conversation
            if record.get("conversation", True) and record.get("to_line") in todos_at:
                state.todos = todos_at[record["to_line"]]
            continue
        if record.get("type") == "compaction":
            state.notes = None  # notes of a history that is no longer there
            continue
        if record.get("type") == "fold":
            state.notes = _after_fold(state.notes, record.get("removed"))
            continue
        if record.get("type") != "event":
            continue
        if record.get("kind") == "session_notes":
            state.notes = _notes_of(record) or state.notes
        elif record.get("kind") == "todos" and isinstance(record.get("todos"), list):
            state.todos = items_from_dicts(record["todos"])
        elif record.get("kind") == "skill_loaded" and isinstance(record.get("name"), str):
            state.skills.append(record["name"])
        elif record.get("kind") == "plan_approved" and isinstance(record.get("plan"), str):
            state.approved_plan = record["plan"]
    return state


def _notes_of(record: dict[str, object]) -> SavedNotes | None:
    text, covered, tokens = record.get("text"), record.get("covered"), record.get("history_tokens")
    if not isinstance(text, str) or not text.strip():
        return None
    if not isinstance(covered, int) or not isinstance(tokens, int) or covered < 0:
        return None
    return SavedNotes(text, covered, tokens)


def _after_fold(notes: SavedNotes | None, removed: object) -> SavedNotes | None:
    """A fold took messages out: the notes cover the same messages at their new positions."""
    if notes is None or not isinstance(removed, list):
        return None
    gone = sum(1 for i in removed if isinstance(i, int) and i < notes.covered)
    return SavedNotes(notes.text, notes.covered - gone, notes.history_tokens)
