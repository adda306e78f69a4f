"""Everything the agent tells the outside world. The agent emits; UIs and tests consume."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mini_claude.context.base import TierReport
from mini_claude.conversation import Message, ToolResultBlock
from mini_claude.providers.base import Usage


@dataclass(frozen=True, slots=True)
class ContextStatus:
    """One honest meter: the status bar, /context and the auto-compact trigger all read this."""

    tokens: int  # estimated prompt tokens of the next request
    effective_window: int  # window minus output reserve
    window: int
    autocompact_at: int  # tokens at which auto-compact fires (0 when off)
    anchored: bool  # True when the estimate is anchored on reported usage

    @property
    def utilization(self) -> float:
        return self.tokens / self.effective_window if self.effective_window else 0.0

    @property
    def until_autocompact(self) -> int | None:
        return max(0, self.autocompact_at - self.tokens) if self.autocompact_at else None


@dataclass(frozen=True, slots=True)
class TurnStarted:
    user_text: str


@dataclass(frozen=True, slots=True)
class ModelCallStarted:
    request_number: int
    status: ContextStatus


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    message: Message


@dataclass(frozen=True, slots=True)
class ToolStarted:
    id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolFinished:
    id: str
    name: str
    result: ToolResultBlock  # as it entered the conversation (after tier 0)
    display: str | None = None
    display_kind: str = "text"


@dataclass(frozen=True, slots=True)
class UsageReported:
    usage: Usage
    status: ContextStatus
    cost_usd: float  # session total so far


@dataclass(frozen=True, slots=True)
class TierFired:
    report: TierReport


@dataclass(frozen=True, slots=True)
class CompactionStarted:
    reason: str  # "auto" | "manual" | "tool" | "mid-turn" | "prompt-too-long"
    tokens_before: int


@dataclass(frozen=True, slots=True)
class CompactionFinished:
    reason: str
    tokens_before: int
    tokens_after: int
    summary: str


@dataclass(frozen=True, slots=True)
class CompactionFailed:
    reason: str
    error: str
    breaker_open: bool


@dataclass(frozen=True, slots=True)
class Retrying:
    attempt: int
    delay_seconds: float
    error: str


@dataclass(frozen=True, slots=True)
class Notice:
    text: str
    level: str = "info"  # "info" | "warning" | "error"


@dataclass(frozen=True, slots=True)
class TurnError:
    """The turn ended early; the history is still valid."""

    message: str
    kind: str = "error"  # "auth" | "prompt_too_long" | "error" | "interrupted"


@dataclass(frozen=True, slots=True)
class TurnFinished:
    final_text: str
    stop_reason: str
    requests: int


@dataclass(frozen=True, slots=True)
class TurnLimitReached:
    """The turn stopped after the most model calls it was allowed; the history is valid."""

    requests: int


Event = (
    TurnStarted
    | ModelCallStarted
    | TextDelta
    | AssistantMessage
    | ToolStarted
    | ToolFinished
    | UsageReported
    | TierFired
    | CompactionStarted
    | CompactionFinished
    | CompactionFailed
    | Retrying
    | Notice
    | TurnError
    | TurnFinished
    | TurnLimitReached
)
