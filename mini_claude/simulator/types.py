"""Value types shared by the wire formats, the policies and the server.

A policy sees one :class:`SimConversation` whatever the protocol, and answers
with a :class:`Reply`; each wire module turns that reply into its own format.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from mini_claude.prompts import NOTES_LINE, SUMMARY_HEADING

Protocol_ = Literal["anthropic", "openai"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    input: dict[str, Any]
    id: str | None = None  # generated (toolu_... / call_...) when None


@dataclass(frozen=True, slots=True)
class Reply:
    """What the model says: text, then tool calls.

    ``raw_arguments`` maps a tool call's index to the exact argument text to
    send instead of its JSON input, so a test can deliver malformed JSON.
    """

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    stop_reason: str | None = None
    raw_arguments: dict[int, str] | None = None
    thinking: str | None = None  # the reasoning shown when the request enables thinking
    redacted_thinking: bool = False  # send it as an encrypted redacted_thinking block
    # Anthropic only: send the empty text as a block of its own (``{"type": "text", "text": ""}``),
    # as the real API sometimes does for an empty reply.
    empty_text_block: bool = False


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ToolUsePart:
    id: str
    name: str
    input: dict[str, Any]
    type: Literal["tool_use"] = "tool_use"


@dataclass(frozen=True, slots=True)
class ToolResultPart:
    tool_use_id: str
    content: str
    is_error: bool = False
    type: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image the request carried, as the server measured it."""

    media_type: str
    width: int
    height: int
    tokens: int
    type: Literal["image"] = "image"


SimBlock = TextPart | ToolUsePart | ToolResultPart | ImagePart


@dataclass(frozen=True, slots=True)
class SimMessage:
    role: Literal["user", "assistant"]
    blocks: list[SimBlock]

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.blocks if isinstance(b, TextPart))

    @property
    def tool_uses(self) -> list[ToolUsePart]:
        return [b for b in self.blocks if isinstance(b, ToolUsePart)]

    @property
    def tool_results(self) -> list[ToolResultPart]:
        return [b for b in self.blocks if isinstance(b, ToolResultPart)]

    @property
    def images(self) -> list[ImagePart]:
        return [b for b in self.blocks if isinstance(b, ImagePart)]

    @property
    def is_plain_user_message(self) -> bool:
        """Typed by the user: text and no tool results."""
        return self.role == "user" and not self.tool_results and bool(self.text.strip())


@dataclass(slots=True)
class SimConversation:
    """One request as a policy sees it, the same for both protocols.

    Consecutive messages of one role are merged (OpenAI ``tool`` messages
    become one user message of tool results), so policies need no protocol
    knowledge.
    """

    protocol: Protocol_
    model: str
    system: str
    messages: list[SimMessage]
    tool_names: list[str] = field(default_factory=list)
    tool_schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    tool_choice_none: bool = False
    request_index: int = 0
    max_tokens: int | None = None

    @property
    def last_user_text(self) -> str:
        for message in reversed(self.messages):
            if message.role == "user":
                return message.text
        return ""

    @property
    def is_summary_request(self) -> bool:
        if not self.messages or self.messages[-1].role != "user":
            return False
        return self.messages[-1].text.lstrip().startswith(SUMMARY_HEADING)

    @property
    def is_notes_request(self) -> bool:
        """A summary asked for as background session notes, not for a compaction."""
        return self.is_summary_request and NOTES_LINE in self.messages[-1].text

    def tool_results(self) -> list[ToolResultPart]:
        return [r for m in self.messages for r in m.tool_results]

    def last_tool_results(self) -> list[ToolResultPart]:
        """Results in the last message, when it answers tool calls."""
        if not self.messages or self.messages[-1].role != "user":
            return []
        return self.messages[-1].tool_results

    def tool_uses(self) -> list[ToolUsePart]:
        return [u for m in self.messages for u in m.tool_uses]

    def tool_use_for(self, tool_use_id: str) -> ToolUsePart | None:
        for use in self.tool_uses():
            if use.id == tool_use_id:
                return use
        return None

    def current_turn(self) -> list[SimMessage]:
        """Messages since the last plain user message (inclusive)."""
        for index in range(len(self.messages) - 1, -1, -1):
            if self.messages[index].is_plain_user_message:
                return self.messages[index:]
        return list(self.messages)


class Policy(Protocol):
    """Decides what the model answers. Summary requests are answered by the server (a policy
    may also define ``is_summary_request(conv)`` to name requests that are summaries in its
    own product's words, and ``handles_summary_requests`` to answer them itself)."""

    def respond(self, conv: SimConversation) -> Reply: ...


Step = Reply | Callable[[SimConversation], Reply]


@dataclass(slots=True)
class RecordedRequest:
    """One request as it arrived and how it was answered; filled in as the answer is made."""

    protocol: Protocol_
    path: str
    headers: dict[str, str]
    body: Any
    stream: bool = False
    prompt_tokens: int = 0
    status: int = 0
    usage: dict[str, Any] | None = None
    is_summary_request: bool = False  # a compaction's summary (notes updates not included)
    is_notes_request: bool = False  # a background session-notes update
    error: str | None = None
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    fault: str | None = None
    reply: Reply | None = None
    conversation: SimConversation | None = None
    cache_miss: dict[str, Any] | None = None  # the ``cache_miss_reason`` the answer carried
    # Real (monotonic) times it arrived and its answer began, to see what ran side by side.
    received_at: float = field(default_factory=time.monotonic)
    answered_at: float | None = None

    @property
    def is_side_request(self) -> bool:
        """A summary or a notes update: not one of the conversation's own calls."""
        return self.is_summary_request or self.is_notes_request


class WireError(Exception):
    """A request the real API would refuse; carries what the error body needs."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        error_type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.error_type = error_type
        self.param = param
        self.code = code


@dataclass(frozen=True, slots=True)
class PromptUnit:
    """One block of the prompt in cache order: its identity, its tokens, its breakpoint."""

    key: bytes
    tokens: int
    breakpoint_ttl: float | None = None
