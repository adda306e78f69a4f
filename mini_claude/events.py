"""Everything the agent tells the outside world. The agent emits; UIs and tests consume."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from mini_claude.conversation import Message, ToolResultBlock
from mini_claude.plan import TodoItem
from mini_claude.protocol import CompactReason, ContextStatus, TierReport, Usage
from mini_claude.protocol import ToolProgress as ToolProgress  # a running tool's live output

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
class Thinking:
    """The model finished a block of reasoning; shown as one dim, collapsed line."""

    chars: int
    redacted: bool = False
    text: str = ""  # kept by the REPL so the expand key can show it whole


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
    from_notes: bool = False  # session notes stood in for the summary: nobody waited
    notes_age_seconds: float | None = None  # since the update behind those notes was asked for
    # how long the compaction waited for notes on their way before it could begin
    waited_seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class NotesUpdated:
    """Session memory wrote fresh notes in the background (see context/session_memory.py)."""

    covered_messages: int
    chars: int


@dataclass(frozen=True, slots=True)
class CompactionFailed:
    reason: CompactReason
    error: str
    breaker_open: bool
    failures: int = 1  # consecutive failed summaries, this one included


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
    status: int | None = None  # the HTTP status of a refused model call, when there was one


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
class TaskProgress:
    """A sub-agent (the task tool) started, made a call, or ended; for the status bar."""

    task_id: str
    description: str
    agent_type: str
    calls: int  # tool calls the sub-agent has made so far
    tokens: int  # prompt and output tokens of its model calls so far
    cost_usd: float
    state: Literal["running", "done", "failed", "interrupted"] = "running"

    @property
    def label(self) -> str:
        """``task: find the config loader · 7 calls``."""
        noun = "call" if self.calls == 1 else "calls"
        return f"task: {self.description} · {self.calls} {noun}"


@dataclass(frozen=True, slots=True)
class PlanUpdated:
    """The model rewrote its todo list (todo_write); the UI shows it as a checklist."""

    items: tuple[TodoItem, ...]


@dataclass(frozen=True, slots=True)
class SteeringDelivered:
    """A message the user sent during the turn went to the model, before its next call."""

    text: str


Event = (
    TurnStarted
    | ModelCallStarted
    | TextDelta
    | Thinking
    | AssistantMessage
    | ToolStarted
    | ToolFinished
    | UsageReported
    | TierFired
    | CompactionStarted
    | CompactionFinished
    | NotesUpdated
    | CompactionFailed
    | Retrying
    | Notice
    | TurnError
    | TurnFinished
    | TurnLimitReached
    | TaskProgress
    | PlanUpdated
    | ToolProgress
    | SteeringDelivered
)
