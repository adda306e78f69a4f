"""Rewinding a session: back to an earlier message, in the code, the conversation or both.

Everything is worked out from the transcript on disk (the source of truth) and
recorded there: a rewind is one more record, so the transcript stays append-only,
the messages rewound away stay in it, and a rewind is itself a point to go back to.
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mini_claude.checkpoints.recorder import Checkpointer
from mini_claude.checkpoints.restore import (
    FileRestore,
    OutsideProject,
    Refused,
    RestoreError,
    RestoreIncomplete,
    open_folder_inside,
    restore_files,
)
from mini_claude.checkpoints.store import CheckpointStore
from mini_claude.checkpoints.timeline import (
    ABSENT,
    FileChange,
    Point,
    Timeline,
    build_timeline,
)
from mini_claude.safe_read import kind_of
from mini_claude.session.state import read_saved_state
from mini_claude.transcript import load_session, read_records

if TYPE_CHECKING:
    from mini_claude.agent.loop import Agent


class RewindError(Exception):
    """The rewind cannot be done; nothing changed. One line for the user."""


@dataclass(frozen=True, slots=True)
class PlannedFile:
    """One file a code rewind would change, and what stands in its way."""

    path: Path
    target: dict[str, Any]  # the state it had at the point
    current: str  # content id now, or ABSENT
    changed_outside: bool  # not what the agent last left there
    problem: str = ""  # why it cannot be restored ("" when it can)


@dataclass
class CodePlan:
    files: list[PlannedFile] = field(default_factory=list)

    @property
    def restorable(self) -> list[PlannedFile]:
        return [f for f in self.files if not f.problem]

    @property
    def conflicts(self) -> list[PlannedFile]:
        return [f for f in self.restorable if f.changed_outside]

    @property
    def problems(self) -> list[PlannedFile]:
        return [f for f in self.files if f.problem]


@dataclass(frozen=True, slots=True)
class RewindOutcome:
    restored: list[Path]
    removed: list[Path]
    kept: list[Path]  # the user's own versions, left as they were (and stored)
    unsaved: list[Path]  # left alone: what they hold now could not be stored first
    refused: list[Refused]  # left alone: where they would be written leads out of the project
    messages: int  # in the conversation now
    prompt: str  # the chosen message's text, for the input box


@dataclass(frozen=True, slots=True)
class SummaryOutcome:
    summarized: int  # messages the summary stands for
    messages: int  # in the conversation now
    prompt: str  # for the input box: the chosen message's text ("from here"), or ""


class Rewinder:
    """Rewinds one agent's session; built when the user asks, from the transcript on disk."""

    def __init__(self, agent: Agent, checkpointer: Checkpointer) -> None:
        self.agent = agent
        self.checkpointer = checkpointer
        self.store: CheckpointStore = checkpointer.store
        self.timeline: Timeline = build_timeline(read_records(agent.transcript.path))

    def points(self) -> list[Point]:
        """The points of the current branch, newest first."""
        return list(reversed(self.timeline.points))

    def changed_since(self, point: Point) -> list[str]:
        return self.timeline.changed_since(point)

    def changes_since(self, point: Point) -> list[FileChange]:
        return self.timeline.changes_since(point)

    def plan(self, point: Point) -> CodePlan:
        """Which files would change, which were changed outside the agent, which cannot be."""
        plan = CodePlan()
        last_writes = self.timeline.last_writes()
        folder_problems: dict[Path, str] = {}  # each folder checked once, not once per file
        for name, target in self.timeline.state_at(point).items():
            path = Path(name)
            current, special = _current_id(path)
            wanted = target.get("content") if target.get("state") == "content" else ABSENT
            mode_differs = (target.get("state") == "content" and current != ABSENT
                            and _mode(path) != target.get("mode"))
            if current == wanted and not mode_differs:
                continue
            last = last_writes.get(name)
            outside = last is not None and last != current
            if path.parent not in folder_problems:
                folder_problems[path.parent] = _outside_problem(path, self.root)
            problem = special or self._problem(target) or folder_problems[path.parent]
            plan.files.append(PlannedFile(path, target, current, outside, problem))
        return plan

    @property
    def root(self) -> Path:
        return self.agent.tool_context.root

    def _problem(self, target: dict[str, Any]) -> str:
        state = target.get("state")
        if state == "not_checkpointed":
            return f"not checkpointed ({target.get('reason', 'unknown')})"
        if state == "content" and not self.store.has(str(target.get("content"))):
            return "its checkpoint was pruned from the store"
        if state not in ("content", "absent"):
            return "its checkpoint is damaged"
        return ""

    def rewind(self, point: Point, *, code: bool, conversation: bool,
               plan: CodePlan | None = None, keep: frozenset[Path] = frozenset()) -> RewindOutcome:
        """Do it: the files first kept in the store, then one record, then the files moved."""
        if self.agent.transcript.write_failed:
            raise RewindError("the transcript cannot be written, so a rewind could not be "
                              "recorded; nothing was changed")
        plan = plan if plan is not None else (self.plan(point) if code else CodePlan())
        wanted = [f for f in plan.restorable if f.path not in keep] if code else []
        chosen, entries, unsaved = self._keep_current_versions(wanted)
        kept = [f.path for f in plan.restorable if f.path in keep] if code else []
        rewind_id = uuid.uuid4().hex[:12]
        record: dict[str, Any] = {
            "type": "rewind", "id": rewind_id, "time": time.time(), "to_line": point.line,
            "conversation": conversation, "code": code, "label": _label(point),
            "files": entries, "kept": self._store_kept(kept),
        }
        restores = [FileRestore(f.path, f.target.get("content") if f.target.get("state") ==
                                "content" else None, f.target.get("mode")) for f in chosen]

        def commit(placed: list[FileRestore]) -> None:
            names = {str(f.path) for f in placed}
            record["files"] = [e for e in entries if e["path"] in names]
            self._record(record)

        try:
            refused = restore_files(self.store, rewind_id, self.agent.transcript.path, restores,
                                    commit, root=self.root)
        except (RestoreError, OSError) as exc:
            raise RewindError(f"nothing was changed: {exc}") from None
        except RestoreIncomplete as exc:
            self._settle(chosen, conversation)
            raise RewindError(f"the rewind was recorded, but a file could not be put in place "
                              f"({exc}); start mini-claude again in this project to finish "
                              "it") from None
        self._settle(chosen, conversation)
        if code:
            self._remove_created_folders(point)
        done = [f for f in chosen if f.path not in {r.path for r in refused}]
        return RewindOutcome(
            restored=[f.path for f in done if f.target.get("state") == "content"],
            removed=[f.path for f in done if f.target.get("state") != "content"],
            kept=kept,
            unsaved=unsaved,
            refused=refused,
            messages=len(self.agent.conversation),
            prompt=point.text if point.kind == "prompt" else "",
        )

    async def summarize(self, point: Point, *, up_to: bool,
                        instructions: str = "") -> SummaryOutcome:
        """Summarize the conversation from the point's message on (or up to it), keeping the
        rest as it was; files are left alone and the transcript keeps every message."""
        from mini_claude.context.compact import CompactionError

        if point.kind != "prompt":
            raise RewindError("a summary starts or ends at a message, not at a rewind")
        if self.agent.transcript.write_failed:
            raise RewindError("the transcript cannot be written, so a summary could not be "
                              "recorded; nothing was changed")
        index = self._position(point)
        total = len(self.agent.conversation)
        start, end = (0, index) if up_to else (index, total)
        if end <= start:
            raise RewindError("nothing before that message to summarize" if up_to
                              else "nothing from that message on to summarize")
        try:
            result = await self.agent.summarize_range(start, end, instructions.strip() or None)
        except CompactionError as exc:
            raise RewindError(f"nothing was summarized: {exc.message}") from None
        return SummaryOutcome(result.end - result.start, len(self.agent.conversation),
                              "" if up_to else point.text)

    def _position(self, point: Point) -> int:
        """Where the point's message stands in the conversation now, worked out from the
        transcript (compactions, folds and earlier summaries move or remove it)."""
        loaded = load_session(self.agent.transcript.path, follow=point.line)
        messages = self.agent.conversation.messages
        index = loaded.followed
        if index is None or index >= len(messages):
            raise RewindError("that message is inside a summary now; choose a later one")
        if loaded.conversation.messages[index].text != messages[index].text or len(
                loaded.conversation) != len(messages):
            raise RewindError("the conversation differs from its transcript; nothing was "
                              "summarized")
        return index

    def _remove_created_folders(self, point: Point) -> None:
        """Folders made since the point go too, once empty (a folder holding anything stays)."""
        for name in self.timeline.folders_created_since(point):
            folder = Path(name)
            if folder == self.root or not folder.is_relative_to(self.root):
                continue
            try:
                parent = open_folder_inside(folder, self.root)
            except (OSError, OutsideProject):
                continue
            try:
                os.rmdir(folder.name, dir_fd=parent)
            except OSError:
                pass  # not empty, already gone, or no longer a folder: left as it is
            finally:
                os.close(parent)

    def _store_kept(self, kept: list[Path]) -> list[dict[str, Any]]:
        """The user's own versions, kept in place, go into the store too (as the question
        promised), named in the rewind record so they can be found again."""
        return [{"path": str(path), "state": self.checkpointer.snapshot(path)} for path in kept]

    def _record(self, record: dict[str, Any]) -> None:
        """The commit: once this line is in the transcript, the rewind has happened."""
        transcript = self.agent.transcript
        transcript.write(record)
        if transcript.write_failed:
            raise RestoreError(f"the transcript could not be written ({transcript.failure})")

    def _settle(self, chosen: list[PlannedFile], conversation: bool) -> None:
        """The agent forgets what it knew of the restored files, and takes the history back."""
        for change in chosen:
            self.agent.tool_context.read_stamps.pop(str(change.path), None)
        if conversation:
            adopt_recorded_history(self.agent)
            todos = read_saved_state(self.agent.transcript.path).todos
            self.agent.tool_context.plan.replace(todos)

    def _keep_current_versions(
        self, wanted: list[PlannedFile]
    ) -> tuple[list[PlannedFile], list[dict[str, Any]], list[Path]]:
        """Each file as it is now goes into the store first, so the rewind can be undone; a
        file whose current content cannot be stored (too large, unreadable) is left alone."""
        chosen: list[PlannedFile] = []
        entries: list[dict[str, Any]] = []
        unsaved: list[Path] = []
        for planned in wanted:
            before = self.checkpointer.snapshot(planned.path, durable=False)  # see restore
            if before.get("state") == "not_checkpointed":
                unsaved.append(planned.path)
                continue
            target = planned.target
            after = target.get("content") if target.get("state") == "content" else ABSENT
            chosen.append(planned)
            entries.append({"path": str(planned.path), "before": before, "after": after})
        return chosen, entries, unsaved



