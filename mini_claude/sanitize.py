"""Content that enters the conversation is made replayable here, in one provider-neutral place.

Whatever a model, a tool, a file or the user sends must come back out as a request
that both real APIs accept, and as transcript lines that a strict JSON parser reads.
So: no empty or whitespace-only text blocks, no lone surrogates (UTF-8 cannot carry
them; a split pair is joined), and no non-finite numbers (JSON has none).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

from mini_claude.conversation import (
    Block,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

REPLACEMENT = "\ufffd"
EMPTY_REPLY_NOTICE = "the model sent an empty reply"


def clean_text(text: str) -> str:
    """The text with surrogate pairs joined and lone surrogates replaced by U+FFFD.

    Streamed JSON can split one emoji into ``"\\ud83d"`` and ``"\\ude00"`` in two
    deltas; joined they are one valid character, alone they are unencodable.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def decode_bytes(data: bytes) -> str:
    """Bytes from stdin, a file or a process as text; undecodable bytes become U+FFFD."""
    return data.decode("utf-8", errors="replace")


def has_non_finite(value: Any) -> bool:
    """True when a parsed JSON value holds inf or nan (from ``1e999``, ``NaN``, ``-Infinity``)."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(has_non_finite(v) for v in value.values())
    if isinstance(value, list):
        return any(has_non_finite(v) for v in value)
    return False


def clean_value(value: Any) -> Any:
    """A JSON value with every string (keys too) cleaned; the same object when nothing changed."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        changed = False
        cleaned: dict[str, Any] = {}
        for key, item in value.items():
            new_key, new_item = clean_text(key), clean_value(item)
            changed = changed or new_key is not key or new_item is not item
            cleaned[new_key] = new_item
        return cleaned if changed else value
    if isinstance(value, list):
        items = [clean_value(v) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, float) and not math.isfinite(value):
        return None  # never reached for tool input (refused when parsed); a last resort
    return value


def clean_block(block: Block) -> Block | None:
    """The block made sendable, or None when nothing sendable is left (blank text)."""
    if isinstance(block, TextBlock):
        text = clean_text(block.text)
        if not text.strip():
            return None
        return block if text is block.text else replace(block, text=text)
    if isinstance(block, ToolResultBlock):
        content = clean_text(block.content)
        target = clean_text(block.target)
        if content is block.content and target is block.target:
            return block
        return replace(block, content=content, target=target)
    if isinstance(block, ToolUseBlock):
        cleaned = clean_value(block.input)
        name = clean_text(block.name)
        if cleaned is block.input and name is block.name:
            return block
        return replace(block, input=cleaned, name=name)
    if isinstance(block, ThinkingBlock | RedactedThinkingBlock | ImageBlock):
        return block  # sent back exactly as received: the API checks its signature
    summary = clean_text(block.summary)
    return block if summary is block.summary else replace(block, summary=summary)


def clean_message(message: Message) -> Message:
    """The message with every block cleaned and blank text dropped (it may end up empty).

    Returns the same object when nothing changed, so callers can tell.
    """
    blocks: list[Block] = []
    for block in message.blocks:
        cleaned = clean_block(block)
        if cleaned is not None:
            blocks.append(cleaned)
    if len(blocks) == len(message.blocks) and all(
        a is b for a, b in zip(blocks, message.blocks, strict=True)
    ):
        return message
    return Message(message.role, blocks)


def strict_json_dumps(value: Any) -> str:
    """JSON text that any strict parser reads: refuses NaN/Infinity rather than writing them."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def strict_json_loads(text: str) -> Any:
    """Parse JSON as the real APIs do: ``NaN`` and ``Infinity`` are errors."""
    return json.loads(text, parse_constant=_refuse_constant)


class SurrogateHold:
    """Deltas for the screen, never with half a surrogate pair in them.

    A stream may split one character's pair across two deltas; the high half waits
    for the next delta, and whatever stays unpaired becomes U+FFFD.
    """

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, text: str) -> str:
        text = self._pending + text
        self._pending = ""
        if text and "\ud800" <= text[-1] <= "\udbff":
            text, self._pending = text[:-1], text[-1]
        return clean_text(text)

    def flush(self) -> str:
        """The held half at the end of the stream: unpaired, so U+FFFD."""
        rest, self._pending = self._pending, ""
        return clean_text(rest)


__all__ = [
    "EMPTY_REPLY_NOTICE",
    "REPLACEMENT",
    "SurrogateHold",
    "clean_block",
    "clean_message",
    "clean_text",
    "clean_value",
    "decode_bytes",
    "has_non_finite",
    "strict_json_dumps",
    "strict_json_loads",
]
