"""One model reply as it streams: the provider's events turned into the UI's.

Text is shown as it comes (a surrogate pair split across two deltas is held until
whole), thinking is reported, a restarted stream starts the text over, and the
text received so far is kept for when the user interrupts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from mini_claude import events as ev
from mini_claude.conversation import Message, TextBlock
from mini_claude.protocol import (
    ModelSwitched,
    ModelTextDelta,
    ModelThinking,
    ResponseComplete,
    StreamEvent,
    StreamRestarted,
)
from mini_claude.sanitize import SurrogateHold, clean_text

INTERRUPTED_TEXT = "[interrupted by the user]"


class ReplyStream:
    """Iterate for UI events and, last, the :class:`ResponseComplete`."""

    def __init__(self, stream: AsyncIterator[StreamEvent]) -> None:
        self._stream = stream
        self._partial: list[str] = []

    def interrupted_reply(self) -> Message | None:
        """What an interrupted reply keeps: the text received so far, marked as cut off."""
        text = "".join(self._partial)
        if not text.strip():
            return None
        return Message("assistant", [TextBlock(text + "\n" + INTERRUPTED_TEXT)])

    async def __aiter__(self) -> AsyncIterator[ev.Event | ResponseComplete]:
        held = SurrogateHold()
        async for event in self._stream:
            if isinstance(event, ModelTextDelta):
                self._partial.append(event.text)
                shown = held.feed(event.text)
                if shown:
                    yield ev.TextDelta(shown)
            elif isinstance(event, StreamRestarted):
                self._partial.clear()
                held = SurrogateHold()
                yield ev.Retrying(event.attempt, event.delay_seconds, event.error)
            elif isinstance(event, ModelSwitched):
                self._partial.clear()
                held = SurrogateHold()
                yield ev.Notice(f"{event.from_model} failed ({event.reason}); "
                                f"going on with the fallback model {event.to_model}")
            elif isinstance(event, ModelThinking):
                yield ev.Thinking(event.chars, event.redacted, clean_text(event.text))
            elif isinstance(event, ResponseComplete):
                rest = held.flush()
                if rest:
                    yield ev.TextDelta(rest)
                yield event