def adopt_recorded_history(agent: Agent) -> None:
    """The agent continues from the history the transcript now replays to (as a resume)."""
    loaded = load_session(agent.transcript.path)
    agent.attach(agent.transcript, loaded.conversation)
    if loaded.repair is not None:
        agent.transcript.message(loaded.repair)


def resume_at(agent: Agent, message_id: str) -> int:
    """Print mode's ``--resume-at``: the conversation as it stood after that message.

    A message that called tools keeps its results. Returns the messages kept.
    """
    records = read_records(agent.transcript.path)
    wanted = message_id.replace("-", "").strip().lower()  # stream-json prints it dashed
    found = [n for n, r in enumerate(records, 1) if isinstance(r, dict)
             and r.get("type") == "message" and str(r.get("id", "")).startswith(wanted)]
    if not wanted or len(found) != 1:
        what = "no message" if not found else f"{len(found)} messages"
        raise RewindError(f"--resume-at: {what} with id {message_id!r} in this session")
    line = found[0]
    record = records[line - 1]
    assert isinstance(record, dict)
    blocks = record["message"].get("blocks", [])
    if any(b.get("kind") == "tool_use" for b in blocks):
        line = _results_line(records, line)
    point = Point(line + 1, "prompt", None, "")
    agent.transcript.write({"type": "rewind", "id": uuid.uuid4().hex[:12], "time": time.time(),
                            "to_line": point.line, "conversation": True, "code": False,
                            "label": f"--resume-at {message_id}", "files": []})
    adopt_recorded_history(agent)
    return len(agent.conversation)


