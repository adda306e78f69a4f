"""A running call's live output: the last lines for the faces, what an interrupt keeps.

A tool that prints as it works (run_shell) feeds its output here; the agent
turns the updates into :class:`ToolProgress` events, at most one per interval,
and, when the turn is interrupted, gives the model what was printed so far.
"""

from __future__ import annotations

import codecs
import re
import time
from collections import deque
from collections.abc import Callable

from mini_claude.protocol import ToolProgress

RECENT_LINES = 200
RECENT_LINE_CHARS = 400
FIRST_UPDATE_SECONDS = 1.0  # a quick command shows no live output at all
# Colour and cursor sequences and other control characters: a live line is plain text.
_TERMINAL_CODES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"
)


class CallProgress:
    """One call's live view: fed bytes by the tool, publishing throttled updates."""

    def __init__(
        self,
        tool_use_id: str,
        name: str,
        publish: Callable[[ToolProgress], None],
        interval: float = 0.5,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.tool_use_id = tool_use_id
        self.name = name
        self._publish = publish
        self._interval = interval
        self._clock = clock
        self._started = clock()
        self._last_sent: float | None = None
        self._recent: deque[str] = deque(maxlen=RECENT_LINES)
        self._open_line = ""
        self.lines = 0
        # What the model gets if the call is interrupted (set by the tool); None: nothing.
        self.partial: str | None = None

    def feeder(self) -> Callable[[bytes], None]:
        """A function for one output stream (its own decoder: a character may span reads)."""
        decoder = codecs.getincrementaldecoder("utf-8")("replace")

        def feed(data: bytes) -> None:
            self.add(decoder.decode(data))

        return feed

    def add(self, text: str) -> None:
        if not text:
            return
        text = _TERMINAL_CODES.sub("", text.replace("\r\n", "\n"))
        pieces = (self._open_line + text).split("\n")
        # A carriage return redraws its line (progress bars): what follows it is the line.
        self._open_line = pieces.pop()[-RECENT_LINE_CHARS * 4:]
        for line in pieces:
            self._recent.append(line.rsplit("\r", 1)[-1][:RECENT_LINE_CHARS])
        self.lines += len(pieces)
        self._maybe_publish()

    def _maybe_publish(self) -> None:
        now = self._clock()
        if now - self._started < FIRST_UPDATE_SECONDS:
            return
        if self._last_sent is not None and now - self._last_sent < self._interval:
            return
        self._last_sent = now
        self._publish(self.snapshot())

    def snapshot(self) -> ToolProgress:
        open_line = self._open_line.rstrip("\r").rsplit("\r", 1)[-1][:RECENT_LINE_CHARS]
        recent = [*self._recent, *([open_line] if open_line else [])]
        return ToolProgress(
            self.tool_use_id, self.name, "\n".join(recent),
            self.lines + (1 if self._open_line else 0), self._clock() - self._started,
        )
