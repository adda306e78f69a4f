"""A scripted session that edits files across turns and compactions, for the rewind tests."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mini_claude.checkpoints.timeline import Point
from mini_claude.session.rewind import Rewinder
from mini_claude.simulator import RecordedRequest, Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.agent import Run

FILES = {"a.txt": "alpha one\n", "b.txt": "beta one\n", "c.sh": "#!/bin/sh\necho gamma one\n"}
FileState = dict[str, tuple[bytes, int] | None]  # name -> (content, mode), None: absent
TRACKED = ("a.txt", "b.txt", "c.sh", "d.txt")


def write_project(folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    for name, text in FILES.items():
        (folder / name).write_text(text)
    os.chmod(folder / "c.sh", 0o755)
    return folder


def file_state(folder: Path) -> FileState:
    state: FileState = {}
    for name in TRACKED:
        path = folder / name
        state[name] = (path.read_bytes(), path.stat().st_mode & 0o777) if path.exists() else None
    return state


def edit(path: str, old: str, new: str) -> ToolCall:
    return ToolCall("edit_file", {"path": path, "old": old, "new": new})


def write(path: str, content: str) -> ToolCall:
    return ToolCall("write_file", {"path": path, "content": content})


# Five turns: three files edited, a fourth created; the caller compacts after turns 3 and 5.
TURNS: list[tuple[str, list[ToolCall]]] = [
    ("turn 1: make a two", [edit("a.txt", "alpha one", "alpha two")]),
    ("turn 2: make b two", [edit("b.txt", "beta one", "beta two")]),
    ("turn 3: make c two", [edit("c.sh", "gamma one", "gamma two")]),
    ("turn 4: add d", [write("d.txt", "delta\n")]),
    ("turn 5: make a and b three", [edit("a.txt", "alpha two", "alpha three"),
                                    edit("b.txt", "beta two", "beta three")]),
]


def scripted_policy(turns: list[tuple[str, list[ToolCall]]]) -> ScriptedPolicy:
    steps: list[Reply] = []
    for number, (_, calls) in enumerate(turns, 1):
        steps.append(Reply(f"Working on turn {number}.", calls))
        steps.append(Reply(f"Turn {number} is done."))
    return ScriptedPolicy(steps, final=Reply("Understood."))


def rewinder(run: Run) -> Rewinder:
    return Rewinder(run.agent, run.session.checkpointer)


def point_for(run: Run, text: str) -> Point:
    """The picker's point for the prompt (or rewind label) that starts with ``text``."""
    matches = [p for p in rewinder(run).points() if p.text.startswith(text)]
    assert len(matches) == 1, [p.text for p in rewinder(run).points()]
    return matches[0]


def without_cache_marks(value: Any) -> Any:
    """A request body without cache_control marks, which move to the newest message."""
    if isinstance(value, dict):
        return {k: without_cache_marks(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_cache_marks(v) for v in value]
    return value


def history_sent(request: RecordedRequest) -> list[Any]:
    """The messages a request carried, all but the newest (the prompt that asked)."""
    messages = without_cache_marks(request.body["messages"])
    assert isinstance(messages, list)
    return messages[:-1]


def make_run(sim: Simulator, provider: str, home: Path, project: Path) -> Run:
    return Run(sim, provider, home, project, context_window=200_000)
