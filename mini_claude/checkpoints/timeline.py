"""A transcript read as a timeline: the points a rewind can go back to, and every file change.

A point is a line of the transcript: a prompt the user typed (the state just before
it), or an earlier rewind (the state just before it, which is how a rewind is
undone). Which prompts belong to the current branch follows the rewinds, and
ignores compactions: a prompt a summary replaced is still a point.

The content a file had at a point is what the first change recorded after that
point found there; a file no change touched after it is left alone.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Literal

from mini_claude.transcript import TranscriptLine, rewind_targets

ABSENT = "absent"  # a change's ``after``: the change removed the file

PointKind = Literal["prompt", "rewind"]


@dataclass(frozen=True, slots=True)
class Point:
    line: int
    kind: PointKind
    time: float | None
    text: str  # the prompt's text; for a rewind, what it went back to


@dataclass(frozen=True, slots=True)
class FileChange:
    """One recorded change of one file: what it held before, and what was written."""

    line: int
    path: str
    before: dict[str, Any]
    after: str | None  # a content id, ABSENT, or None when unknown
    by: str = ""  # the command that made it ("run_shell", …); "" for an edit or a rewind
    created_folders: tuple[str, ...] = ()  # folders that did not exist before it


@dataclass
class Timeline:
    points: list[Point] = field(default_factory=list)  # the current branch, oldest first
    changes: list[FileChange] = field(default_factory=list)  # all of them, in order
    lines: int = 0

    def state_at(self, point: Point) -> dict[str, dict[str, Any]]:
        """Each file changed at or after the point, with the state it had then."""
        states: dict[str, dict[str, Any]] = {}
        for change in self.changes:
            if change.line >= point.line and change.path not in states:
                states[change.path] = change.before
        return states

    def changed_since(self, point: Point) -> list[str]:
        return sorted({c.path for c in self.changes if c.line >= point.line})

    def changes_since(self, point: Point) -> list[FileChange]:
        """The first change of each file at or after the point (what it held then)."""
        first: dict[str, FileChange] = {}
        for change in self.changes:
            if change.line >= point.line:
                first.setdefault(change.path, change)
        return [first[path] for path in sorted(first)]

    def folders_created_since(self, point: Point) -> list[str]:
        """Folders made for files created at or after the point, deepest first."""
        folders = {f for c in self.changes if c.line >= point.line for f in c.created_folders}
        return sorted(folders, key=lambda f: (-f.count("/"), f))

    def last_writes(self) -> dict[str, str | None]:
        """What the agent (or a rewind) last left in each path: a content id, ABSENT, or None."""
        return {change.path: change.after for change in self.changes}


def build_timeline(records: list[TranscriptLine]) -> Timeline:
    timeline = Timeline(lines=len(records))
    kept: dict[int, list[Point]] = {}
    targets = rewind_targets(records)
    branch: list[Point] = []
    for number, record in enumerate(records, 1):
        if number in targets:
            kept[number] = list(branch)
        if not isinstance(record, dict):
            continue
        kind = record.get("type")
        with contextlib.suppress(KeyError, TypeError, ValueError):
            if kind == "message":
                prompt = _prompt_text(record)
                if prompt is not None:
                    branch.append(Point(number, "prompt", _time(record), prompt))
            elif kind == "checkpoint":
                timeline.changes.append(_change(number, record))
            elif kind == "rewind":
                timeline.changes.extend(_change(number, f) for f in record.get("files", []))
                if record.get("conversation", True):
                    branch = list(kept.get(int(record["to_line"]), branch))
                branch.append(Point(number, "rewind", _time(record), str(record.get("label", ""))))
    timeline.points = branch
    return timeline


def _change(number: int, record: dict[str, Any]) -> FileChange:
    before = record["before"]
    if not isinstance(before, dict):
        raise TypeError("a checkpoint without its state")
    after = record.get("after")
    folders = record.get("created_folders", [])
    return FileChange(number, str(record["path"]), before, str(after) if after else None,
                      str(record.get("by", "")),
                      tuple(str(f) for f in folders) if isinstance(folders, list) else ())


def _prompt_text(record: dict[str, Any]) -> str | None:
    """The text of a message the user typed; None for tool results and the model's messages."""
    message = record["message"]
    if message.get("role") != "user":
        return None
    blocks = message.get("blocks", [])
    if any(b.get("kind") == "tool_result" for b in blocks):
        return None
    texts = [str(b.get("text", "")) for b in blocks if b.get("kind") == "text"]
    return texts[0] if texts else None


def _time(record: dict[str, Any]) -> float | None:
    value = record.get("time")
    return float(value) if isinstance(value, (int, float)) else None
