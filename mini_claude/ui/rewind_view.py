"""`/rewind` (and Esc Esc on an empty prompt): pick an earlier message, then what to restore."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text

from mini_claude.checkpoints.timeline import ABSENT
from mini_claude.ui.choice import ChoiceInterrupted, choose
from mini_claude.ui.recall import Recall, latest_summary
from mini_claude.ui.render import note

if TYPE_CHECKING:
    from mini_claude.checkpoints.timeline import FileChange, Point
    from mini_claude.session.rewind import CodePlan, PlannedFile, Rewinder, RewindOutcome
    from mini_claude.session.wiring import Session
    from mini_claude.ui.host import ReplHost

NOT_TRACKED = ("Edits, shell commands and MCP tools are checkpointed inside the project; "
               "files .gitignore ignores, files over the size limit, changes outside the "
               "project and your own edits outside mini-claude are not.")
ACTIONS = ("Restore code and conversation", "Restore conversation only", "Restore code only",
           "Summarize from here", "Summarize up to here", "Never mind")
SUMMARIZE_FROM, SUMMARIZE_UP_TO, CANCEL = 3, 4, 5
INSTRUCTIONS_QUESTION = "  Instructions for the summary (optional, Enter to skip): "
MAX_POINTS = 20  # menu rows: the newest messages, fewer on a short screen
SCREEN_MARGIN = 8  # rows the question, the note and the hint take around the menu
MAX_FILES_SHOWN = 8
MENU_MARGIN = 8  # " ❯ 12. " before each label


async def rewind(repl: ReplHost) -> None:
    """The whole dialogue; every step can be cancelled with Esc, nothing changes until the end."""
    from mini_claude.session.rewind import Rewinder, RewindError

    console = repl.console
    try:
        rewinder = Rewinder(repl.agent, repl.session.checkpointer)
    except OSError as exc:
        console.print(note(f"cannot read the transcript: {exc.strerror or exc}", "error"))
        return
    points = rewinder.points()
    if not points:
        console.print(note("nothing to rewind to yet: no earlier message in this session"))
        return
    console.print(Text("Rewind to before which message?", style="bold"))
    console.print(note(NOT_TRACKED))
    point = await _pick_point(repl, rewinder, points)
    if point is None:
        console.print(note("rewind cancelled"))
        return
    _show_changed_files(repl, rewinder.changes_since(point))
    action = await _ask(list(ACTIONS), CANCEL, "esc cancels")
    if action is None or action == CANCEL:
        console.print(note("rewind cancelled"))
        return
    if action in (SUMMARIZE_FROM, SUMMARIZE_UP_TO):
        await _summarize(repl, rewinder, point, up_to=action == SUMMARIZE_UP_TO)
        return
    code, conversation = action in (0, 2), action in (0, 1)
    plan = rewinder.plan(point) if code else None
    keep = await _settle_conflicts(repl, plan) if plan is not None else frozenset()
    if keep is None:
        console.print(note("rewind cancelled"))
        return
    try:
        outcome = rewinder.rewind(point, code=code, conversation=conversation, plan=plan,
                                  keep=keep)
    except RewindError as exc:
        console.print(note(str(exc), "error"))
        return
    _report(repl, point, outcome, code=code, conversation=conversation)


async def _summarize(repl: ReplHost, rewinder: Rewinder, point: Point, *, up_to: bool) -> None:
    """Part of the conversation becomes a summary; the files stay as they are."""
    from mini_claude.session.rewind import RewindError
    from mini_claude.ui.permissions import ask_text

    console = repl.console
    part = (f"the messages before “{_first_line(point)}”" if up_to
            else f"“{_first_line(point)}” and everything after it")
    console.print(note(f"{part} will become a summary; the rest of the conversation and the "
                       "files stay as they are"))
    try:
        instructions = await ask_text(INSTRUCTIONS_QUESTION)
    except ChoiceInterrupted:
        console.print(note("summary cancelled"))
        return
    console.print(note("summarizing…"))
    try:
        outcome = await rewinder.summarize(point, up_to=up_to, instructions=instructions)
    except RewindError as exc:
        console.print(note(str(exc), "error"))
        return
    where = "before" if up_to else "from"
    repl.recall = Recall(summary=latest_summary(repl.agent.conversation.messages))
    console.print(note(f"summarized {outcome.summarized} messages {where} "
                       f"“{_first_line(point)}”: {outcome.messages} in the conversation now; "
                       "files unchanged, the transcript keeps every message"))
    if outcome.prompt:
        repl.view.put_back(outcome.prompt)


async def _pick_point(repl: ReplHost, rewinder: Rewinder, points: list[Point]) -> Point | None:
    """A page of the newest points that fits the screen; the last row turns to older ones."""
    console = repl.console
    page = max(3, min(MAX_POINTS, console.height - SCREEN_MARGIN))
    width = max(console.width - MENU_MARGIN, 20)
    start = 0
    while True:
        shown = points[start:start + page]
        labels = [point_label(p, len(rewinder.changed_since(p)), width) for p in shown]
        older = len(points) - start - len(shown)
        if older:
            labels.append(f"… {older} older message{'s' if older != 1 else ''}")
        index = await _ask(labels, None, "↑↓ and enter, or a digit · esc cancels")
        if index is None:
            return None
        if index < len(shown):
            return shown[index]
        start += page


def point_label(point: Point, changed: int, width: int) -> str:
    """``14:02  fix the parser  · 3 files changed since``, cut to ``width``."""
    stamp = _clock(point.time)
    files = f"  · {changed} file{'s' if changed != 1 else ''} changed since" if changed else ""
    if point.kind == "rewind":
        text = f"↶ undo the rewind to “{point.text}”" if point.text else "↶ undo a rewind"
    else:
        text = " ".join(point.text.split()) or "(an empty message)"
    room = width - len(stamp) - 2 - len(files)
    if room < 12:  # a narrow screen: the count goes before the text does
        files = f" · {changed}f" if changed else ""
        room = width - len(stamp) - 2 - len(files)
    if len(text) > room:
        text = text[: max(room - 1, 1)] + "…"
    return f"{stamp}  {text}{files}"


def checkpoint_store_line(session: Session) -> str:
    """What the checkpoints of this project take on disk, for /context and /cost."""
    size = session.checkpoints.size()
    limit = session.settings.checkpoint_store_max_bytes
    return (f"checkpoints (for /rewind): {_bytes(size.bytes)} in {size.contents} file "
            f"version{'s' if size.contents != 1 else ''} for {size.sessions} "
            f"session{'s' if size.sessions != 1 else ''} (limit {_bytes(limit)}; "
            "oldest sessions pruned first)")


def show_checkpoint_notices(repl: ReplHost) -> None:
    """Files a turn wrote that could not be checkpointed: said once, after the turn."""
    for line in repl.session.checkpointer.take_notices():
        repl.console.print(note(line, "warning"))


async def _ask(options: list[str], escape: int | None, hint: str) -> int | None:
    try:
        return await choose(options, escape_index=escape, hint=hint)
    except ChoiceInterrupted:
        return None


def _show_changed_files(repl: ReplHost, changes: list[FileChange]) -> None:
    if not changes:
        repl.console.print(note("no file was changed by mini-claude since then"))
        return
    repl.console.print(note(f"changed since then by mini-claude ({len(changes)}):"))
    for change in changes[:MAX_FILES_SHOWN]:
        repl.console.print(Text(f"      {_shown(repl, change.path)}{change_note(change)}",
                                style="dim"))
    if len(changes) > MAX_FILES_SHOWN:
        repl.console.print(Text(f"      … and {len(changes) - MAX_FILES_SHOWN} more",
                                style="dim"))
    deleted = [c for c in changes if c.by and c.after == ABSENT
               and c.before.get("state") == "content"]
    unkept = [c for c in changes if c.before.get("state") == "not_checkpointed"]
    if deleted:
        repl.console.print(note(f"{len(deleted)} deleted by a command, restorable: "
                                + _names(repl, deleted)))
    if unkept:
        repl.console.print(note(f"{len(unkept)} not restorable: " + ", ".join(
            f"{_shown(repl, c.path)} ({c.before.get('reason', 'not checkpointed')})"
            for c in unkept[:MAX_FILES_SHOWN]) + (" …" if len(unkept) > MAX_FILES_SHOWN
                                                  else ""), "warning"))


def change_note(change: FileChange) -> str:
    """`` (deleted by run_shell)``, `` (not restorable: ignored by .gitignore)``, or ""."""
    if change.before.get("state") == "not_checkpointed":
        return f"  (not restorable: {change.before.get('reason', 'not checkpointed')})"
    if not change.by:
        return ""
    if change.after == ABSENT:
        return f"  (deleted by {change.by})"
    if change.before.get("state") == "absent":
        return f"  (created by {change.by})"
    return f"  (changed by {change.by})"


def _names(repl: ReplHost, changes: list[FileChange]) -> str:
    shown = ", ".join(_shown(repl, c.path) for c in changes[:MAX_FILES_SHOWN])
    return shown + (f" and {len(changes) - MAX_FILES_SHOWN} more"
                    if len(changes) > MAX_FILES_SHOWN else "")


async def _settle_conflicts(repl: ReplHost, plan: CodePlan) -> frozenset[Path] | None:
    """Ask about each file changed outside the agent; the ones to leave alone (None: cancel)."""
    for problem in plan.problems:
        repl.console.print(note(f"{_shown(repl, str(problem.path))}: {problem.problem}; "
                                "it is left as it is", "warning"))
    keep: set[Path] = set()
    for conflict in plan.conflicts:
        answer = await _ask_about(repl, conflict)
        if answer is None:
            return None
        if answer:
            keep.add(conflict.path)
    return frozenset(keep)


async def _ask_about(repl: ReplHost, conflict: PlannedFile) -> bool | None:
    """True: keep the user's version; False: overwrite it (after storing it)."""
    repl.console.print(Text(f"{_shown(repl, str(conflict.path))} was changed outside "
                            "mini-claude since mini-claude last wrote it.", style="yellow"))
    answer = await _ask(["Keep my version of this file",
                         "Overwrite it (my version is kept in the checkpoint store)",
                         "Cancel the rewind"], 2, "esc cancels")
    if answer is None or answer == 2:
        return None
    return answer == 0


