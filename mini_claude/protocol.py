"""The neutral contract between the layers: model requests and replies, stream events,
the provider interface and its errors, what a tool returns, the context tiers' names and
what a tier reports, and the context status every face reads.

It sits just above :mod:`mini_claude.conversation`; providers, tools, the context
pipeline, the agent and the faces all speak these types, so none of them has to import
another for a shared word. Nothing here knows a wire format or an SDK type.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from mini_claude.conversation import Block, ImageBlock, Message
from mini_claude.text import format_tokens


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ThinkingConfig:
    """How much the model may reason before answering, in neutral words.

    Anthropic: ``adaptive`` (the model decides, ``effort`` steers it; the budget
    then only sizes ``max_tokens``) or a ``budget_tokens`` of at least 1,024.
    OpenAI reasoning models: ``effort`` is the ``reasoning_effort``.
    """

    budget_tokens: int = 0
    adaptive: bool = False
    effort: str | None = None


@dataclass(frozen=True, slots=True)
class ModelRequest:
    model: str
    system: str
    messages: Sequence[Message]
    tools: Sequence[ToolSpec]
    max_tokens: int
    allow_tool_use: bool = True  # False: tools stay defined (cache prefix intact) but unusable
    cache: bool = True  # place prompt-cache breakpoints
    thinking: ThinkingConfig | None = None  # None: the provider's default (no thinking)
    # A block of ``messages`` the next history edit will leave as it is: a provider with
    # explicit cache breakpoints keeps the prefix up to it (see context/cache_anchor.py).
    cache_anchor: Block | None = None


RECORDED_USAGE_FIELDS = ("input_tokens", "cache_read_tokens", "cache_write_tokens",
                         "output_tokens")


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0  # the uncached part of the prompt
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    thinking_tokens: int = 0  # the part of output_tokens spent reasoning, when reported

    @property
    def prompt_tokens(self) -> int:
        """The whole prompt as the server counted it."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Usage:
        """The counts of a transcript's ``usage`` record (a missing one is 0)."""
        return cls(**{name: int(record.get(name, 0)) for name in RECORDED_USAGE_FIELDS})

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.output_tokens + other.output_tokens,
            self.thinking_tokens + other.thinking_tokens,
        )


@dataclass(frozen=True, slots=True)
class CacheMiss:
    """The server's word on why the previous request's cached prefix was not reused.

    ``reason``: ``messages_changed`` | ``system_changed`` | ``tools_changed`` |
    ``model_changed`` (each with the tokens that missed the cache), or
    ``previous_message_not_found`` | ``unavailable`` (no diagnosis).
    """

    reason: str
    missed_tokens: int = 0


# ---- stream events -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModelTextDelta:
    """Text of the reply as it streams (the UI shows it through :class:`events.TextDelta`)."""

    text: str


@dataclass(frozen=True, slots=True)
class ModelThinking:
    """A thinking block of the reply is complete (shown collapsed: its length only)."""

    chars: int
    redacted: bool = False
    text: str = ""  # the reasoning itself, for a view that expands it


@dataclass(frozen=True, slots=True)
class ToolUseStarted:
    """The model began a tool call (arguments still streaming)."""

    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ResponseComplete:
    message: Message  # the assistant message, tool_use inputs parsed
    stop_reason: str  # "end_turn" | "tool_use" | "max_tokens" | other, normalised
    usage: Usage | None  # None when the server reported none (some compatible servers)
    response_id: str | None = None  # the server's id for this reply, when it gave one
    cache_miss: CacheMiss | None = None  # the server's cache diagnostics, when it sent any


@dataclass(frozen=True, slots=True)
class StreamRestarted:
    """A retryable failure: the request is re-sent after a pause.

    Any partial text shown for the failed attempt is void; the stream starts over.
    """

    attempt: int  # 1 for the first retry
    delay_seconds: float
    error: str  # the one-line message of the failure being retried


@dataclass(frozen=True, slots=True)
class ModelSwitched:
    """The model was overloaded or not found: the request went to the fallback model."""

    from_model: str
    to_model: str
    reason: str  # the one-line message of the failure


