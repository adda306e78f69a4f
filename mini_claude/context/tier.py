"""The one interface every cheap tier implements, and what the tiers share.

A tier is run once per pipeline pass with the conversation and a
:class:`PassContext`; it edits tool results in place through the meter and
returns a :class:`TierReport` when it changed something. Tiers keep
incremental indexes across passes, so each watches for the history being
replaced under it (:class:`HistoryWatch`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from mini_claude.context.meter import TokenMeter
from mini_claude.conversation import Conversation
from mini_claude.protocol import TierReport


@dataclass(frozen=True, slots=True)
class PassContext:
    """What a tier reads in one pass."""

    meter: TokenMeter  # weighs what an edit frees, and is told about it
    utilization: float  # share of the window in use, measured just before this tier
    now: float = 0.0
    last_call_at: float | None = None  # when the last model call ended, None before the first

    @property
    def chars_per_token(self) -> float:
        return self.meter.chars_per_token


class Tier(Protocol):
    def run(self, conversation: Conversation, context: PassContext) -> TierReport | None:
        """One pass; a report when something changed, else None."""
        ...


class HistoryWatch:
    """Tells a tier that the history it indexed is gone: another conversation, or the
    same one rebuilt around a summary (a new epoch). Its index must start over."""

    def __init__(self) -> None:
        self._conversation: Conversation | None = None
        self._epoch = -1

    def changed(self, conversation: Conversation) -> bool:
        """True (once) when ``conversation`` is not the history seen last time."""
        if conversation is self._conversation and conversation.epoch == self._epoch:
            return False
        self._conversation = conversation
        self._epoch = conversation.epoch
        return True


def cache_is_cold(now: float, last_call_at: float | None, idle_seconds: float) -> bool:
    """The provider's prompt cache has surely expired since the last call."""
    if last_call_at is None:
        return False
    return now - last_call_at > idle_seconds
