"""Everything the agent tells the outside world. The agent emits; UIs and tests consume."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from mini_claude.conversation import Message, ToolResultBlock
from mini_claude.plan import TodoItem
from mini_claude.protocol import CompactReason, ContextStatus, TierReport, Usage

NoticeLevel = Literal["info", "warning", "error"]
TurnErrorKind = Literal["auth", "prompt_too_long", "error", "interrupted"]


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
    original: str | None = None  # the tool's whole output, before tier 0 saved or cut it


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
    reason: CompactReason
    tokens_before: int


@dataclass(frozen=True, slots=True)
class CompactionFinished:
    reason: CompactReason
    tokens_before: int
    tokens_after: int
    summary: str


@dataclass(frozen=True, slots=True)
class CompactionFailed:
    reason: CompactReason
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
    level: NoticeLevel = "info"


@dataclass(frozen=True, slots=True)
class TurnError:
    """The turn ended early; the history is still valid."""

    message: str
    kind: TurnErrorKind = "error"


@dataclass(frozen=True, slots=True)
class TurnFinished:
    final_text: str
    stop_reason: str
    requests: int


@dataclass(frozen=True, slots=True)
class TurnLimitReached:
    """The turn stopped after the most model calls it was allowed; the history is valid."""

    requests: int


@dataclass(frozen=True, slots=True)
class PlanUpdated:
    """The model rewrote its todo list (todo_write); the UI shows it as a checklist."""

    items: tuple[TodoItem, ...]


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
    | PlanUpdated
)
