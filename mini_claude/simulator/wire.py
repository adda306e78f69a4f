"""What both wire formats share: the parsed request, prompt units, errors, the completion."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mini_claude.simulator.tokens import (
    BLOCK_OVERHEAD,
    MESSAGE_OVERHEAD,
    TokenCounter,
    canonical_json,
    digest,
)
from mini_claude.simulator.types import PromptUnit, SimBlock, SimConversation, SimMessage

if TYPE_CHECKING:
    from mini_claude.simulator.diagnostics import PrefixFingerprint
    from mini_claude.simulator.thinking import ThinkingMode


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def parse_strict_json(raw: bytes) -> Any:
    """A request body as the real APIs parse it; ValueError for what they refuse.

    Python's own parser is lenient where the APIs' are not: it takes ``NaN`` and
    ``Infinity``, bytes that are not UTF-8, and escaped lone surrogates (``"\\ud800"``).
    """
    body = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    if _SURROGATE_ESCAPE.search(raw) and _has_lone_surrogate(body):
        raise ValueError("lone surrogate in a string")
    return body


@dataclass(slots=True)
class ParsedRequest:
    conversation: SimConversation
    units: list[PromptUnit]
    stream: bool
    include_usage: bool = True
    prefix: PrefixFingerprint | None = None  # for cache diagnostics (Anthropic only)
    thinking: ThinkingMode | None = None  # Anthropic thinking, when the request enables it
    thinking_prefix: bytes = b""  # what a reply's opening thinking block is bound to
    reasoning_effort: str | None = None  # OpenAI reasoning models

    @property
    def prompt_tokens(self) -> int:
        return sum(u.tokens for u in self.units)

    @property
    def fingerprint(self) -> bytes:
        """Same prompt, same fingerprint: a retried request finds the reply kept for it."""
        h = hashlib.blake2b(digest_size=16)
        for unit in self.units:
            h.update(unit.key)
        return h.digest()


class UnitBuilder:
    """Turns prompt pieces into units, tokenizing each distinct piece once."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.units: list[PromptUnit] = []

    def add(
        self,
        piece: Any,
        text: str,
        *,
        label: str,
        overhead: int = BLOCK_OVERHEAD,
        ttl: float | None = None,
    ) -> None:
        """``piece`` identifies the content; ``text`` is what gets tokenized."""
        identity = digest(canonical_json(piece)) if not isinstance(piece, str) else digest(piece)
        tokens = self.counter.count_memoized(identity, lambda: text)
        key = digest(label) + identity
        self.units.append(PromptUnit(key, tokens + overhead, ttl))

    def add_message_block(
        self, role: str, first: bool, piece: Any, text: str, ttl: float | None = None
    ) -> None:
        """A message's first block also carries the message's own framing cost."""
        overhead = BLOCK_OVERHEAD + (MESSAGE_OVERHEAD if first else 0)
        label = f"{role}:{'first' if first else 'next'}"
        self.add(piece, text, label=label, overhead=overhead, ttl=ttl)


def merge_same_role(messages: list[SimMessage]) -> list[SimMessage]:
    """Consecutive messages of one role become one, as the real APIs treat them."""
    merged: list[SimMessage] = []
    for message in messages:
        if merged and merged[-1].role == message.role:
            blocks: list[SimBlock] = [*merged[-1].blocks, *message.blocks]
            merged[-1] = SimMessage(message.role, blocks)
        else:
            merged.append(message)
    return merged


@dataclass(frozen=True, slots=True)
class OutgoingCall:
    id: str
    name: str
    input: dict[str, Any]
    arguments: str  # the exact JSON text sent (malformed when a test asks for it)


@dataclass(slots=True)
class Usage:
    prompt_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def uncached_input(self) -> int:
        return self.prompt_tokens - self.cache_read_tokens - self.cache_write_tokens


@dataclass(slots=True)
class Completion:
    """A reply made concrete: ids assigned, arguments serialized, usage counted."""

    message_id: str
    model: str
    text: str
    calls: list[OutgoingCall] = field(default_factory=list)
    stop_reason: str = "end_turn"  # Anthropic's vocabulary; OpenAI maps it
    usage: Usage | None = None
    empty_text_block: bool = False
    diagnostics: dict[str, Any] | None = None  # Anthropic's ``diagnostics`` object
    thinking: dict[str, Any] | None = None  # the reply's opening thinking block (Anthropic)
    reasoning_tokens: int = 0  # part of the output (OpenAI reasoning models)


@dataclass(slots=True)
class FramePlan:
    """A stream as frames, with the points where a fault may cut it."""

    frames: list[bytes]
    after_some_text: int  # frames to send before a cut "after text"
    inside_tool_call: int | None  # frames to send before a cut inside a tool call's JSON


def wire_json(data: Any) -> str:
    """JSON for a stream frame; text with lone surrogates goes out as ``\\ud800`` escapes,
    as a real server's JSON encoder sends a model's broken output."""
    text = json.dumps(data, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data)
    return text


def split_text(text: str, pieces: int = 8, min_size: int = 12) -> list[str]:
    """Cut text into a few stream deltas on word boundaries where possible."""
    if not text:
        return []
    size = max(min_size, -(-len(text) // max(1, pieces)))
    chunks: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            space = text.rfind(" ", start + 1, end)
            if space > start:
                end = space
        chunks.append(text[start:end])
        start = end
    return chunks


def split_arguments(arguments: str, pieces: int = 3) -> list[str]:
    """Tool-call JSON arrives in several pieces, as from a real model."""
    if not arguments:
        return [""]
    size = max(1, -(-len(arguments) // pieces))
    return [arguments[i : i + size] for i in range(0, len(arguments), size)]
