"""Session notes as a value: what the notes say and which message they describe up to.

Notes are anchored to a message, not to a position: the key of the last message they
describe (its tool call ids, or the very block object it begins with, which every copy of
the message made by a fold or a rebuild shares). A fold, a relief, a summary or a rewind
moves messages about; wherever the anchor message still is, the notes describe everything
up to it, and when it is gone (summarized or rewound away) they describe nothing here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mini_claude.conversation import Message

MessageKey = tuple[object, ...]


@dataclass(frozen=True, slots=True)
class SessionNotes:
    """Notes that describe the history up to and including the message keyed ``anchor``."""

    text: str
    anchor: MessageKey
    covered: int  # messages described when the update was asked for (where the anchor was)
    history_tokens: int  # estimated tokens of the whole history when the update was asked for
    started_at: float = 0.0  # the session clock when the update was asked for
    ready_at: float = 0.0  # when its reply was in (or, in the benchmark, would have been)


def message_key(message: Message) -> MessageKey:
    """What names a message through every edit of history: its tool call ids (results keep
    them when cleared, folds and rebuilds copy them), else its first block, by identity (two
    messages with the same words are still two; the key holds the block, so its id is not
    reused while the key lives)."""
    ids = [u.id for u in message.tool_uses] or [r.tool_use_id for r in message.tool_results]
    if ids:
        return (message.role, "ids", *ids)
    first = message.blocks[0] if message.blocks else None
    return (message.role, "block", id(first), first)


def anchor_of(messages: Sequence[Message], covered: int) -> MessageKey:
    """The key of the last of the first ``covered`` messages (() when there is none)."""
    return message_key(messages[covered - 1]) if covered > 0 else ()


def find_anchor(messages: Sequence[Message], anchor: MessageKey) -> int | None:
    """How many messages, from the start, the notes anchored at ``anchor`` describe here;
    None when the anchor message is gone. The newest match wins."""
    if not anchor:
        return None
    for index in range(len(messages) - 1, -1, -1):
        if message_key(messages[index]) == anchor:
            return index + 1
    return None
