"""The history after a summary: boundary, acknowledgement, tail; sized to leave real headroom.

The boundary user message carries the summary, the user's own recent words
kept verbatim, and the files the session was working on read fresh from disk.
The tail is the newest part of the history kept as it was. When the result is
still above the headroom target the plan escalates step by step (clear older
tool results in the tail, keep fewer messages, fewer files, less user text, and
last cut the newest results to head and tail) rather than leave a history that
triggers the next compaction at once.
Everything here is pure apart from reading project files and the result store.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from mini_claude.context.base import ResultStore
from mini_claude.context.placeholders import (
    budget_marker,
    cleared_block,
    cut_to_head_and_tail,
    with_original_size,
)
from mini_claude.context.reattach import Reattachment
from mini_claude.context.store import ensure_saved
from mini_claude.context.summary_request import is_boundary
from mini_claude.conversation import (
    Message,
    ResultState,
    SummaryBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    validate,
)
from mini_claude.plan import without_reminders
from mini_claude.steering import steering_text
from mini_claude.tool_kinds import known_tools

ACK_TEXT = (
    "I have the summary of the earlier part of this session and the material attached to it; "
    "I will continue from there."
)
USER_TEXT_LABEL = "[Written by the user earlier in this session, kept word for word:]"
FILE_LABEL = (
    "[File re-attached after compaction, as it is on disk now: {path} "
    "(lines {first}-{last} of {total})]"
)
_FILE_HEADER = re.compile(
    r"^\[File re-attached after compaction, as it is on disk now: (.+) "
    r"\(lines (\d+)-(\d+) of (\d+)\)\]$"
)
CLEARED_LABEL = "cleared at compaction"

# Files larger than this are logs or data, not what the model was editing.
MAX_REATTACH_FILE_BYTES = 4 * 1024 * 1024
LINE_CHARS = 2_000
# The first tail allowance is also at most this share of the history, so that a
# compaction asked for early (by hand, or by the model) still compacts most of it.
TAIL_HISTORY_SHARE = 0.3
# Last resort for a tail whose newest results alone break the target: cut them to
# head and tail, halving the allowance from the first to the last of these.
TRIM_FIRST_CHARS = 16_000
TRIM_LAST_CHARS = 1_000
# Below this an attachment is a sliver of a file, more confusing than useful.
MIN_ATTACHMENT_CHARS = 400
BINARY_SNIFF_BYTES = 8_192


class RebuildError(Exception):
    """No history within the headroom target could be built; the message says why."""


# ---- the user's own words ----------------------------------------------------------


def user_texts(messages: Sequence[Message]) -> list[str]:
    """What the user typed, oldest first, including texts an earlier compaction kept and
    the messages they sent during a turn (steering, beside a step's tool results)."""
    texts: list[str] = []
    for message in messages:
        if message.is_plain_user_message:
            texts.append(without_reminders(message.text))  # a stale reminder is not theirs
        elif is_boundary(message):
            texts.extend(_kept_texts_of(message))
        elif message.role == "user":
            texts.extend(t for b in message.blocks if (t := steering_text(b)) is not None)
    return [t for t in texts if t.strip()]


def _kept_texts_of(boundary: Message) -> list[str]:
    prefix = USER_TEXT_LABEL + "\n"
    return [
        b.text[len(prefix):]
        for b in boundary.blocks
        if isinstance(b, TextBlock) and b.text.startswith(prefix)
    ]


def select_user_texts(texts: Sequence[str], budget_chars: int) -> list[str]:
    """The newest texts that fit the budget, oldest first.

    Selection stops at the first text that does not fit, so what is kept is an
    unbroken run of the latest messages. When the newest text alone is too big,
    its start and end are kept around a marker.
    """
    chosen: list[str] = []
    used = 0
    for text in reversed(texts):
        if used + len(text) <= budget_chars:
            chosen.append(text)
            used += len(text)
            continue
        if not chosen and budget_chars > 0:
            chosen.append(_head_and_tail(text, budget_chars))
        break
    chosen.reverse()
    return chosen


def _head_and_tail(text: str, limit: int) -> str:
    keep_each = max(0, limit // 2 - 40)
    cut = len(text) - 2 * keep_each
    return f"{text[:keep_each]}\n[... {cut:,} characters of this message left out ...]\n" + (
        text[len(text) - keep_each:] if keep_each else ""
    )


def user_text_block(text: str) -> TextBlock:
    return TextBlock(f"{USER_TEXT_LABEL}\n{text}")


# ---- files the session was working on ----------------------------------------------


@dataclass(frozen=True, slots=True)
class FileRef:
    path: str  # as the model wrote it, relative to the project or absolute
    first_line: int = 1


def recent_files(messages: Sequence[Message]) -> list[FileRef]:
    """Files read or written, most recent first, one entry per path."""
    found: list[FileRef] = []
    for message in messages:
        if is_boundary(message):
            found.extend(_attached_files_of(message))
        for use in message.tool_uses:
            ref = _file_ref(use)
            if ref is not None:
                found.append(ref)
    seen: set[str] = set()
    newest_first: list[FileRef] = []
    for ref in reversed(found):
        key = path_key(ref.path)
        if key not in seen:
            seen.add(key)
            newest_first.append(ref)
    return newest_first


def touched_paths(messages: Sequence[Message]) -> set[str]:
    """Normalised paths of every file tool call in ``messages``."""
    return {path_key(ref.path) for m in messages for u in m.tool_uses if (ref := _file_ref(u))}


def _file_ref(use: ToolUseBlock) -> FileRef | None:
    traits = known_tools().traits(use.name)
    if traits.file_argument is None:
        return None  # not a tool that names the file the session was working on
    path = use.input.get(traits.file_argument)
    if not isinstance(path, str) or not path.strip():
        return None
    offset = use.input.get("offset") if traits.pages_itself else None
    first = offset if isinstance(offset, int) and offset > 0 else 1
    return FileRef(path.strip(), first)


def _attached_files_of(boundary: Message) -> list[FileRef]:
    refs: list[FileRef] = []
    for block in boundary.blocks:
        if isinstance(block, TextBlock):
            match = _FILE_HEADER.match(block.text.split("\n", 1)[0])
            if match:
                refs.append(FileRef(match.group(1), int(match.group(2))))
    return refs


def path_key(path: str) -> str:
    """One spelling per path, so ``./a.py`` and ``a.py`` count as the same file."""
    return str(Path(path.strip()).expanduser()).removeprefix("./")


@dataclass(frozen=True, slots=True)
class Attachment:
    path: str  # relative to the project
    text: str  # the whole block text, header included

    def block(self) -> TextBlock:
        return TextBlock(self.text)


def read_attachment(root: Path, ref: FileRef, cap_chars: int) -> Attachment | None:
    """The file as it is now, numbered like read_file, within ``cap_chars``.

    Only regular text files inside the project are attached; anything else
    (gone, binary, huge, outside the project) is skipped without complaint.
    """
    base = root.expanduser().resolve()
    path = (base / Path(ref.path).expanduser()).resolve()
    try:
        if not path.is_relative_to(base) or not path.is_file():
            return None
        if path.stat().st_size > MAX_REATTACH_FILE_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return None
    shown = path.relative_to(base).as_posix()
    return _render_file(shown, data.decode("utf-8", errors="replace"), ref.first_line, cap_chars)


def _render_file(shown: str, text: str, first_line: int, cap_chars: int) -> Attachment | None:
    lines = text.splitlines()
    total = len(lines)
    if total == 0:
        return None
    start = first_line if first_line <= total else 1
    body: list[str] = []
    used = 0
    for number in range(start, total + 1):
        line = lines[number - 1]
        if len(line) > LINE_CHARS:
            line = line[:LINE_CHARS] + f" [line cut at {LINE_CHARS:,} chars]"
        rendered = f"{number:>6}\t{line}"
        if used + len(rendered) + 1 > cap_chars:
            break
        body.append(rendered)
        used += len(rendered) + 1
    if not body:
        return None
    last = start + len(body) - 1
    header = FILE_LABEL.format(path=shown, first=start, last=last, total=total)
    more = ""
    if last < total:
        more = f"\n(the file continues; read_file with offset={last + 1} shows more)"
    return Attachment(shown, header + "\n" + "\n".join(body) + more)


# ---- shape of the rebuilt history --------------------------------------------------


def boundary_message(
    summary: str,
    transcript_path: str,
    compacted: int,
    texts: Sequence[str],
    attachments: Sequence[Attachment],
    reattached: Sequence[Reattachment] = (),
) -> Message:
    """Summary, the user's own words, what the client re-attaches, then the files."""
    blocks: list[SummaryBlock | TextBlock] = [SummaryBlock(summary, transcript_path, compacted)]
    blocks.extend(user_text_block(t) for t in texts)
    blocks.extend(r.block() for r in reattached)
    blocks.extend(a.block() for a in attachments)
    return Message("user", list(blocks))


def assemble(boundary: Message, tail: Sequence[Message]) -> list[Message]:
    """Boundary, acknowledgement, tail; without the acknowledgement when the tail is mid-turn."""
    if tail and tail[0].role == "assistant":
        return [boundary, *tail]
    return [boundary, Message("assistant", [TextBlock(ACK_TEXT)]), *tail]


def summarized_range(
    messages: Sequence[Message], start: int, end: int, boundary: Message
) -> list[Message]:
    """``messages[start:end]`` replaced by ``boundary``: the partial form of :func:`assemble`.

    What comes before the range is kept as it was (so the prompt cache still holds it),
    and what comes after follows the boundary as the tail of a whole compaction does.
    """
    return [*messages[:start], *assemble(boundary, messages[end:])]


def pair_safe_range(messages: Sequence[Message], start: int, end: int) -> tuple[int, int]:
    """The range widened to whole turns at its start and whole call/result pairs at its end.

    The range starts at a typed user message (or an earlier summary), so what stays before
    it ends with the model's reply; it never ends on tool results, which would lose their
    call, so the end moves past them.
    """
    start = max(0, min(start, len(messages)))
    end = max(start, min(end, len(messages)))
    while start > 0 and not (messages[start].is_plain_user_message or is_boundary(
            messages[start])):
        start -= 1
    while end < len(messages) and messages[end].role == "user" and not (
            messages[end].is_plain_user_message or is_boundary(messages[end])):
        end += 1
    return start, end


def history_problems(messages: Sequence[Message]) -> list[str]:
    """Validation problems, allowing a final assistant message whose tool calls are running."""
    last = messages[-1] if messages else None
    if last is not None and last.role == "assistant" and last.tool_uses:
        return validate(messages[:-1])
    return validate(messages)


def cut_points(messages: Sequence[Message]) -> list[int]:
    """Indexes where the kept tail may begin, oldest first.

    A tail begins at a typed user message or an assistant message (never at a
    tool result, which would lose its call), after the last summary boundary so
    that something new is compacted, and late enough to keep what the next
    request needs: a pending user request, the last exchange of a running turn,
    an assistant message whose tool calls are running.
    """
    latest = _latest_allowed_cut(messages)
    earliest = _earliest_allowed_cut(messages)
    points: list[int] = []
    for index in range(earliest, latest + 1):
        if index == len(messages):
            points.append(index)
            continue
        message = messages[index]
        if message.is_plain_user_message or message.role == "assistant":
            points.append(index)
    return points


def _latest_allowed_cut(messages: Sequence[Message]) -> int:
    end = len(messages)
    if not end:
        return 0
    last = messages[-1]
    if last.role == "assistant":
        return end - 1 if last.tool_uses else end
    if last.is_plain_user_message:
        index = end - 1
        while index > 0 and messages[index - 1].is_plain_user_message:
            index -= 1
        return index
    if last.tool_results:
        return end - 2
    return end


def _earliest_allowed_cut(messages: Sequence[Message]) -> int:
    boundary = max((i for i, m in enumerate(messages) if is_boundary(m)), default=-1)
    if boundary < 0:
        return 1
    after = boundary + 1
    if after < len(messages) and messages[after].text == ACK_TEXT:
        return after + 2  # compact at least one message beyond boundary and acknowledgement
    return after + 1


# ---- clearing tool results in the tail ---------------------------------------------


def clear_tail_results(
    tail: Sequence[Message], keep_newest: int, store: ResultStore, fallback_path: str,
    *, spare_unread: bool = True,
) -> tuple[list[Message], int]:
    """Swap all but the newest ``keep_newest`` tool results for placeholders; results the
    model has not read yet are never swapped (it asked for them and has not seen them once).

    The full text goes to the result store first (or is already there); when the
    disk refuses, the placeholder points at the transcript, which has every
    result as it arrived.
    """
    unread = unread_start(tail) if spare_unread else len(tail)
    positions = [
        (mi, bi)
        for mi, message in enumerate(tail[:unread])
        for bi, block in enumerate(message.blocks)
        if isinstance(block, ToolResultBlock) and block.state != ResultState.CLEARED
    ]
    keep_newest = max(0, keep_newest - sum(len(m.tool_results) for m in tail[unread:]))
    to_clear = positions[: max(0, len(positions) - keep_newest)]
    copies = [Message(m.role, list(m.blocks)) for m in tail]
    cleared = 0
    for mi, bi in to_clear:
        block = copies[mi].blocks[bi]
        assert isinstance(block, ToolResultBlock)
        saved = ensure_saved(block, store) or fallback_path
        if not saved:
            continue
        new = cleared_block(block, saved, label=CLEARED_LABEL)
        if new is not None:
            copies[mi].blocks[bi] = new
            cleared += 1
    return copies, cleared


def unread_start(tail: Sequence[Message]) -> int:
    """Index of the first message after the last assistant message: the results there came
    back after the last model call, so the model has not read them yet."""
    last_assistant = max((i for i, m in enumerate(tail) if m.role == "assistant"), default=-1)
    return last_assistant + 1


def trim_tail_results(
    tail: Sequence[Message],
    limit: int,
    store: ResultStore,
    fallback_path: str,
    *,
    spare_unread: bool = False,
) -> tuple[list[Message], int]:
    """Cut every uncleared tool result longer than ``limit`` to its head and tail.

    For results the model still needs (the newest ones): their start and end
    stay in view and the marker names where the whole text is. With
    ``spare_unread`` the results the model has not read yet stay whole: it asked
    for them, and whatever their middle holds would be cut before it saw it once.
    """
    copies = [Message(m.role, list(m.blocks)) for m in tail]
    end = unread_start(copies) if spare_unread else len(copies)
    trimmed = 0
    for message in copies[:end]:
        for index, block in enumerate(message.blocks):
            if not isinstance(block, ToolResultBlock) or block.state == ResultState.CLEARED:
                continue
            if len(block.content) <= limit:
                continue
            saved = ensure_saved(block, store) or fallback_path
            if not saved:
                continue
            text = cut_to_head_and_tail(block, limit, partial(budget_marker, saved_path=saved))
            if len(text) >= len(block.content):
                continue
            message.blocks[index] = replace(
                with_original_size(block), content=text, saved_path=saved,
                state=max(block.state, ResultState.BUDGETED),
            )
            trimmed += 1
    return copies, trimmed


# ---- the plan ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Limits:
    """Budgets of one rebuild, in tokens except where named chars."""

    target_tokens: int  # the whole next request must fit under this
    tail_tokens: int  # the kept tail's first allowance
    user_chars: int
    file_chars: int  # per file
    files_chars: int  # all files together
    max_files: int
    keep_recent_results: int
    # Results the model has not read yet stay whole in a rebuild that is still taken, and are
    # never cleared from the tail (off: they are cut and cleared like the rest).
    spare_unread: bool = True
    # A history above the target is still taken when it is below this (0: never): a
    # summary that shrinks the context, short of the target, beats none (the tiers
    # relieve the rest).
    accept_below: int = 0


@dataclass(frozen=True, slots=True)
class Rebuilt:
    messages: list[Message]
    tokens: int
    compacted: int
    kept: int
    files: list[str]
    escalations: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Choice:
    cut: int
    clear: bool = False  # older tool results in the tail swapped for placeholders
    trim_to: int | None = None  # remaining tool results cut to this many chars
    trim_unread: bool = False  # the cut reaches results the model has not read yet
    max_files: int | None = None  # None: as many as the budgets allow
    max_texts: int | None = None


@dataclass
class Planner:
    """Finds the fullest history that still fits under the headroom target."""

    messages: Sequence[Message]
    summary: str
    transcript_path: str
    root: Path
    limits: Limits
    store: ResultStore
    estimate: Callable[[list[Message]], int]
    size_of: Callable[[Message], int]
    # Kept verbatim in every candidate: escalation never drops the plan or a loaded skill.
    reattached: Sequence[Reattachment] = ()
    # The kept tail begins at or before this index (session notes describe only that much).
    max_cut: int | None = None
    _files: dict[str, Attachment | None] = field(default_factory=dict)
    _tails: dict[tuple[int, bool, int | None, bool], tuple[list[Message], int, int]] = field(
        default_factory=dict
    )

    def plan(self) -> Rebuilt:
        cuts = cut_points(self.messages)
        if self.max_cut is not None:
            cuts = [cut for cut in cuts if cut <= self.max_cut]
        if not cuts:
            raise RebuildError("nothing to compact yet")
        start = _Choice(self._first_cut(cuts))
        choice, tokens = start, self._tokens(start)
        for step in (self._clear_older, self._fewer_messages(cuts), self._fewer_files,
                     self._less_user_text, self._trim_newest):
            if tokens <= self.limits.target_tokens:
                break
            choice, tokens = step(choice)
        target = self.limits.target_tokens
        if not self._taken(tokens):
            raise RebuildError(
                f"the summary does not leave enough room: {tokens:,} tokens after compaction, "
                f"above the {target:,}-token target"
            )
        result = self._result(start, choice, tokens)
        if tokens > target:
            result.escalations.append(
                f"{tokens:,} tokens after compaction, above the {target:,}-token target; "
                "older tool results are cleared as needed"
            )
        return result

    # -- escalation steps: each returns the cheapest choice that fits, or its last try --

    def _clear_older(self, choice: _Choice) -> tuple[_Choice, int]:
        new = replace(choice, clear=True)
        return new, self._tokens(new)

    def _fewer_messages(self, cuts: list[int]) -> Callable[[_Choice], tuple[_Choice, int]]:
        def step(choice: _Choice) -> tuple[_Choice, int]:
            best, tokens = choice, self._tokens(choice)
            for cut in (c for c in cuts if c > choice.cut):
                best = replace(choice, cut=cut)
                tokens = self._tokens(best)
                if tokens <= self.limits.target_tokens:
                    break
            return best, tokens

        return step

    def _fewer_files(self, choice: _Choice) -> tuple[_Choice, int]:
        count = len(self._attachments(choice.cut, choice.max_files))
        tokens = self._tokens(choice)
        while count > 0 and tokens > self.limits.target_tokens:
            count -= 1
            choice = replace(choice, max_files=count)
            tokens = self._tokens(choice)
        return choice, tokens

    def _less_user_text(self, choice: _Choice) -> tuple[_Choice, int]:
        """Drops the oldest kept texts; the newest stays, it is often the request at hand."""
        count = len(self._texts(choice.cut, choice.max_texts))
        tokens = self._tokens(choice)
        while count > 1 and tokens > self.limits.target_tokens:
            count -= 1
            choice = replace(choice, max_texts=count)
            tokens = self._tokens(choice)
        return choice, tokens

    def _trim_newest(self, choice: _Choice) -> tuple[_Choice, int]:
        """Results the model has read first; those it has not only when the history would
        otherwise be refused: above the target but taken, it still holds what the model asked
        for whole, and the tiers clear it once the model has read it."""
        tokens = self._tokens(choice)
        for trim_unread in (False, True):
            limit = TRIM_FIRST_CHARS
            while limit >= TRIM_LAST_CHARS and tokens > self.limits.target_tokens and not (
                trim_unread and self.limits.spare_unread and self._taken(tokens)
            ):
                choice = replace(choice, trim_to=limit, trim_unread=trim_unread)
                tokens = self._tokens(choice)
                limit //= 2
        return choice, tokens

    def _taken(self, tokens: int) -> bool:
        """Whether ``plan`` takes a history of this size (at or under the target, or short
        of it but below ``accept_below``)."""
        return tokens <= self.limits.target_tokens or tokens < self.limits.accept_below

    # -- building one candidate --

    def _first_cut(self, cuts: list[int]) -> int:
        """The earliest cut whose tail fits the tail allowance, else the latest cut."""
        tail_tokens = [0] * (len(self.messages) + 1)
        for index in range(len(self.messages) - 1, -1, -1):
            tail_tokens[index] = tail_tokens[index + 1] + self.size_of(self.messages[index])
        allowance = min(self.limits.tail_tokens, tail_tokens[0] * TAIL_HISTORY_SHARE)
        for cut in cuts:
            if tail_tokens[cut] <= allowance:
                return cut
        return cuts[-1]

    def _texts(self, cut: int, max_texts: int | None) -> list[str]:
        chosen = select_user_texts(user_texts(self.messages[:cut]), self.limits.user_chars)
        if max_texts is None or max_texts >= len(chosen):
            return chosen
        return chosen[len(chosen) - max_texts:]

    def _attachments(self, cut: int, max_files: int | None) -> list[Attachment]:
        in_tail = touched_paths(self.messages[cut:])
        limit = self.limits.max_files
        if max_files is not None:
            limit = min(limit, max_files)
        chosen: list[Attachment] = []
        used = 0
        for ref in recent_files(self.messages[:cut]):
            if len(chosen) >= limit:
                break
            if path_key(ref.path) in in_tail:
                continue
            cap = min(self.limits.file_chars, self.limits.files_chars - used)
            if cap < MIN_ATTACHMENT_CHARS:
                break
            attachment = self._read(ref, cap)
            if attachment is None:
                continue
            chosen.append(attachment)
            used += len(attachment.text)
        return chosen

    def _read(self, ref: FileRef, cap: int) -> Attachment | None:
        key = f"{ref.path}\0{ref.first_line}\0{cap}"
        if key not in self._files:
            self._files[key] = read_attachment(self.root, ref, cap)
        return self._files[key]

    def _tail(self, choice: _Choice) -> tuple[list[Message], int, int]:
        """The kept messages for ``choice``, with how many results were cleared and trimmed."""
        key = (choice.cut, choice.clear, choice.trim_to, choice.trim_unread)
        if key not in self._tails:
            tail = list(self.messages[choice.cut:])
            cleared = trimmed = 0
            if choice.clear:
                tail, cleared = clear_tail_results(
                    tail, self.limits.keep_recent_results, self.store, self.transcript_path,
                    spare_unread=self.limits.spare_unread,
                )
            if choice.trim_to is not None:
                tail, trimmed = trim_tail_results(
                    tail, choice.trim_to, self.store, self.transcript_path,
                    spare_unread=not choice.trim_unread,
                )
            self._tails[key] = (tail, cleared, trimmed)
        tail, cleared, trimmed = self._tails[key]
        return [Message(m.role, list(m.blocks)) for m in tail], cleared, trimmed

    def _build(self, choice: _Choice) -> list[Message]:
        boundary = boundary_message(
            self.summary,
            self.transcript_path,
            choice.cut,
            self._texts(choice.cut, choice.max_texts),
            self._attachments(choice.cut, choice.max_files),
            self.reattached,
        )
        return assemble(boundary, self._tail(choice)[0])

    def _tokens(self, choice: _Choice) -> int:
        return self.estimate(self._build(choice))

    def _result(self, start: _Choice, final: _Choice, tokens: int) -> Rebuilt:
        messages = self._build(final)
        problems = history_problems(messages)
        if problems:
            raise RebuildError("the rebuilt history would be invalid: " + problems[0])
        attachments = self._attachments(final.cut, final.max_files)
        return Rebuilt(
            messages=messages,
            tokens=tokens,
            compacted=final.cut,
            kept=len(self.messages) - final.cut,
            files=[a.path for a in attachments],
            escalations=self._describe(start, final),
        )

    def _describe(self, start: _Choice, final: _Choice) -> list[str]:
        notes: list[str] = []
        _, cleared, trimmed = self._tail(final)
        if cleared:
            notes.append(
                f"cleared {cleared} older tool results in the kept messages (full text saved)"
            )
        if final.cut > start.cut:
            notes.append(
                f"kept the newest {len(self.messages) - final.cut} messages instead of "
                f"{len(self.messages) - start.cut}"
            )
        files_before = len(self._attachments(final.cut, None))
        files_after = len(self._attachments(final.cut, final.max_files))
        if files_after < files_before:
            notes.append(f"re-attached {files_after} of {files_before} recent files")
        texts_before = len(self._texts(final.cut, None))
        texts_after = len(self._texts(final.cut, final.max_texts))
        if texts_after < texts_before:
            notes.append(
                f"kept {texts_after} of {texts_before} earlier user messages word for word"
            )
        if trimmed:
            notes.append(
                f"cut {trimmed} of the newest tool results to {final.trim_to:,} characters "
                "(full text saved)"
            )
        return notes
