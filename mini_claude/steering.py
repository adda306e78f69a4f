"""Steering: a message the user sends while a turn runs, delivered into that turn.

It waits in a :class:`SteeringQueue` until the next point where the model is called.
After a step's tool results it rides on their message as a labelled text block (the
tool_use/tool_result pairs stay as they were); when the model has just answered
without tools it goes as a user message of its own. The label is what marks it as the
user's own words wherever the history is rewritten (a compaction keeps it verbatim).
"""

from __future__ import annotations

from mini_claude.conversation import Block, TextBlock

STEERING_LABEL = (
    "[Sent by the user while you were working, word for word; take it into account "
    "before you go on:]"
)


def steering_block(text: str) -> TextBlock:
    """The block a steering message travels in, beside a step's tool results."""
    return TextBlock(f"{STEERING_LABEL}\n{text}")


def steering_text(block: Block) -> str | None:
    """The user's words in a steering block, or None for any other block."""
    if not isinstance(block, TextBlock) or not block.text.startswith(STEERING_LABEL + "\n"):
        return None
    return block.text[len(STEERING_LABEL) + 1:]


class SteeringQueue:
    """Messages for the running turn, in the order they were sent, until delivered."""

    def __init__(self) -> None:
        self._pending: list[str] = []

    def add(self, text: str) -> bool:
        """Queue ``text`` for the next model call; False (nothing queued) when it is blank."""
        if not text.strip():
            return False
        self._pending.append(text)
        return True

    @property
    def pending(self) -> tuple[str, ...]:
        return tuple(self._pending)

    def take(self) -> list[str]:
        """Every message still waiting, removed from the queue (delivered or taken back)."""
        taken, self._pending = self._pending, []
        return taken
