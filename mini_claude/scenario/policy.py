"""The simulated model of the benchmark: plays the script, and reacts to saved outputs.

The script is followed by counters (turn, step), never by reading old
messages, because compaction rewrites those. The one thing the policy reads is
the newest tool results: when one says its output was saved to a file, or a
file read came back short (stopped at its page size, or cut in the middle
before the model saw it, in whatever words the row cuts with), the model
pages through what it needs before going on, as a real model would. A page
that itself stopped short is read on from where it stopped, and a read made
to find a forgotten fact is read on, page by page, until the fact shows.
"""

from __future__ import annotations

import json
import random
import re
import string
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from mini_claude.scenario.script import Call, Script, Step, Turn, pointer_of, read
from mini_claude.simulator.types import (
    Reply,
    SimConversation,
    TextPart,
    ToolCall,
    ToolResultPart,
    ToolUsePart,
)

HISTORY_TOOL = "search_history"
# How a persisted result announces itself: "... saved in full to PATH. ..." and its line count.
SAVED_TO = re.compile(r"saved in full to (?P<path>\S+?)\.?(?:\s|$)")
LINE_COUNT = re.compile(r"\((?:[\d.]+ [KMG]?B), (?P<lines>[\d,]+) lines?\)")
# How read_file says a read stopped at its size cap before the lines it was to show: a
# whole-file read shows lines 1-N, a page read from its offset on.
STOPPED_AT = re.compile(
    r"showing lines (?P<first>[\d,]+)-(?P<last>[\d,]+) of (?P<lines>[\d,]+); "
    r"call again with offset="
)


def saved_notice(path: object, size: str, lines: int) -> str:
    """A saved output announced in the words :data:`SAVED_TO` and :data:`LINE_COUNT` read."""
    return f"The output was saved in full to {path}. ({size}, {lines:,} lines)"


def read_on_notice(last: object, lines: int) -> str:
    """A whole-file read that stopped early, in the words :data:`STOPPED_AT` reads."""
    return f"showing lines 1-{last} of {lines:,}; call again with offset="


PAGE_LINES = 350
WHOLE_FILE_LINES = 1_000
TAIL_LINES = 150
ID_ALPHABET = string.ascii_letters + string.digits
ID_LENGTH = 22


@dataclass(frozen=True, slots=True)
class SavedOutput:
    """A tool result that did not show everything: saved to a file behind a notice, or a file
    read that stopped early or was cut in its middle."""

    tool_name: str
    saved_path: str
    lines: int
    source_path: str | None  # the file a read_file call was reading, if any
    first_unread: int = 1  # the line paging starts at (after a first page already shown)
    cut: tuple[int, int] | None = None  # lines cut from the middle before the model saw them


def saved_output(result: ToolResultPart, conv: SimConversation) -> SavedOutput | None:
    """What is left to read of a result that did not show everything, if anything."""
    use = conv.tool_use_for(result.tool_use_id)
    if use is None:
        return None
    if use.name == "read_file" and ("offset" in use.input or "limit" in use.input):
        return None  # already paging: never page a page
    found = SAVED_TO.search(result.content)
    if found is None:  # a failed command (a test run) is paged too: its end says why
        return _read_on(result, use.name, use.input.get("path"))
    count = LINE_COUNT.search(result.content)
    lines = int(count.group("lines").replace(",", "")) if count else PAGE_LINES
    source = use.input.get("path") if use.name == "read_file" else None
    return SavedOutput(use.name, found.group("path"), lines, source if isinstance(source, str)
                       else None)


# A result cut to its head and tail, in any row's words ("[... truncated: 9,000 chars cut ...]").
CUT_MARK = re.compile(r"^\[\.\.\. [^\]]*chars cut[^\]]* \.\.\.\]$", re.MULTILINE)
# read_file's numbered lines, as ``cat -n`` prints them.
NUMBERED = re.compile(r"^ *(?P<n>\d+)\t", re.MULTILINE)


