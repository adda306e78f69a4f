"""The model's todo plan: a short checklist it rewrites whole, kept by the session.

The plan is state the client owns, not text the model must remember: the
``todo_write`` tool replaces it, the transcript records every version (resume
restores the last), every compaction writes it back verbatim, and a plan left
unfinished and untouched for a while earns the model a short reminder.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

TodoStatus = Literal["pending", "in_progress", "completed"]
STATUSES: tuple[str, ...] = get_args(TodoStatus)
MAX_ITEMS = 50
MAX_CONTENT_CHARS = 500

CHECKBOX = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}
REMINDER_TAG = "system-reminder"
_REMINDER = re.compile(rf"\s*<{REMINDER_TAG}>.*?</{REMINDER_TAG}>", re.DOTALL)


class PlanError(ValueError):
    """A todo list the tool refuses; the message tells the model what to fix."""


@dataclass(frozen=True, slots=True)
class TodoItem:
    content: str
    status: TodoStatus

    def to_dict(self) -> dict[str, str]:
        return {"content": self.content, "status": self.status}


def parse_todos(raw: object) -> tuple[TodoItem, ...]:
    """The items of a ``todo_write`` call, or :class:`PlanError` naming the first problem."""
    if not isinstance(raw, list):
        raise PlanError("'todos' must be a list of {content, status} objects")
    if len(raw) > MAX_ITEMS:
        raise PlanError(f"a plan holds at most {MAX_ITEMS} items (got {len(raw)}); merge steps")
    items: list[TodoItem] = []
    for number, entry in enumerate(raw, 1):
        if not isinstance(entry, Mapping):
            raise PlanError(f"item {number} must be an object with 'content' and 'status'")
        content = entry.get("content")
        status = entry.get("status")
        if not isinstance(content, str) or not content.strip():
            raise PlanError(f"item {number} needs a non-empty 'content' string")
        if len(content) > MAX_CONTENT_CHARS:
            raise PlanError(f"item {number} is longer than {MAX_CONTENT_CHARS} characters")
        if status not in STATUSES:
            raise PlanError(
                f"item {number} has status {status!r}; use one of {', '.join(STATUSES)}"
            )
        items.append(TodoItem(" ".join(content.split()), status))
    working = [i for i, item in enumerate(items, 1) if item.status == "in_progress"]
    if len(working) > 1:
        raise PlanError(
            f"only one item may be in_progress at a time (items {', '.join(map(str, working))} "
            "are); finish one first or set the others to pending"
        )
    return tuple(items)


def items_from_dicts(raw: Sequence[Any]) -> tuple[TodoItem, ...]:
    """Items as the transcript stored them; anything unreadable gives an empty plan."""
    try:
        return parse_todos(list(raw))
    except PlanError:
        return ()


class Plan:
    """The current list and how long the model has left it alone."""

    def __init__(self, items: Sequence[TodoItem] = ()) -> None:
        self.items: tuple[TodoItem, ...] = tuple(items)
        self.calls_since_touch = 0
        self._finished_one = False  # an item was marked completed since the last look

    def replace(self, items: Sequence[TodoItem]) -> None:
        open_before = {item.content for item in self.items if item.status != "completed"}
        self.items = tuple(items)
        self.calls_since_touch = 0
        if any(item.status == "completed" and item.content in open_before
               for item in self.items):
            self._finished_one = True

    def take_finished(self) -> bool:
        """Whether an item of the list was marked completed since the last call (a task
        boundary); a list restored on resume, or written with items already done, is not."""
        finished, self._finished_one = self._finished_one, False
        return finished

    @property
    def unfinished(self) -> bool:
        return any(item.status != "completed" for item in self.items)

    def counts(self) -> tuple[int, int]:
        """(completed, total)."""
        return sum(item.status == "completed" for item in self.items), len(self.items)

    def checklist(self) -> str:
        """The plan as the model and the screen read it, one line per item."""
        return "\n".join(f"{CHECKBOX[item.status]} {item.content}" for item in self.items)

    def note_model_call(self) -> None:
        self.calls_since_touch += 1

    def reminder(self, every: int) -> str | None:
        """A short nudge when the list is unfinished and untouched for ``every`` model calls.

        Giving it restarts the count, so the model is not nagged on every call.
        """
        if every <= 0 or not self.unfinished or self.calls_since_touch < every:
            return None
        self.calls_since_touch = 0
        done, total = self.counts()
        return (
            f"<{REMINDER_TAG}>Your todo list ({done}/{total} done) has not been updated for "
            f"{every} model calls. If you are still working on it, mark finished items "
            "completed and the current one in_progress with todo_write; if the plan changed, "
            f"rewrite it. Do not mention this reminder to the user.\n{self.checklist()}"
            f"</{REMINDER_TAG}>"
        )


def without_reminders(text: str) -> str:
    """The user's own words without the reminders the client appended to them."""
    return _REMINDER.sub("", text) if REMINDER_TAG in text else text
