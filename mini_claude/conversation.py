"""The provider-neutral conversation: value types for blocks and the invariants.

Every other module speaks this model; only ``providers/`` knows a wire format.
Blocks are immutable; a tier that edits history swaps a block for a new one
through :meth:`Conversation.replace_result`, which enforces monotone edits.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields
from enum import IntEnum
from typing import Any, Literal, get_args, get_type_hints

Role = Literal["user", "assistant"]

INTERRUPTED_RESULT = "[interrupted: the tool did not finish; no result was recorded]"
THINKING_CLEARED = "(thinking cleared)"
LOST_RESULT = "[the result of this tool call was lost from the saved session; it is unknown]"
LOST_MESSAGES = "[the start of this saved session could not be read]"


class ResultState(IntEnum):
    """How much of a tool result is still in context. Only ever increases."""

    FULL = 0
    BUDGETED = 1  # cut to head + tail
    CLEARED = 2  # replaced by a placeholder


@dataclass(frozen=True, slots=True)
class TextBlock:
    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ToolUseBlock:
    id: str
    name: str
    input: dict[str, Any]
    kind: Literal["tool_use"] = "tool_use"


@dataclass(frozen=True, slots=True)
class ToolResultBlock:
    """A tool's answer plus the metadata that survives clearing.

    ``tool_name`` and ``target`` (the main argument: a path, pattern or
    command) let a placeholder say what was there; ``saved_path`` says where
    the full text lives on disk once it has left the context.
    """

    tool_use_id: str
    content: str
    is_error: bool = False
    tool_name: str = ""
    target: str = ""
    original_chars: int = 0
    original_lines: int = 0
    saved_path: str | None = None
    state: ResultState = ResultState.FULL
    kind: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True, slots=True)
class SummaryBlock:
    """The boundary left by a compaction: the summary and where the full history is."""

    summary: str
    transcript_path: str = ""
    compacted_messages: int = 0
    kind: Literal["summary"] = "summary"

    def render(self) -> str:
        where = (
            f" The full transcript is at {self.transcript_path}." if self.transcript_path else ""
        )
        if where:
            where += (
                " search_history searches it and the saved tool results for anything the"
                " summary left out."
            )
        return (
            "[This session was compacted: earlier messages were replaced by the summary below."
            f"{where}]\n\n{self.summary}"
        )


@dataclass(frozen=True, slots=True)
class ThinkingBlock:
    """The model's reasoning, kept exactly as received: the API checks the signature
    (and, on newer models, that nothing before the block changed) when it comes back."""

    thinking: str
    signature: str
    kind: Literal["thinking"] = "thinking"


@dataclass(frozen=True, slots=True)
class RedactedThinkingBlock:
    """Reasoning the API returned encrypted; sent back unchanged like a thinking block."""

    data: str
    kind: Literal["redacted_thinking"] = "redacted_thinking"


@dataclass(frozen=True, slots=True)
class ImageBlock:
    """An image the model sees: base64 data within the APIs' limits, and what it was.

    ``tokens`` is what the provider charges for it (computed when the image was
    loaded, by the provider's formula); ``name`` and ``original_bytes`` let a
    placeholder say which image stood here once the data is gone.
    """

    media_type: str
    data: str  # base64
    width: int
    height: int
    name: str
    original_bytes: int
    tokens: int
    kind: Literal["image"] = "image"

    def placeholder(self) -> str:
        """What stands in for the image where no image may go (a summary request)."""
        return (
            f"[image {self.name}: {self.width}×{self.height}, {self.original_bytes:,} bytes; "
            "not included here]"
        )


Block = (
    TextBlock | ToolUseBlock | ToolResultBlock | SummaryBlock | ThinkingBlock
    | RedactedThinkingBlock | ImageBlock
)
# Characters an image counts for in the character-based estimate, per token it costs.
IMAGE_CHARS_PER_TOKEN = 4
THINKING_BLOCKS = (ThinkingBlock, RedactedThinkingBlock)


@dataclass(slots=True)
class Message:
    role: Role
    blocks: list[Block] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.blocks if isinstance(b, TextBlock))

    @property
    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.blocks if isinstance(b, ToolUseBlock)]

    @property
    def tool_results(self) -> list[ToolResultBlock]:
        return [b for b in self.blocks if isinstance(b, ToolResultBlock)]

    @property
    def is_tool_result_message(self) -> bool:
        return bool(self.blocks) and all(isinstance(b, ToolResultBlock) for b in self.blocks)

    @property
    def is_plain_user_message(self) -> bool:
        """A message the user typed (not tool results, not a summary boundary)."""
        return (
            self.role == "user"
            and any(isinstance(b, TextBlock) for b in self.blocks)
            and not any(isinstance(b, ToolResultBlock | SummaryBlock) for b in self.blocks)
        )


def user_text(text: str) -> Message:
    return Message("user", [TextBlock(text)])


def block_chars(block: Block) -> int:
    """Characters a block contributes to a request; the unit of the token estimate."""
    if isinstance(block, TextBlock):
        return len(block.text)
    if isinstance(block, ToolUseBlock):
        return len(block.name) + len(json.dumps(block.input, ensure_ascii=False)) + len(block.id)
    if isinstance(block, ToolResultBlock):
        return len(block.content) + len(block.tool_use_id)
    if isinstance(block, ThinkingBlock):
        return len(block.thinking)
    if isinstance(block, RedactedThinkingBlock):
        return len(block.data) // 2  # opaque; roughly the reasoning it stands for
    if isinstance(block, ImageBlock):
        return block.tokens * IMAGE_CHARS_PER_TOKEN  # priced by size, not by its base64
    return len(block.render())


def message_chars(message: Message) -> int:
    return sum(block_chars(b) for b in message.blocks)


@dataclass(frozen=True, slots=True)
class ResultRef:
    """Where a tool result sits, so tiers can find it without scanning history."""

    message_index: int
    block_index: int
    tool_use_id: str


class EditError(ValueError):
    """An edit would break an invariant (grow a result, un-clear one, split a pair)."""


class Conversation:
    """An ordered list of messages plus a running character count and a result index.

    The index and count are maintained on every append and edit so that a
    pipeline pass costs what was appended since the last pass, not the
    length of the whole history.
    """

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self.messages: list[Message] = []
        self.total_chars = 0
        self.results: list[ResultRef] = []
        self.version = 0  # bumped on every change; cheap change detection
        self.epoch = 0  # bumped when history is rebuilt; incremental indexes start over
        # Called with every edited block, so the transcript can record tier edits.
        self.on_replace: Callable[[ToolResultBlock], None] | None = None
        for m in messages:
            self.append(m)

    def __len__(self) -> int:
        return len(self.messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages)

    def append(self, message: Message) -> None:
        index = len(self.messages)
        self.messages.append(message)
        self.total_chars += message_chars(message)
        for bi, block in enumerate(message.blocks):
            if isinstance(block, ToolResultBlock):
                self.results.append(ResultRef(index, bi, block.tool_use_id))
        self.version += 1

    def replace_all(self, messages: Sequence[Message]) -> None:
        """Rebuild after a compaction."""
        self.epoch += 1
        self.messages = []
        self.total_chars = 0
        self.results = []
        for m in messages:
            self.append(m)

    def result_at(self, ref: ResultRef) -> ToolResultBlock:
        block = self.messages[ref.message_index].blocks[ref.block_index]
        assert isinstance(block, ToolResultBlock)
        return block

    def tool_use_for(self, ref: ResultRef) -> ToolUseBlock | None:
        """The tool_use this result answers (in the message before)."""
        if ref.message_index == 0:
            return None
        for block in self.messages[ref.message_index - 1].blocks:
            if isinstance(block, ToolUseBlock) and block.id == ref.tool_use_id:
                return block
        return None

    def replace_result(self, ref: ResultRef, new: ToolResultBlock) -> int:
        """Swap a tool result for a smaller or more-cleared one; returns chars freed."""
        old = self.result_at(ref)
        if new.tool_use_id != old.tool_use_id:
            raise EditError("a replacement must answer the same tool_use")
        if new.state < old.state:
            raise EditError("a cleared result cannot come back")
        if len(new.content) > len(old.content):
            raise EditError("an edit may not grow a result")
        self.messages[ref.message_index].blocks[ref.block_index] = new
        freed = len(old.content) - len(new.content)
        self.total_chars -= freed
        self.version += 1
        if self.on_replace is not None:
            self.on_replace(new)
        return freed

    @property
    def last(self) -> Message | None:
        return self.messages[-1] if self.messages else None

    def pending_tool_uses(self) -> list[ToolUseBlock]:
        """tool_use blocks of the last assistant message that have no result yet."""
        if not self.messages or self.messages[-1].role != "assistant":
            return []
        return self.messages[-1].tool_uses

    def drop_thinking(self, before: int | None = None) -> int:
        """Remove thinking blocks from the messages before ``before`` (all by default);
        returns the characters freed. Only assistant messages hold thinking, so the
        result index stays valid; a message of thinking alone keeps a short note."""
        freed = strip_thinking(self.messages, before)
        if freed:
            self.total_chars -= freed
            self.version += 1
        return freed

    def close_dangling_tool_uses(self, note: str = INTERRUPTED_RESULT) -> Message | None:
        """Give every unanswered tool_use a result so the history stays valid."""
        pending = self.pending_tool_uses()
        if not pending:
            return None
        message = Message(
            "user",
            [
                ToolResultBlock(u.id, note, is_error=True, tool_name=u.name, target=target_of(u))
                for u in pending
            ],
        )
        self.append(message)
        return message


def repair_pairs(messages: list[Message]) -> int:
    """Pair every tool call with its result again after records were lost; the fixes made.

    A damaged transcript line can take a tool call's result (or the call) with it: each call
    before the last message gets a result saying it was lost, a result with no call before
    it is dropped, and a history that opens with the model gets a first user message, so a
    resumed request is one the APIs accept. The last message's open calls are left to
    :meth:`Conversation.close_dangling_tool_uses`, which records its answer.
    """
    fixes = 0
    if messages and messages[0].role != "user":
        messages.insert(0, user_text(LOST_MESSAGES))
        fixes += 1
    repaired: list[Message] = []
    for message in messages:
        previous = repaired[-1] if repaired else None
        asked = previous.tool_uses if previous is not None and previous.role == "assistant" else []
        fixed = _answer(message, asked)
        if fixed is not message:
            fixes += 1
        if asked and fixed.role != "user":
            repaired.append(_answer(Message("user"), asked))
            fixes += 1
        if fixed.blocks:
            repaired.append(fixed)
    messages[:] = repaired
    return fixes


def _answer(message: Message, asked: Sequence[ToolUseBlock]) -> Message:
    """``message`` holding a result for each call in ``asked`` and no other results."""
    if message.role != "user":
        return message
    ids = {u.id for u in asked}
    results: list[ToolResultBlock] = []
    answered: set[str] = set()
    for result in message.tool_results:  # a result written twice: the first one stands
        if result.tool_use_id in ids and result.tool_use_id not in answered:
            results.append(result)
            answered.add(result.tool_use_id)
    lost = [ToolResultBlock(u.id, LOST_RESULT, is_error=True, tool_name=u.name,
                            target=target_of(u)) for u in asked if u.id not in answered]
    others = [b for b in message.blocks if not isinstance(b, ToolResultBlock)]
    if not lost and len(results) == len(message.tool_results):
        return message
    return Message("user", [*results, *lost, *others])


def strip_thinking(messages: Sequence[Message], before: int | None = None) -> int:
    """Remove thinking blocks in place from ``messages[:before]``; returns chars freed."""
    end = len(messages) if before is None else before
    freed = 0
    for message in messages[:end]:
        kept = [b for b in message.blocks if not isinstance(b, THINKING_BLOCKS)]
        if len(kept) == len(message.blocks):
            continue
        kept = kept or [TextBlock(THINKING_CLEARED)]
        freed += sum(block_chars(b) for b in message.blocks) - sum(block_chars(b) for b in kept)
        message.blocks[:] = kept
    return freed


def target_of(use: ToolUseBlock) -> str:
    """The argument that identifies what a tool call was about."""
    for key in ("path", "command", "pattern", "focus", "query", "description"):
        value = use.input.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def validate(messages: Sequence[Message]) -> list[str]:
    """Problems the real APIs would reject (empty list when valid).

    Same rules as the simulator's validator: first message from the user,
    every tool_use answered in the very next message, every tool_result
    answering a tool_use of the message before, no empty content.
    """
    problems: list[str] = []
    if messages and messages[0].role != "user":
        problems.append("the first message must come from the user")
    for i, m in enumerate(messages):
        if not m.blocks:
            problems.append(f"message {i} has no content")
            continue
        if any(isinstance(b, TextBlock) and not b.text.strip() for b in m.blocks):
            problems.append(f"message {i} has an empty text block")
        uses = {u.id for u in m.tool_uses}
        if uses:
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            answered = {r.tool_use_id for r in nxt.tool_results} if nxt else set()
            missing = uses - answered
            if missing:
                problems.append(
                    f"message {i}: tool_use without a result right after: {sorted(missing)}"
                )
        if m.tool_results:
            prev = messages[i - 1] if i > 0 else None
            asked = {u.id for u in prev.tool_uses} if prev and prev.role == "assistant" else set()
            orphans = {r.tool_use_id for r in m.tool_results} - asked
            if orphans:
                problems.append(
                    f"message {i}: tool_result with no tool_use before: {sorted(orphans)}"
                )
    return problems


# ---- serialization (transcripts) -------------------------------------------------

def _kind_of(cls: type[Any]) -> str:
    """The ``kind`` a block class writes (its field's default): the name it is read back by."""
    kind = next(f.default for f in fields(cls) if f.name == "kind")
    assert isinstance(kind, str)
    return kind


# Every block kind, keyed by the kind each class writes: derived from ``Block`` itself, so a
# block added to the union is written, read and checked (``transcript_check``) with no list
# to update.
BLOCK_TYPES: dict[str, type[Any]] = {_kind_of(cls): cls for cls in get_args(Block)}


def block_to_dict(block: Block) -> dict[str, Any]:
    data = asdict(block)
    for name, value in data.items():
        if isinstance(value, IntEnum):
            data[name] = int(value)
    return data


def block_from_dict(data: dict[str, Any]) -> Block:
    cls = BLOCK_TYPES[data["kind"]]
    values = {k: v for k, v in data.items() if k != "kind"}
    for name, enum in _enum_fields(cls).items():
        if name in values:
            values[name] = enum(int(values[name]))
    return cls(**values)  # type: ignore[no-any-return]


def _enum_fields(cls: type[Any]) -> dict[str, type[IntEnum]]:
    """The fields of a block class that hold an IntEnum (written as its number)."""
    hints = get_type_hints(cls)
    return {name: hint for name, hint in hints.items()
            if isinstance(hint, type) and issubclass(hint, IntEnum)}


def message_to_dict(message: Message) -> dict[str, Any]:
    return {"role": message.role, "blocks": [block_to_dict(b) for b in message.blocks]}


def message_from_dict(data: dict[str, Any]) -> Message:
    return Message(data["role"], [block_from_dict(b) for b in data["blocks"]])