def _read_on(result: ToolResultPart, tool: str, path: object) -> SavedOutput | None:
    """A whole-file read that did not show everything: it stopped at its page size, or its
    middle was cut before the model saw it; the rest is still in the file."""
    if tool != "read_file" or not isinstance(path, str):
        return None
    cut = _cut_lines(result.content)
    found = STOPPED_AT.search(result.content)
    if found is not None and found.group("first") == "1":
        last = int(found.group("last").replace(",", ""))
        return SavedOutput(tool, path, int(found.group("lines").replace(",", "")), path, last + 1,
                           cut)
    if cut is None:
        return None
    shown = NUMBERED.findall(result.content)
    return SavedOutput(tool, path, int(shown[-1]), path, int(shown[-1]) + 1, cut)


def _cut_lines(content: str) -> tuple[int, int] | None:
    """The numbered lines a head-and-tail cut left out of a file read, if any: a model that
    asked for the file sees where its line numbers jump."""
    mark = CUT_MARK.search(content)
    if mark is None:
        return None
    before = NUMBERED.findall(content[:mark.start()])
    after = NUMBERED.search(content, mark.end())
    if not before or after is None or int(after.group("n")) <= int(before[-1]) + 1:
        return None
    return int(before[-1]) + 1, int(after.group("n")) - 1


def paging_calls(saved: SavedOutput, *, seeking: bool = False) -> list[Call]:
    """What a model reads after a saved-output notice.

    A file of module size is read whole in pages (the model wanted all of
    it): what a cut took from its middle, then what its read did not reach. A
    longer one, such as a log, only at its start and its end, unless the model
    is ``seeking`` something the file holds that the read did not show: then
    it reads on page by page (its caller stops once it is found). A command's
    output is read at its end, where test runners and builds print their
    verdict.
    """
    if saved.source_path is None:
        start = max(1, saved.lines - TAIL_LINES + 1)
        return [read(saved.saved_path, offset=start, limit=TAIL_LINES)]
    if saved.lines > WHOLE_FILE_LINES and not seeking:
        if saved.first_unread > saved.lines:
            return []  # its start and its end were both shown: a cut middle is left unread
        starts = [1, saved.lines - PAGE_LINES + 1]
        starts = [s for s in starts if s >= saved.first_unread] or [saved.first_unread]
        return [read(saved.source_path, offset=start, limit=PAGE_LINES) for start in starts]
    gap = [] if saved.cut is None else [
        read(saved.source_path, offset=start, limit=min(PAGE_LINES, saved.cut[1] - start + 1))
        for start in range(saved.cut[0], saved.cut[1] + 1, PAGE_LINES)]
    rest = range(saved.first_unread, saved.lines + 1, PAGE_LINES)
    return gap + [read(saved.source_path, offset=start, limit=PAGE_LINES) for start in rest]


def _page_rest(result: ToolResultPart, conv: SimConversation) -> Call | None:
    """A page read that stopped before its last asked-for line: the rest of that page."""
    use = conv.tool_use_for(result.tool_use_id)
    if use is None or use.name != "read_file" or "offset" not in use.input:
        return None
    stop = STOPPED_AT.search(result.content)
    if stop is None:
        return None
    offset, limit = int(use.input["offset"]), int(use.input.get("limit", PAGE_LINES))
    last = int(stop.group("last").replace(",", ""))
    wanted = offset + limit - 1
    if last >= wanted:
        return None
    return read(str(use.input["path"]), offset=last + 1, limit=wanted - last)


