"""Answer latency by request kind: a server as slow as a real one, where the user feels it.

A real summary of a long history takes 20-60 s and a notes update as long; a main-loop
reply takes a second or more. The simulator otherwise answers at once, which hides every
wait a compaction causes. A :class:`Latency` holds each answer back before its first byte:
``side_s`` for summary and notes requests, ``main_s`` for the conversation's own calls.

``MINI_CLAUDE_SIM_LATENCY`` sets it for a simulator built without one (the ``--demo``):
``side,main`` in seconds, e.g. ``20,1``.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass

from mini_claude.simulator.types import RecordedRequest

LATENCY_ENV = "MINI_CLAUDE_SIM_LATENCY"


class LatencyError(ValueError):
    """A latency setting that cannot be read; the message says what was expected."""


@dataclass(frozen=True, slots=True)
class Latency:
    """Seconds each answer waits before it is written, by the request's kind."""

    side_s: float = 0.0
    main_s: float = 0.0

    def __post_init__(self) -> None:
        if not all(math.isfinite(s) and s >= 0 for s in (self.side_s, self.main_s)):
            raise LatencyError("a latency is a number of seconds, 0 or more")

    def for_request(self, record: RecordedRequest) -> float:
        """How late this request is answered; requests that are not model calls are not held."""
        if record.conversation is None:
            return 0.0
        return self.side_s if record.is_side_request else self.main_s

    @classmethod
    def parse(cls, text: str, name: str = LATENCY_ENV) -> Latency:
        """``"side,main"`` (or ``"side"`` alone) in seconds; ``name`` is the setting the
        message names when the text cannot be read."""
        parts = [p.strip() for p in text.split(",")]
        expected = f"{name} is 'side,main' in seconds (e.g. 20,1), not {text!r}"
        if not 1 <= len(parts) <= 2 or not all(parts):
            raise LatencyError(expected)
        try:
            side, main = float(parts[0]), float(parts[1]) if len(parts) == 2 else 0.0
        except ValueError:
            raise LatencyError(expected) from None
        return cls(side, main)

    @classmethod
    def from_env(cls) -> Latency:
        """The latency the environment asks for; none when it asks for nothing or for
        something unreadable (said in one line on stderr)."""
        text = os.environ.get(LATENCY_ENV, "").strip()
        if not text:
            return cls()
        try:
            return cls.parse(text)
        except LatencyError as exc:
            print(f"mini-claude: {exc}; answering without latency", file=sys.stderr)
            return cls()


NO_LATENCY = Latency()
