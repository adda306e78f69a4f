"""The loop guard: notices when a turn goes in circles and asks the model to change tactic.

It reads the calls of the running turn (what was called, with what, and what came
back) and looks for four kinds of repetition, each completed by the newest call:

- the same call with the same arguments and the same result, with nothing changed
  in between (no file written, no other command run);
- the same command failing with the same error, over and over (edits in between do
  not reset it: they did not change the outcome);
- a file read again, same range, same content, while its earlier read is still in
  view (a read whose result a tier cleared or a summary replaced is fair to repeat);
- an edit undone and made again (A→B, B→A, A→B; or a file written back and forth).

The first time, a short reminder rides on the newest message naming what repeats;
if the same repetition goes on after that many reminders, the user is told.
A repetition that spans user turns is not a loop: each turn starts afresh.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from mini_claude.plan import REMINDER_TAG
from mini_claude.settings import Settings
from mini_claude.text import shorten

RuleName = Literal["same call", "failing command", "re-read", "edit undone"]
READ_TOOL = "read_file"
SHELL_TOOL = "run_shell"
EDIT_TOOL = "edit_file"
WRITE_TOOL = "write_file"
CHANGING_TOOLS = frozenset({EDIT_TOOL, WRITE_TOOL, SHELL_TOOL})
SUBJECT_CHARS = 80
WINDOW_CALLS = 100  # the newest calls of a turn the guard looks back over
# What changes from one run of the same command to the next without meaning anything:
# durations, clock times, hex addresses, process ids in brackets.
_NOISE = re.compile(
    r"\d+(?:\.\d+)?\s*(?:s|ms|sec|secs|seconds)\b|\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?"
    r"|0x[0-9a-fA-F]+|\[\d+\]"
)


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One finished tool call as the guard sees it."""

    id: str
    name: str
    input: Mapping[str, Any]
    result: str
    is_error: bool = False

    @property
    def signature(self) -> str:
        return self.name + json.dumps(self.input, sort_keys=True, default=str)

    @property
    def path(self) -> str:
        value = self.input.get("path")
        return value if isinstance(value, str) else ""


@dataclass(frozen=True, slots=True)
class Thresholds:
    """How many times each repetition must happen before the guard speaks (0: rule off)."""

    same_call: int = 3
    failing_command: int = 3
    reread: int = 3
    edit_undone: bool = True


def thresholds_from(settings: Settings) -> Thresholds:
    return Thresholds(settings.loop_guard_same_call, settings.loop_guard_failing_command,
                      settings.loop_guard_reread, settings.loop_guard_edit_undone)


@dataclass(frozen=True, slots=True)
class Repetition:
    """What repeats: a rule, its subject in a few words, and how many times."""

    rule: RuleName
    key: str  # the same repetition found again has the same key
    subject: str
    times: int

    def reminder(self) -> str:
        return (
            f"<{REMINDER_TAG}>Loop guard: {self.subject}. Repeating it will not give a "
            "different outcome. Stop and take another approach: re-read the error or the "
            "result you already have, question the assumption behind the step, try a "
            f"different tool or fix, or ask the user if you are stuck.</{REMINDER_TAG}>"
        )

    def notice(self) -> str:
        return (f"the agent keeps going in circles ({self.subject}) after being asked to "
                "change tactic; Esc stops the turn, or type a message to steer it")


def _arguments(record: CallRecord) -> str:
    shown = record.input.get("command") or record.path or json.dumps(
        record.input, sort_keys=True, default=str)
    return shorten(" ".join(str(shown).split()), SUBJECT_CHARS)


def _normalized(text: str) -> str:
    return _NOISE.sub("#", text).strip()


def _edit_pairs(record: CallRecord) -> tuple[tuple[str, str], ...] | None:
    """The (old, new) replacements an edit_file call made, in order; None if unreadable."""
    raw = record.input.get("edits")
    steps = raw if isinstance(raw, list) else [record.input]
    pairs: list[tuple[str, str]] = []
    for step in steps:
        if not isinstance(step, Mapping):
            return None
        old, new = step.get("old"), step.get("new")
        if not isinstance(old, str) or not isinstance(new, str):
            return None
        pairs.append((old, new))
    return tuple(pairs)


def _changes_files(record: CallRecord) -> bool:
    return record.name in CHANGING_TOOLS and not (record.name != SHELL_TOOL and record.is_error)


def find_repetition(
    calls: Sequence[CallRecord],
    thresholds: Thresholds,
    visible: Callable[[str], bool] = lambda _id: True,
) -> Repetition | None:
    """The repetition the newest of ``calls`` completes, or None."""
    if not calls:
        return None
    newest, earlier = calls[-1], list(calls[-WINDOW_CALLS:-1])
    if newest.name in (EDIT_TOOL, WRITE_TOOL):
        return _edit_undone(newest, earlier) if thresholds.edit_undone else None
    if newest.name == READ_TOOL:
        return _reread(newest, earlier, thresholds.reread, visible)
    if newest.name == SHELL_TOOL and newest.is_error:
        return _failing_command(newest, earlier, thresholds.failing_command)
    return _same_call(newest, earlier, thresholds.same_call, visible)