class SavedOutputPager:
    """Reacts once to each saved-output notice in the newest tool results.

    Pages are read one per step, as a model reads a long file: page one, then,
    having seen it, the next. Reading them all at once would put several pages
    into one request, and on a small window that request could not hold them.
    """

    def __init__(self) -> None:
        self._handled: set[str] = set()
        self._pending: deque[tuple[Call, str]] = deque()  # page, the result it pages
        self._seeking: dict[str, tuple[str, ...]] = {}  # a read's tool id: the facts it is for
        self.pages_read = 0
        self.paged_for: set[str] = set()  # the tool ids whose saved output the last step pages

    def seek(self, tool_id: str, fact_ids: tuple[str, ...]) -> None:
        """This read looks for these facts: if it stops short of them, it is read on."""
        self._seeking[tool_id] = fact_ids

    def step(self, conv: SimConversation,
             found: Callable[[tuple[str, ...]], bool] = lambda _: True) -> Step | None:
        """The next page to read, if any; ``found`` says whether facts are in view now."""
        last_origin = next(iter(self.paged_for), "")  # what the page just read was for
        self.paged_for = set()
        self._stop_seeking(found)
        for result in conv.last_tool_results():
            if result.tool_use_id in self._handled:
                continue
            self._handled.add(result.tool_use_id)
            rest = _page_rest(result, conv)
            if rest is not None and last_origin:
                self._pending.appendleft((rest, last_origin))
                continue
            saved = saved_output(result, conv)
            if saved is not None:
                sought = self._seeking.get(result.tool_use_id)
                seeking = sought is not None and not found(sought)
                self._pending.extend((call, result.tool_use_id)
                                     for call in paging_calls(saved, seeking=seeking))
        if not self._pending:
            return None
        call, origin = self._pending.popleft()
        self.paged_for = {origin}
        self.pages_read += 1
        return Step("That output was saved to a file; reading the part I need.", (call,))

    def _stop_seeking(self, found: Callable[[tuple[str, ...]], bool]) -> None:
        """Once what a read looked for is in view, the rest of its pages are not wanted."""
        done = {tool_id for tool_id, facts in self._seeking.items() if found(facts)}
        if not done:
            return
        self._pending = deque(p for p in self._pending if p[1] not in done)
        for tool_id in done:
            del self._seeking[tool_id]

    def clear(self) -> None:
        """A new turn: pages of the last one are no longer wanted."""
        self._pending.clear()
        self._seeking.clear()


class ReplyMaker:
    """Steps into replies, with tool ids as random as the real ones but the same every run."""

    def __init__(self, seed: int = 0) -> None:
        self._rng = random.Random(seed)

    def reply(self, step: Step) -> Reply:
        calls = [ToolCall(c.name, dict(c.input), id=self._next_id()) for c in step.calls]
        return Reply(step.say, calls)

    def _next_id(self) -> str:
        return "toolu_01" + "".join(self._rng.choice(ID_ALPHABET) for _ in range(ID_LENGTH))


@dataclass(frozen=True, slots=True)
class Recovery:
    """Facts a turn needed that were not in context, and the calls made to read them back."""

    turn: int
    fact_ids: tuple[str, ...]
    request_index: int  # the request answered with the recovery calls


def context_text(conv: SimConversation) -> str:
    """Everything the model sees in a request: system prompt, messages, tool inputs."""
    parts = [conv.system]
    for message in conv.messages:
        for block in message.blocks:
            if isinstance(block, TextPart):
                parts.append(block.text)
            elif isinstance(block, ToolResultPart):
                parts.append(block.content)
            elif isinstance(block, ToolUsePart):
                parts.append(json.dumps(block.input))
    return "\n".join(parts)