def _results_line(records: list[Any], line: int) -> int:
    """The line of the tool results that answer the message at ``line`` (or ``line``)."""
    for number in range(line + 1, len(records) + 1):
        record = records[number - 1]
        if isinstance(record, dict) and record.get("type") == "message":
            blocks = record["message"].get("blocks", [])
            is_result = any(b.get("kind") == "tool_result" for b in blocks)
            return number if is_result else line
    return line


def _label(point: Point) -> str:
    """What a rewind went back to, in a few words (the picker shows it on the way back)."""
    if point.kind == "rewind":
        return "the moment before an earlier rewind"
    first = point.text.strip().split("\n", 1)[0]
    return first[:80] or "(an empty message)"


def _current_id(path: Path) -> tuple[str, str]:
    """The content id of what ``path`` holds now (or ABSENT), and why it must be left alone
    ("" when it need not): a named pipe or device is never opened for a blocking read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return ABSENT, ""
    except OSError:
        return "unreadable", ""
    kind = kind_of(os.fstat(fd).st_mode)
    if kind is not None:  # a folder cannot even be read: looked at before any read
        os.close(fd)
        return "special", f"it is {kind} now, not a regular file"
    with os.fdopen(fd, "rb") as handle:
        os.set_blocking(fd, True)
        digest = hashlib.sha256()
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest(), ""


def _outside_problem(path: Path, root: Path) -> str:
    """Why ``path`` cannot be restored when its folder now leads out of the project."""
    if not os.path.lexists(path.parent):
        return ""  # created again by the restore, which checks where
    try:
        os.close(open_folder_inside(path, root))
    except OutsideProject as exc:
        return str(exc)
    except OSError:
        return ""
    return ""


def _mode(path: Path) -> int | None:
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return None
