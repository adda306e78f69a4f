"""Append-only JSONL session log: the source of truth that resume replays.

Every message is written as it happens with its original content (before any
tier touched it); tier edits and compactions are written as their own records,
so replaying the file rebuilds the conversation exactly as it stood.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from mini_claude.conversation import (
    INTERRUPTED_RESULT,
    Conversation,
    Message,
    ToolResultBlock,
    block_from_dict,
    block_to_dict,
    message_from_dict,
    message_to_dict,
    repair_pairs,
    strip_thinking,
)
from mini_claude.private_dirs import ensure_private_dir
from mini_claude.protocol import Usage
from mini_claude.sanitize import clean_block, clean_message, clean_value
from mini_claude.secrets import mask, secret_values
from mini_claude.text import shorten
from mini_claude.transcript_check import (
    check_block,
    check_line,
    check_message,
    check_record,
    read_record,
)


def new_session_id() -> str:
    """A UUID, as Claude Code's session ids are (sessions are listed by time, not by id)."""
    return str(uuid.uuid4())


class Transcript:
    """Writes one JSON object per line, flushed and fsync-free but unbuffered per line."""

    def __init__(self, path: Path, *, secrets: Iterable[str] = ()) -> None:
        self.path = path
        self._secrets = secret_values(secrets)
        self.write_failed = False
        self.failure = ""  # why writing failed, for the one warning the UI gives
        self._file: TextIO | None = None
        self.last_message_id = ""  # the id the newest message was recorded under
        self._closing: list[Callable[[], None]] = []
        try:
            ensure_private_dir(path.parent)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError as exc:
            self._fail(exc)  # an unwritable home: the session goes on unsaved
            return
        self._file = os.fdopen(fd, "a", encoding="utf-8")
        if _ends_mid_line(path):
            # A crash mid-write left half a record; a record glued to it would be lost too.
            self._file.write("\n")
            self._file.flush()

    @classmethod
    def create(
        cls, directory: Path, session_id: str, meta: dict[str, Any], *, secrets: Iterable[str] = ()
    ) -> Transcript:
        transcript = cls(directory / f"{session_id}.jsonl", secrets=secrets)
        transcript.write({"type": "session", "id": session_id, "created": time.time(), **meta})
        return transcript

    def write(self, record: dict[str, Any]) -> None:
        if record.get("type") not in RECORD_KINDS:
            raise ValueError(f"a transcript record of unknown type {record.get('type')!r}")
        line = mask(_json_line(record), self._secrets)
        if self._file is None:
            return
        try:
            self._file.write(line + "\n")
            self._file.flush()
        except OSError as exc:
            self._fail(exc)  # the session goes on; the UI reports it once

    def _fail(self, exc: OSError) -> None:
        if not self.write_failed:
            self.failure = f"{self.path}: {exc.strerror or exc}"
        self.write_failed = True

    def message(self, message: Message) -> None:
        """One message, with an id (what stream-json prints and ``--resume-at`` takes)."""
        self.last_message_id = uuid.uuid4().hex
        self.write({"type": "message", "id": self.last_message_id, "time": time.time(),
                    "message": message_to_dict(message)})

    def edit(self, tier: str, block: ToolResultBlock) -> None:
        self.write({"type": "edit", "tier": tier, "block": block_to_dict(block)})

    def thinking_cleared(self, before: int) -> None:
        """Thinking dropped from the first ``before`` messages; replayed on resume, so a
        resumed request carries the same history the server signed later thinking for."""
        self.write({"type": "thinking_cleared", "before": before, "time": time.time()})

    def compaction(
        self,
        reason: str,
        summary: str,
        tokens_before: int,
        tokens_after: int,
        messages: Sequence[Message],
    ) -> None:
        self.write(
            {
                "type": "compaction",
                "reason": reason,
                "summary": summary,
                "tokens_before": tokens_before,
                "tokens_after": tokens_after,
                "messages": [message_to_dict(m) for m in messages],
            }
        )

    def range_summary(
        self, start: int, end: int, inserted: int, summary: str, after: Sequence[Message]
    ) -> None:
        """Messages ``start`` to ``end`` were summarized (from a rewind point, by the user):
        the history from ``start`` on is now ``after``; the messages before stay as they were,
        and the summarized ones stay above in this file."""
        self.write({
            "type": "range_summary",
            "time": time.time(),
            "start": start,
            "end": end,
            "inserted": inserted,
            "summary": summary,
            "messages": [message_to_dict(m) for m in after],
        })

    def fold(self, removed: Sequence[int], replaced: Mapping[int, Message]) -> None:
        """Old exchanges were folded to lines: which messages went and which took the lines
        (by position in the history as it stood; the exchanges stay above as they were)."""
        self.write({
            "type": "fold",
            "time": time.time(),
            "removed": list(removed),
            "replaced": {str(i): message_to_dict(m) for i, m in replaced.items()},
        })

    def steering(self, text: str) -> None:
        """The user steered the running turn: ``text`` rode on the newest message (already
        written, so replay needs nothing from this record)."""
        self.write({"type": "steering", "time": time.time(), "message": self.last_message_id,
                    "text": text})

    def event(self, kind: str, **data: Any) -> None:
        self.write({"type": "event", "kind": kind, "time": time.time(), **data})

    def on_close(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` when the transcript is closed (the session lock is let go)."""
        self._closing.append(callback)

    def close(self) -> None:
        while self._closing:
            self._closing.pop()()
        if self._file is None:
            return
        with contextlib.suppress(OSError):
            self._file.close()


def _ends_mid_line(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            if handle.tell() == 0:
                return False
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) != b"\n"
    except OSError:
        return False


def _json_line(record: dict[str, Any]) -> str:
    """One strict JSON line in UTF-8: what any parser (and the APIs, on replay) accepts.

    A lone surrogate (UTF-8 cannot hold it) becomes U+FFFD and a non-finite number
    (JSON has none) becomes null, rather than a line no strict reader can load.
    """
    try:
        line = json.dumps(record, ensure_ascii=False, allow_nan=False)
        line.encode("utf-8")
    except ValueError:  # UnicodeEncodeError included
        return json.dumps(clean_value(record), ensure_ascii=False, allow_nan=False)
    return line


MAX_DAMAGE_WARNINGS = 5  # one line each; past that, one line counts them all


@dataclass(frozen=True, slots=True)
class Landmark:
    """Something that happened between messages (an interruption, a compaction), placed
    after the ``at`` first messages as written, so a resumed session can show it there."""

    at: int
    kind: str  # "interrupted" or "compaction"
    reason: str = ""
    tokens_before: int = 0
    tokens_after: int = 0
    summary: str = ""


def _landmark(record: dict[str, Any], at: int) -> Landmark | None:
    kind = record.get("type")
    if kind == "event" and record.get("kind") == "interrupted":
        return Landmark(at, "interrupted", str(record.get("during", "")))
    if kind == "compaction":
        return Landmark(at, "compaction", str(record.get("reason", "")),
                        int(record.get("tokens_before", 0)), int(record.get("tokens_after", 0)),
                        str(record.get("summary", "")))
    return None


@dataclass
class LoadedSession:
    session_id: str
    meta: dict[str, Any]
    conversation: Conversation
    original_messages: list[Message] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    repair: Message | None = None  # results added for tool calls that never finished
    usage: list[dict[str, Any]] = field(default_factory=list)  # every recorded model call's
    landmarks: list[Landmark] = field(default_factory=list)  # placed in original_messages
    last_prompt: LastPrompt | None = None
    followed: int | None = None  # where the message load_session was asked to follow stands


@dataclass(frozen=True, slots=True)
class LastPrompt:
    """The server's count of the last request, when the history has only grown since: a
    resumed meter starts from it instead of from an estimate of the whole history."""

    tokens: int
    messages: int  # the request carried the first this many messages of the history
    fixed_chars: int  # of its system prompt and tool schemas


def _last_prompt(record: dict[str, Any], messages: list[Message]) -> LastPrompt | None:
    """A main call's usage, written right after its reply was appended."""
    fixed_chars = record.get("fixed_chars")
    if record.get("summary") or not isinstance(fixed_chars, int) or fixed_chars < 0:
        return None
    tokens = Usage.from_record(record).prompt_tokens
    if tokens <= 0 or not messages:
        return None
    return LastPrompt(tokens, len(messages) - 1, fixed_chars)


def _prompt_after(
    record: dict[str, Any], messages: list[Message], last_prompt: LastPrompt | None
) -> LastPrompt | None:
    """The last prompt's size as of this record: a usage report measures it, an edit of the
    history makes it unknown."""
    if record.get("type") == "event" and record.get("kind") == "usage":
        return _last_prompt(record, messages) or last_prompt
    if record.get("type") in HISTORY_EDITS:
        return None
    return last_prompt


def _followed_after(
    record: dict[str, Any], is_followed: bool, followed: int | None,
    before: list[Message], messages: list[Message],
) -> int | None:
    """Where the followed message stands once this record is applied (None: not there)."""
    if is_followed and record.get("type") == "message":
        return len(messages) - 1 if len(messages) > len(before) else None
    if followed is not None:
        return _moved(record, followed, before, messages)
    return followed


def _damage_warning(path: Path, number: int, count: int, exc: Exception) -> str:
    where = "last line" if number == count else f"line {number}"
    why = shorten(str(exc), 120, marker="...")
    return f"transcript {path.name}: {where} is damaged and was skipped ({why})"


def load_session(path: Path, *, follow: int | None = None) -> LoadedSession:
    """Replay a transcript into the conversation as it stood after its last record.

    A torn last line (a crash mid-write) is skipped with a warning; a tool
    call whose result never arrived gets a result saying it was interrupted.
    With ``follow`` (a message's line), ``followed`` says where that message stands
    in the history replayed (None: a later record took it out).
    """
    messages: list[Message] = []
    originals: list[Message] = []
    meta: dict[str, Any] = {}
    warnings: list[str] = []
    usage: list[dict[str, Any]] = []
    last_prompt: LastPrompt | None = None
    records = read_records(path)
    landmarks: list[Landmark] = []
    snapshots: dict[int, Replayed] = {}
    targets = rewind_targets(records)
    followed: int | None = None
    followed_at: dict[int, int | None] = {}  # where it stood at each rewind target
    damaged = 0
    for number, record in enumerate(records, 1):
        if number in targets:  # the history a later rewind goes back to
            snapshots[number] = copy.deepcopy((messages, originals, landmarks))
            followed_at[number] = followed
        if record is None:
            continue
        try:
            if isinstance(record, Damaged):
                raise ValueError(record.reason)
            before = list(messages) if followed is not None else []
            if record.get("type") == "rewind":
                _apply_rewind(record, number, snapshots, (messages, originals, landmarks))
                if record.get("conversation", True):
                    followed = followed_at.get(int(record["to_line"]))
            else:
                _apply(record, messages, originals, meta)
                followed = _followed_after(record, number == follow, followed, before, messages)
            if record.get("type") == "event" and record.get("kind") == "usage":
                usage.append(record)
            last_prompt = _prompt_after(record, messages, last_prompt)
            landmark = _landmark(record, len(originals))
            if landmark is not None:
                landmarks.append(landmark)
        except (ValueError, KeyError, TypeError, IndexError, RecursionError) as exc:
            last_prompt = None  # the damaged line may have edited the history
            damaged += 1
            if damaged <= MAX_DAMAGE_WARNINGS:
                warnings.append(_damage_warning(path, number, len(records), exc))
    if damaged > MAX_DAMAGE_WARNINGS:
        warnings.append(f"transcript {path.name}: {damaged} damaged records skipped in all")
    if repair_pairs(messages):
        warnings.append("tool calls whose records were damaged were paired again: a lost "
                        "result is marked as lost, a result without its call was dropped")
    conversation = Conversation(messages)
    repair = conversation.close_dangling_tool_uses(INTERRUPTED_RESULT)
    if repair is not None:
        warnings.append("the last tool call was interrupted; it was marked as such")
    return LoadedSession(
        session_id=str(meta.get("id", path.stem)),
        meta=meta,
        conversation=conversation,
        original_messages=originals,
        warnings=warnings,
        repair=repair,
        usage=usage,
        landmarks=landmarks,
        last_prompt=last_prompt,
        followed=followed,
    )


@dataclass(frozen=True, slots=True)
class Damaged:
    """A line that is not a JSON object (torn by a crash, or edited by hand)."""

    reason: str


TranscriptLine = dict[str, Any] | Damaged | None  # None: a blank line


def read_records(path: Path) -> list[TranscriptLine]:
    """Every line of a transcript, parsed; line N is item N-1 (a rewind names lines).

    Split on newlines only: a message may hold U+2028 or U+0085, which
    ``str.splitlines`` would take for line ends.
    """
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    records: list[TranscriptLine] = []
    for line in lines:
        if not line.strip():
            records.append(None)
            continue
        try:  # shape and depth checked too: a hand-edited record is skipped, not obeyed
            check_line(line)
            record = check_record(json.loads(line))
        except (ValueError, KeyError, TypeError, IndexError, RecursionError) as exc:
            records.append(Damaged(str(exc)))
            continue
        records.append(record)
    return records


def rewind_targets(records: Sequence[TranscriptLine]) -> set[int]:
    """The line numbers rewinds go back to: the history before each must be kept."""
    targets: set[int] = set()
    for record in records:
        if isinstance(record, dict) and record.get("type") == "rewind" and record.get(
                "conversation", True):
            with contextlib.suppress(KeyError, TypeError, ValueError):
                targets.add(int(record["to_line"]))
    return targets


Replayed = tuple[list[Message], list[Message], list[Landmark]]  # messages, originals, landmarks


def _apply_rewind(
    record: dict[str, Any], number: int, snapshots: dict[int, Replayed], replayed: Replayed
) -> None:
    """The conversation goes back to how it stood before line ``to_line``."""
    if not record.get("conversation", True):
        return  # the code alone was rewound
    target = int(record["to_line"])
    if not 1 <= target <= number or target not in snapshots:
        raise ValueError(f"a rewind names line {target}, which this transcript cannot go back to")
    kept_messages, kept_originals, kept_landmarks = copy.deepcopy(snapshots[target])
    messages, originals, landmarks = replayed
    messages[:] = kept_messages
    originals[:] = kept_originals
    landmarks[:] = kept_landmarks


def _apply(
    record: dict[str, Any], messages: list[Message], originals: list[Message], meta: dict[str, Any]
) -> None:
    replay = RECORD_KINDS[record["type"]].replay if record["type"] in RECORD_KINDS else None
    if replay is not None:
        replay(record, messages, originals, meta)


def _replay_session(record: dict[str, Any], _messages: list[Message],
                    _originals: list[Message], meta: dict[str, Any]) -> None:
    meta.update(record)


def _replay_message(record: dict[str, Any], messages: list[Message], originals: list[Message],
                    _meta: dict[str, Any]) -> None:
    # Cleaned on the way in: a transcript written before a fix (an empty text block,
    # a lone surrogate) still replays into a request the APIs accept.
    data = check_message(record["message"])
    message = clean_message(message_from_dict(data))
    if message.blocks:
        messages.append(message)
        originals.append(clean_message(message_from_dict(data)))


def _replay_edit(record: dict[str, Any], messages: list[Message], _originals: list[Message],
                 _meta: dict[str, Any]) -> None:
    block = clean_block(block_from_dict(check_block(record["block"])))
    if not isinstance(block, ToolResultBlock):
        raise ValueError("an edit of a block that is not a tool result")
    _replace_result(messages, block)


def _replay_fold(record: dict[str, Any], messages: list[Message], _originals: list[Message],
                 _meta: dict[str, Any]) -> None:
    _apply_fold(messages, record["removed"], record["replaced"])


def _replay_compaction(record: dict[str, Any], messages: list[Message],
                       _originals: list[Message], _meta: dict[str, Any]) -> None:
    rebuilt = [clean_message(message_from_dict(check_message(m))) for m in record["messages"]]
    messages[:] = [m for m in rebuilt if m.blocks]


def _replay_range_summary(record: dict[str, Any], messages: list[Message],
                          _originals: list[Message], _meta: dict[str, Any]) -> None:
    start = int(record["start"])
    if not 0 <= start <= int(record["end"]) <= len(messages):
        raise ValueError("a summary names messages this history does not have")
    after = [clean_message(message_from_dict(check_message(m))) for m in record["messages"]]
    messages[start:] = [m for m in after if m.blocks]


def _replay_thinking_cleared(record: dict[str, Any], messages: list[Message],
                             _originals: list[Message], _meta: dict[str, Any]) -> None:
    strip_thinking(messages, int(record["before"]))


Replay = Callable[[dict[str, Any], list[Message], list[Message], dict[str, Any]], None]
# Where a message at a position before the record stands after it (None: it went), given
# the history before and after the record.
Move = Callable[[dict[str, Any], int, list[Message], list[Message]], int | None]


def _moved_by_fold(record: dict[str, Any], position: int, _before: list[Message],
                   _after: list[Message]) -> int | None:
    removed = {int(i) for i in record["removed"]}
    return None if position in removed else position - sum(1 for i in removed if i < position)


def _moved_by_compaction(_record: dict[str, Any], position: int, before: list[Message],
                         after: list[Message]) -> int | None:
    """The kept tail is the end of the history before, as many messages long: a message in
    it is as far from the end as it was (and still says what it said)."""
    moved = len(after) - (len(before) - position)
    if moved < 1 or after[moved].role != before[position].role or (
            after[moved].text != before[position].text):
        return None
    return moved


def _moved_by_range_summary(record: dict[str, Any], position: int, _before: list[Message],
                            _after: list[Message]) -> int | None:
    start, end = int(record["start"]), int(record["end"])
    if position < start:
        return position
    if position < end:
        return None
    return position - end + start + int(record["inserted"])


@dataclass(frozen=True, slots=True)
class RecordKind:
    """What a kind of record does on replay: ``replay`` rebuilds the history from it (None:
    it changes no message); ``edits_history`` when it changes messages already there;
    ``moves`` where a message already there stands after it (None: where it was)."""

    replay: Replay | None = None
    edits_history: bool = False
    moves: Move | None = None


# Every kind of record a transcript holds. ``Transcript.write`` refuses any other, so a new
# kind is replayed (or declared inert) here before a transcript can hold it.
RECORD_KINDS: dict[str, RecordKind] = {
    "session": RecordKind(_replay_session),
    "message": RecordKind(_replay_message),
    "edit": RecordKind(_replay_edit, edits_history=True),
    "fold": RecordKind(_replay_fold, edits_history=True, moves=_moved_by_fold),
    "compaction": RecordKind(_replay_compaction, edits_history=True,
                             moves=_moved_by_compaction),
    # Part of the history summarized from a rewind point; the rest kept as it was.
    "range_summary": RecordKind(_replay_range_summary, edits_history=True,
                                moves=_moved_by_range_summary),
    "thinking_cleared": RecordKind(_replay_thinking_cleared, edits_history=True),
    "rewind": RecordKind(edits_history=True),  # load_session replays it from its snapshots
    "event": RecordKind(),
    "checkpoint": RecordKind(),
    "steering": RecordKind(),  # a message sent during a turn; its message record holds it too
}
# Records that change messages already in the history.
HISTORY_EDITS = frozenset(kind for kind, spec in RECORD_KINDS.items() if spec.edits_history)


def _moved(record: dict[str, Any], position: int, before: list[Message],
           after: list[Message]) -> int | None:
    kind = RECORD_KINDS.get(str(record.get("type")))
    if kind is None or kind.moves is None:
        return position
    return kind.moves(record, position, before, after)


def _apply_fold(messages: list[Message], removed: list[int], replaced: dict[str, Any]) -> None:
    positions = [*map(int, removed), *map(int, replaced)]
    if any(not 0 <= i < len(messages) for i in positions):
        raise ValueError("a fold names a message this history does not have")
    for key, data in replaced.items():
        messages[int(key)] = clean_message(message_from_dict(check_message(data)))
    for index in sorted(map(int, removed), reverse=True):
        del messages[index]


def _replace_result(messages: list[Message], new: ToolResultBlock) -> None:
    for message in reversed(messages):
        for i, block in enumerate(message.blocks):
            if isinstance(block, ToolResultBlock) and block.tool_use_id == new.tool_use_id:
                message.blocks[i] = new
                return


@dataclass(frozen=True)
class SessionInfo:
    session_id: str
    path: Path
    cwd: str
    modified: float
    first_prompt: str
    forked_from: str = ""  # the session this one was forked from (--fork-session)


def list_sessions(directory: Path, cwd: Path | None = None) -> list[SessionInfo]:
    """Sessions newest first, optionally only those started in ``cwd``."""
    if not directory.is_dir():
        return []
    found: list[SessionInfo] = []
    for path in directory.glob("*.jsonl"):
        info = _peek(path)
        if info and (cwd is None or info.cwd == str(cwd)):
            found.append(info)
    found.sort(key=lambda s: s.modified, reverse=True)
    return found


PEEK_LINES = 200  # records read to find a session's first prompt


def _peek(path: Path) -> SessionInfo | None:
    """Read just enough of a transcript to list it; None for one that never got a message."""
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            head = read_record(handle.readline())
            if head is None:
                return None
            first_prompt = ""
            has_messages = False
            for _ in range(PEEK_LINES):
                line = handle.readline()
                if not line:
                    break
                record = read_record(line)
                if record is None:
                    continue  # a damaged record; load_session skips it with a warning
                has_messages = has_messages or record.get("type") == "message"
                if record.get("type") == "message" and record["message"]["role"] == "user":
                    texts = [
                        b.get("text", "")
                        for b in record["message"]["blocks"]
                        if b.get("kind") == "text"
                    ]
                    if texts:
                        first_prompt = texts[0][:80]
                        break
        if not has_messages:
            return None  # started and left at once: nothing to resume
        return SessionInfo(
            str(head.get("id", path.stem)),
            path,
            str(head.get("cwd", "")),
            path.stat().st_mtime,
            first_prompt,
            str(head.get("forked_from") or ""),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def fork_transcript(origin: Path, directory: Path, session_id: str) -> Path:
    """A new session holding the origin's whole record, line for line; the origin is only read.

    The first line (the session record) names the new id and where it came from; every
    other line is copied as it is, so line numbers (what rewinds name) stay the same.
    """
    data = origin.read_bytes()
    first, _, rest = data.partition(b"\n")
    try:
        head = json.loads(first)
    except ValueError:
        head = {}
    if not isinstance(head, dict):
        head = {}
    head.update({"type": "session", "id": session_id, "created": time.time(),
                 "forked_from": str(head.get("id") or origin.stem)})
    ensure_private_dir(directory)
    path = directory / f"{session_id}.jsonl"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(_json_line(head).encode("utf-8") + b"\n" + rest)
        if rest and not rest.endswith(b"\n"):
            handle.write(b"\n")
    return path