class ScriptPolicy:
    """Answers each request with the next step of the current turn.

    :meth:`begin_turn` is called by whoever sends the user's message, so the
    turn counter never depends on what the conversation still shows.

    At the first request of a turn that needs facts, a fact missing from the
    context is read back with the one call that shows it, when a pointer to it
    (its file's path, its command, its search) is still in the context, or with
    the call the question itself points to (the file or the search it names):
    that is what a real model does, and what it pays for in extra calls. A file
    read that stops short of the fact is read on until it shows. With
    neither, ours searches its history; a row without that tool loses the fact.
    """

    def __init__(self, script: Script, *, seed: int = 0) -> None:
        self.script = script
        self._lock = threading.Lock()
        self._replies = ReplyMaker(seed)
        self._pager = SavedOutputPager()
        self._turn: Turn | None = None
        self._steps: deque[Step] = deque()
        self._check_needs = False
        self.turn_index = -1
        self.recoveries: list[Recovery] = []
        self.recovery_ids: set[str] = set()  # tool ids of recovery calls and of their paging

    @property
    def pages_read(self) -> int:
        return self._pager.pages_read

    def begin_turn(self, index: int) -> None:
        with self._lock:
            self.turn_index = index
            self._turn = self.script.turns[index]
            self._steps = deque(self._turn.steps)
            self._check_needs = bool(self._turn.needs)
            self._pager.clear()

    def respond(self, conv: SimConversation) -> Reply:
        with self._lock:
            if self._turn is None:
                return Reply("There is no task yet.")
            if self._check_needs:
                self._check_needs = False
                recovery = self._recovery_step(conv, self._turn)
                if recovery is not None:
                    step, sought = recovery
                    reply = self._replies.reply(step)
                    self.recovery_ids.update(c.id for c in reply.tool_calls if c.id)
                    for call, facts in zip(reply.tool_calls, sought, strict=True):
                        if call.id and call.name == "read_file":
                            self._pager.seek(call.id, facts)
                    return reply
            paging = self._pager.step(conv, self._in_view(conv))
            if paging is not None:
                reply = self._replies.reply(paging)
                if self._pager.paged_for & self.recovery_ids:
                    self.recovery_ids.update(c.id for c in reply.tool_calls if c.id)
                return reply
            if self._steps:
                return self._replies.reply(self._steps.popleft())
            return Reply(self._turn.answer)

    def _in_view(self, conv: SimConversation) -> Callable[[tuple[str, ...]], bool]:
        facts = self.script.facts
        text: list[str] = []  # the context's text, made once, when first asked for

        def found(fact_ids: tuple[str, ...]) -> bool:
            if not text:
                text.append(context_text(conv))
            return all(facts[f].seen_in(text[0]) for f in fact_ids)

        return found

    def _recovery_step(
        self, conv: SimConversation, turn: Turn
    ) -> tuple[Step, list[tuple[str, ...]]] | None:
        """The calls that read missing facts back, and the facts each call is for."""
        text = context_text(conv)
        question_free = text.replace(turn.user, "")
        facts = self.script.facts
        missing = [f for f in turn.needs if not facts[f].seen_in(text)]
        calls: list[Call] = []
        recovered: list[str] = []
        sought: list[list[str]] = []  # the facts each call is made for
        for fact_id in missing:
            call = self.script.recovery.get(fact_id)
            if call is None or pointer_of(call) not in question_free:
                # No pointer left in the context: the question may name where the fact is
                # (its file, its search), and then any model makes that call.
                call = self.script.asked.get(fact_id)
            if call is None:
                # Nothing points to it: the question names the fact, and the session's own
                # history can be searched for it, when the tool is offered.
                if HISTORY_TOOL not in conv.tool_names:
                    continue
                call = Call(HISTORY_TOOL, {"query": f"FACT-{fact_id}", "literal": True})
            recovered.append(fact_id)
            if call not in calls:
                calls.append(call)
                sought.append([])
            sought[calls.index(call)].append(fact_id)
        if not calls:
            return None
        self.recoveries.append(Recovery(self.turn_index, tuple(recovered), conv.request_index))
        where = ", ".join(pointer_of(c) for c in calls if c.name != HISTORY_TOOL)
        if any(c.name == HISTORY_TOOL for c in calls):
            where = ", ".join(filter(None, [where, "my history"]))
        step = Step(f"I no longer have that in front of me; reading it back from {where}.",
                    tuple(calls))
        return step, [tuple(facts) for facts in sought]