def _same_call(newest: CallRecord, earlier: list[CallRecord], limit: int,
               visible: Callable[[str], bool]) -> Repetition | None:
    if limit <= 0:
        return None
    times = 1
    for index in range(len(earlier) - 1, -1, -1):
        record = earlier[index]
        if record.signature == newest.signature:
            if record.result != newest.result or not visible(record.id):
                break
            times += 1
        elif _changes_files(record) or _saw_a_change(earlier, index):
            break  # something changed since: running it again is checking, not looping
    if times < limit:
        return None
    return Repetition("same call", f"same:{newest.signature}",
                      f"the same {newest.name} call ({_arguments(newest)}) gave the same "
                      f"result {times} times in a row, with nothing changed in between", times)


def _saw_a_change(calls: list[CallRecord], index: int) -> bool:
    """The call at ``index`` answered otherwise than the same call did before it: the world
    it looks at changed in between (the repeated call itself may be what changes it)."""
    record = calls[index]
    before = next((r for r in reversed(calls[:index]) if r.signature == record.signature), None)
    return before is not None and before.result != record.result


def _failing_command(newest: CallRecord, earlier: list[CallRecord],
                     limit: int) -> Repetition | None:
    if limit <= 0:
        return None
    error = _normalized(newest.result)
    times = 1
    for record in reversed(earlier):
        if record.signature != newest.signature:
            continue
        if not record.is_error or _normalized(record.result) != error:
            break
        times += 1
    if times < limit:
        return None
    return Repetition("failing command", f"fails:{newest.signature}",
                      f"the command `{_arguments(newest)}` failed {times} times with the same "
                      "error", times)


def _reread(newest: CallRecord, earlier: list[CallRecord], limit: int,
            visible: Callable[[str], bool]) -> Repetition | None:
    if limit <= 0 or newest.is_error:
        return None
    times = 1
    for record in reversed(earlier):
        if record.name in (EDIT_TOOL, WRITE_TOOL) and record.path == newest.path:
            break  # the file was changed since: reading it again is how one checks
        if record.signature != newest.signature:
            continue
        if record.result != newest.result or not visible(record.id):
            break
        times += 1
    if times < limit:
        return None
    return Repetition("re-read", f"read:{newest.signature}",
                      f"{newest.path} was read {times} times with the same arguments and it "
                      "has not changed since the first read; its content is still in the "
                      "conversation above", times)


def _edit_undone(newest: CallRecord, earlier: list[CallRecord]) -> Repetition | None:
    """A→B now, after A→B and then B→A on the same file (or a file written X, Y, X)."""
    if newest.is_error:
        return None
    same_file = [r for r in earlier if r.path == newest.path and r.name == newest.name
                 and not r.is_error]
    if newest.name == WRITE_TOOL:
        content = newest.input.get("content")
        contents = [r.input.get("content") for r in same_file]
        undone = (len(contents) >= 2 and contents[-1] != content
                  and content in contents[:-1])
    else:
        pairs = _edit_pairs(newest)
        if pairs is None:
            return None
        reverse = tuple((new, old) for old, new in reversed(pairs))
        history = [_edit_pairs(r) for r in same_file]
        last_reverse = max((i for i, p in enumerate(history) if p == reverse), default=-1)
        undone = last_reverse > 0 and pairs in history[:last_reverse]
    if not undone:
        return None
    return Repetition("edit undone", f"undo:{newest.signature}",
                      f"the same change to {newest.path} was made, undone and is now made "
                      "again", 2)


@dataclass
class LoopGuard:
    """The calls of the running turn, the reminders given, and what the user was told."""

    thresholds: Thresholds
    reminders_before_notice: int = 1
    calls: list[CallRecord] = field(default_factory=list)
    reminded: dict[str, int] = field(default_factory=dict)
    told_user: set[str] = field(default_factory=set)
    # This session's, for /context: what was found, reminders given, times the user was told.
    findings: list[Repetition] = field(default_factory=list)
    reminders: int = 0
    notices: int = 0

    def start_turn(self) -> None:
        """A new request from the user: what the last turn repeated is no loop of this one."""
        self.calls.clear()
        self.reminded.clear()
        self.told_user.clear()

    def observe(self, records: Sequence[CallRecord],
                visible: Callable[[str], bool] = lambda _id: True) -> Repetition | None:
        """Take a step's calls; the first repetition one of them completes, if any."""
        found: Repetition | None = None
        for record in records:
            self.calls.append(record)
            repetition = find_repetition(self.calls, self.thresholds, visible)
            if found is None and repetition is not None:
                found = repetition
        return found

    def respond(self, repetition: Repetition) -> tuple[str | None, str | None]:
        """(reminder for the model, notice for the user): a reminder while reminders are
        left for this repetition, then one notice; then silence (the user knows)."""
        self.findings.append(repetition)
        given = self.reminded.get(repetition.key, 0)
        if given < self.reminders_before_notice:
            self.reminded[repetition.key] = given + 1
            self.reminders += 1
            return repetition.reminder(), None
        if repetition.key in self.told_user:
            return None, None
        self.told_user.add(repetition.key)
        self.reminders += 1
        self.notices += 1
        return repetition.reminder(), repetition.notice()

    def summary(self) -> str | None:
        """One line for ``/context``: what the guard did this session, or None if nothing."""
        if not self.findings:
            return None
        last = self.findings[-1]
        told = f", told you {self.notices} time{'s' * (self.notices != 1)}" if self.notices else ""
        return (f"Loop guard: {self.reminders} reminder{'s' * (self.reminders != 1)} to change "
                f"tactic this session{told}; last: {last.subject} ({last.rule})")