StreamEvent = (
    ModelTextDelta | ToolUseStarted | ResponseComplete | StreamRestarted | ModelThinking
    | ModelSwitched
)


class Provider(Protocol):
    """One adapter per wire format."""

    name: str

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Send the request and yield events; the last one is ResponseComplete.

        Raises a :class:`ProviderError` subclass on failure.
        """
        ...

    async def close(self) -> None: ...


# ---- errors ------------------------------------------------------------------------


class ProviderError(Exception):
    """A failed model call, already phrased for the user (one line, no secrets)."""

    retryable: bool = False

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retry_after = retry_after  # seconds the server asked us to wait, when it said


class RateLimited(ProviderError):
    retryable = True


class Overloaded(ProviderError):
    retryable = True


class ServerError(ProviderError):
    retryable = True


class ConnectionLost(ProviderError):
    """The connection failed or dropped mid-stream."""

    retryable = True


class RequestTimeout(ProviderError):
    retryable = True


class PromptTooLong(ProviderError):
    """The server says the prompt exceeds the window; the context pipeline acts on this."""

    def __init__(self, message: str, *, tokens: int | None = None, maximum: int | None = None,
                 status: int | None = 400) -> None:
        super().__init__(message, status=status)
        self.tokens = tokens
        self.maximum = maximum


class AuthenticationFailed(ProviderError):
    pass


class BadRequest(ProviderError):
    pass


class ModelNotFound(BadRequest):
    """The server does not know the model (404 ``not_found_error``, ``model_not_found``)."""


class MalformedResponse(ProviderError):
    """The server's reply could not be understood (for example bad tool-call JSON)."""

    retryable = True


# ---- tools -------------------------------------------------------------------------

# Key an adapter puts in a tool_use input when the model sent arguments that are not JSON.
RAW_ARGUMENTS_KEY = "_raw_arguments"
# Beside the raw text, when the arguments were refused unparsed (nested too deep, too
# large): the reason the tool answers with.
ARGUMENTS_REFUSED_KEY = "_arguments_refused"


@dataclass(frozen=True, slots=True)
class PlanChanged:
    """The todo list was replaced: shown, and recorded for resume."""


@dataclass(frozen=True, slots=True)
class SkillLoaded:
    """A skill's instructions entered the context: recorded, re-attached after a summary."""

    name: str


@dataclass(frozen=True, slots=True)
class CompactionRequested:
    """The model asked for a summary; it comes before the next request."""

    focus: str | None = None


# What a tool changed besides its result; the agent handles each kind in one place.
ToolEffect = PlanChanged | SkillLoaded | CompactionRequested


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What a tool returns before tier 0 and the conversation see it.

    ``display`` is an optional richer view for the UI (a diff for edits);
    the model only ever sees ``content``. ``effects`` say what else the call changed.
    """

    content: str
    is_error: bool = False
    display: str | None = None
    display_kind: Literal["text", "diff", "code", "ansi"] = "text"
    images: tuple[ImageBlock, ...] = ()  # sent beside the result (read_file of a picture)
    effects: tuple[ToolEffect, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolProgress:
    """A running tool's output so far (a long shell command), for the faces to show live."""

    tool_use_id: str
    name: str
    recent: str  # the last lines printed (bounded), newest last
    lines: int  # lines printed so far in all
    elapsed_seconds: float

    def last_lines(self, count: int) -> list[str]:
        return self.recent.splitlines()[-count:] if count > 0 else []


# ---- context ---------------------------------------------------------------------

# One vocabulary for the context tiers: each tier's name, number, verb and noun. The tier
# reports, the REPL, the headless output and the benchmark all read this table, so a new
# tier is one module (under ``context/``) and one row here. Numbers follow the order of
# the pipeline: 0 at admission (each result as it enters), 1-3 the cheap tiers before
# every call, 4 the summary. The steps that run beside tier 3 (clear-thinking before every
# call; relief and fold when one turn outgrows the window) carry its number.