def _report(repl: ReplHost, point: Point, outcome: RewindOutcome, *, code: bool,
            conversation: bool) -> None:
    console = repl.console
    if conversation:
        messages = repl.agent.conversation.messages
        repl.recall = Recall(summary=latest_summary(messages))
        console.print(note(f"conversation rewound: {outcome.messages} messages, as before "
                           f"“{_first_line(point)}”"))
    if code:
        parts = [f"{len(outcome.restored)} restored"]
        if outcome.removed:
            parts.append(f"{len(outcome.removed)} removed (created after that point)")
        if outcome.kept:
            parts.append(f"{len(outcome.kept)} kept as you changed them")
        console.print(note("files: " + ", ".join(parts)))
        for path in outcome.unsaved:
            console.print(note(f"{_shown(repl, str(path))} was left as it is: its current "
                               "content could not be checkpointed first", "warning"))
        for refused in outcome.refused:
            console.print(note(f"{_shown(repl, str(refused.path))} was not restored: "
                               f"{refused.reason}", "warning"))
    console.print(note("nothing is lost: /rewind lists this rewind, to undo it"))
    if outcome.prompt and conversation:
        repl.view.put_back(outcome.prompt)


def _first_line(point: Point) -> str:
    if point.kind == "rewind":
        return "an earlier rewind"
    first = point.text.strip().split("\n", 1)[0]
    return first if len(first) <= 60 else first[:59] + "…"


def _shown(repl: ReplHost, name: str) -> str:
    try:
        return str(Path(name).relative_to(repl.session.cwd))
    except ValueError:
        return name


def _clock(stamp: float | None) -> str:
    if stamp is None:
        return "--:--"
    local = time.localtime(stamp)
    if time.strftime("%Y-%m-%d", local) == time.strftime("%Y-%m-%d"):
        return time.strftime("%H:%M", local)
    return time.strftime("%m-%d %H:%M", local)


def _bytes(size: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"
