"""Where the prompt cache should keep a prefix that outlives the next history edit.

A request after an edit of old messages (results cleared, calls folded) reads
from the cache only up to the last breakpoint a previous request wrote before
the edit. Without one the whole history after the system prompt is written
again, summary included, on every such request: on a small window, where
clearing comes every few calls, that was most of what a session cost. Edits
never reach back past the newest fold block (later folds add blocks after it)
nor into the summary boundary, so the last of those is where the prefix is kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from mini_claude.context.fold import is_fold_block
from mini_claude.context.summary_request import is_boundary
from mini_claude.conversation import Block, Message


def stable_prefix_end(messages: Sequence[Message]) -> Block | None:
    """The newest fold block, else the summary boundary's last block, else None."""
    for message in reversed(messages):
        if message.role != "user":
            continue
        folds = [b for b in message.blocks if is_fold_block(b)]
        if folds:
            return folds[-1]
        if is_boundary(message):
            return message.blocks[-1] if message.blocks else None
    return None