@dataclass(frozen=True, slots=True)
class TierRow:
    name: str  # as reports, events, transcripts and the benchmark name it
    number: int
    verb: str  # what it did to what it counts: "cleared"
    noun: str = "result"  # what it counts, one of them
    plural: str = ""  # when not noun + "s"
    cost_row: bool = False  # a row of the benchmark's cost-of-history-edits table

    def counted(self, count: int) -> str:
        """``1 result``, ``3 thinking blocks``."""
        noun = self.noun if count == 1 else (self.plural or self.noun + "s")
        return f"{count} {noun}"


TIERS: dict[str, TierRow] = {
    row.name: row
    for row in (
        TierRow("persist", 0, "saved"),
        TierRow("truncate", 0, "cut"),
        TierRow("budget", 1, "trimmed", cost_row=True),
        TierRow("snip", 2, "cleared", cost_row=True),
        TierRow("microcompact", 3, "cleared", cost_row=True),
        TierRow("clear_thinking", 3, "dropped", "thinking block"),
        # Relief is microcompact's clearing run under pressure inside a turn, before a
        # summary that would come too soon; its reports count as microcompact's.
        TierRow("relief", 3, "cleared"),
        TierRow("fold", 3, "folded", "old call"),
        TierRow("compact", 4, "summarized", "message", cost_row=True),
    )
}
UNKNOWN = TierRow("?", -1, "edited")


def tier_row(name: str) -> TierRow:
    """The row of a tier; an unknown name still reads as "edited N results"."""
    return TIERS.get(name, UNKNOWN)


def cost_rows() -> list[str]:
    """The tiers whose history edits the benchmark prices, in pipeline order."""
    return [row.name for row in TIERS.values() if row.cost_row]


def at_admission() -> list[str]:
    return [row.name for row in TIERS.values() if row.number == 0]


TierName = str  # a name in TIERS
# Why a summary was made: at the turn boundary ("auto", "idle" when the cache went cold),
# by hand ("manual"), by the model's tool ("tool"), inside a turn ("mid-turn"), or after
# the server refused the prompt ("prompt-too-long").
CompactReason = Literal[
    "auto", "idle", "manual", "tool", "mid-turn", "prompt-too-long", "task-boundary"
]

@dataclass(frozen=True, slots=True)
class TierReport:
    """What one tier did in one pass; the agent turns it into an event."""

    tier: TierName
    results_touched: int
    chars_freed: int
    tokens_freed: int
    detail: str = ""

    def describe(self) -> str:
        """One line for the UI, e.g. ``snip: 4 stale results cleared, 12.3k tokens freed``."""
        row = tier_row(self.tier)
        extra = f" ({self.detail})" if self.detail else ""
        return (
            f"{self.tier}: {row.counted(self.results_touched)} {row.verb}, "
            f"{format_tokens(self.tokens_freed)} tokens freed{extra}"
        )


@dataclass(frozen=True, slots=True)
class ContextStatus:
    """One honest meter: the status bar, /context and the auto-compact trigger all read this."""

    tokens: int  # estimated prompt tokens of the next request
    effective_window: int  # window minus output reserve
    window: int
    autocompact_at: int  # tokens at which auto-compact fires (0 when off)
    anchored: bool  # True when the estimate is anchored on reported usage
    # Why auto-compact will not fire when due (breaker open, paused, just compacted by
    # hand); None when it will. Said on the status line instead of a promise.
    autocompact_hold: str | None = None

    @property
    def compaction_point(self) -> int:
        """What 100% means: where auto-compact fires, or the effective window when it is off."""
        return self.autocompact_at or self.effective_window

    @property
    def utilization(self) -> float:
        """Share of the way to the compaction point: 100% means the next summary is due."""
        return self.tokens / self.compaction_point if self.compaction_point else 0.0

    @property
    def window_utilization(self) -> float:
        """Share of the effective window (window minus output reserve) in use."""
        return self.tokens / self.effective_window if self.effective_window else 0.0

    @property
    def compaction_due(self) -> bool:
        """Above the auto-compact threshold (never when auto-compact is off)."""
        return bool(self.autocompact_at) and self.tokens > self.autocompact_at

    @property
    def until_autocompact(self) -> int | None:
        return max(0, self.autocompact_at - self.tokens) if self.autocompact_at else None
