"""The public lines of ``--output-format json`` and ``stream-json``, built from internal events.

This module is the whole contract between the agent's internal events and
scripts that parse our output: each public line is written out field by
field here, so renaming an internal event or field cannot change what a
script sees (the suite validates every line against
``mini_claude/schemas/stream-json.v1.json``). The shapes of ``system/init``,
``assistant``, ``user`` and ``result`` lines follow Claude Code's headless
output; our own context events are lines of ``type: "mini_claude"``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from mini_claude import events as ev
from mini_claude.conversation import Message, TextBlock, ToolUseBlock
from mini_claude.headless.claude_names import OURS, ToolNames
from mini_claude.protocol import Usage

SCHEMA_VERSION = 1
OWN_TYPE = "mini_claude"  # the type of our own lines, and the key of our extras

Subtype = Literal["success", "error_max_turns", "error_during_execution"]
Line = dict[str, Any]


@dataclass(frozen=True, slots=True)
class RunInfo:
    """What the init line says about the run."""

    session_id: str
    cwd: str
    model: str
    provider: str
    tools: tuple[str, ...]
    permission_mode: str  # "default", or "bypassPermissions" with --yes
    version: str
    context_window: int
    effective_window: int
    autocompact_at: int
    max_turns: int | None


@dataclass
class Outcome:
    """How the run ended, and the numbers the result line reports."""

    subtype: Subtype
    is_error: bool
    result: str
    stop_reason: str | None
    num_turns: int
    duration_ms: int
    duration_api_ms: int
    total_cost_usd: float
    usage: Usage
    errors: list[str] = field(default_factory=list)
    permission_denials: list[Line] = field(default_factory=list)
    compactions: int = 0
    tokens_freed: dict[str, int] = field(default_factory=dict)
    peak_context_tokens: int = 0
    context_window: int = 0
    requests: int = 0
    cost_known: bool = True
    # Claude Code's: why the run ended (completed, max_turns, aborted, prompt_too_long,
    # api_error), the HTTP status of a refused call, and the usage per model.
    terminal_reason: str = "completed"
    api_error_status: int | None = None
    model_usage: dict[str, Line] = field(default_factory=dict)


# Internal events without a line of their own: what they say reaches scripts another way
# (the answer and errors in the result, tool calls in the assistant message).
UNPUBLISHED: tuple[type, ...] = (
    ev.TurnStarted,
    ev.ModelCallStarted,
    ev.TextDelta,
    ev.ToolStarted,
    ev.TurnError,
    ev.TurnFinished,
    ev.TurnLimitReached,
    ev.TaskProgress,  # the sub-agent's answer is the task tool's result
    ev.NotesUpdated,  # background work: its cost is in the usage totals, its use in compactions
    ev.SteeringDelivered,  # the user's own message, sent through Agent.steer
)


def _uuid() -> str:
    return str(uuid.uuid4())


def usage_object(usage: Usage) -> Line:
    """Anthropic's usage field names, which Claude Code's result uses too."""
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
    }


def init_line(info: RunInfo, names: ToolNames = OURS) -> Line:
    return {
        "type": "system",
        "subtype": "init",
        "session_id": info.session_id,
        "uuid": _uuid(),
        "cwd": info.cwd,
        "model": info.model,
        "tools": [names.name(tool) for tool in info.tools],
        "mcp_servers": [],
        "permissionMode": info.permission_mode,
        OWN_TYPE: {
            "schema_version": SCHEMA_VERSION,
            "version": info.version,
            "provider": info.provider,
            "context_window": info.context_window,
            "effective_window": info.effective_window,
            "autocompact_at": info.autocompact_at,
            "max_turns": info.max_turns,
        },
    }


def assistant_lines(
    message: Message,
    session_id: str,
    model: str,
    usage: Usage | None,
    message_id: str = "",
    names: ToolNames = OURS,
) -> list[Line]:
    """One line per content block, as Claude Code writes a reply, all with the reply's
    message id. The last line's ``uuid`` is the id the transcript recorded the message
    under (``--resume-at`` takes it). Tool names and inputs as ``names`` writes them."""
    content: list[Line] = []
    for block in message.blocks:
        if isinstance(block, TextBlock):
            content.append({"type": "text", "text": block.text})
        elif isinstance(block, ToolUseBlock):
            content.append({"type": "tool_use", "id": block.id, "name": names.name(block.name),
                            "input": names.input(block.name, block.input)})
    reply_id = f"msg_{uuid.uuid4().hex[:24]}"
    blocks = content or [{"type": "text", "text": ""}]
    return [
        {
            "type": "assistant",
            "message": {
                "id": reply_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [block],
                "stop_reason": None,
                "usage": usage_object(usage) if usage is not None else None,
            },
            "parent_tool_use_id": None,
            "session_id": session_id,
            "uuid": _uuid_for(message_id) if index == len(blocks) - 1 else _uuid(),
        }
        for index, block in enumerate(blocks)
    ]


def _uuid_for(message_id: str) -> str:
    """The transcript's id in the usual uuid form, or a fresh one when there is none."""
    try:
        return str(uuid.UUID(hex=message_id))
    except ValueError:
        return _uuid()


def tool_result_line(event: ev.ToolFinished, session_id: str) -> Line:
    """``tool_use_result`` is the tool's whole output (the model may have had a saved-file
    preview of a large one) where Claude Code puts its tool's own record: an object for a
    call that ran, the error text for one that failed, as Claude Code's are."""
    output = event.original if event.original is not None else event.result.content
    return {
        "type": "user",
        "message": {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": event.id,
                    "content": event.result.content,
                    "is_error": event.result.is_error,
                }
            ],
        },
        "parent_tool_use_id": None,
        "session_id": session_id,
        "uuid": _uuid(),
        "tool_use_result": output if event.result.is_error else {"type": "text",
                                                                  "content": output},
    }


def permission_denied_line(denial: Line, message: str, session_id: str) -> Line:
    """Claude Code's ``system/permission_denied``: a call refused, and why."""
    if message.startswith("Permission denied by "):
        kind = "rule"
    elif "plan mode" in message:
        kind = "mode"
    elif "by the user" in message:
        kind = "user"
    else:
        kind = "other"
    return {
        "type": "system",
        "subtype": "permission_denied",
        "tool_name": denial["tool_name"],
        "tool_use_id": denial["tool_use_id"],
        "decision_reason_type": kind,
        "message": message,
        "session_id": session_id,
        "uuid": _uuid(),
    }


def model_usage(by_model: dict[str, Any], context_window: int, max_output: int) -> Line:
    """Claude Code's ``modelUsage``: the usage and cost per model."""
    return {
        model: {
            "inputTokens": tally.usage.input_tokens,
            "outputTokens": tally.usage.output_tokens,
            "cacheReadInputTokens": tally.usage.cache_read_tokens,
            "cacheCreationInputTokens": tally.usage.cache_write_tokens,
            "webSearchRequests": 0,
            "costUSD": round(tally.dollars, 6),
            "contextWindow": context_window,
            "maxOutputTokens": max_output,
        }
        for model, tally in by_model.items()
    }


def text_delta_line(text: str, session_id: str) -> Line:
    """``--include-partial-messages``: a piece of the reply as it streams, in the shape of
    Anthropic's stream event."""
    return {
        "type": "stream_event",
        "event": {"type": "content_block_delta", "index": 0,
                  "delta": {"type": "text_delta", "text": text}},
        "parent_tool_use_id": None,
        "session_id": session_id,
        "uuid": _uuid(),
    }


PROGRESS_LINES = 5  # of a running command's output, per tool_progress line


def own_line(event: ev.Event, session_id: str) -> Line | None:
    """Our context events as ``type: "mini_claude"`` lines; None for events not published."""
    body: Line
    if isinstance(event, ev.TierFired):
        report = event.report
        body = {
            "subtype": "tier_fired",
            "tier": report.tier,
            "results_touched": report.results_touched,
            "tokens_freed": report.tokens_freed,
            "chars_freed": report.chars_freed,
            "detail": report.detail,
        }
    elif isinstance(event, ev.CompactionStarted):
        body = {
            "subtype": "compaction_started",
            "reason": event.reason,
            "tokens_before": event.tokens_before,
        }
    elif isinstance(event, ev.CompactionFinished):
        body = {
            "subtype": "compaction_finished",
            "reason": event.reason,
            "tokens_before": event.tokens_before,
            "tokens_after": event.tokens_after,
            "from_session_notes": event.from_notes,
        }
    elif isinstance(event, ev.CompactionFailed):
        body = {
            "subtype": "compaction_failed",
            "reason": event.reason,
            "error": event.error,
            "auto_compact_stopped": event.breaker_open,
        }
    elif isinstance(event, ev.UsageReported):
        status = event.status
        body = {
            "subtype": "usage",
            "usage": usage_object(event.usage),
            "context_tokens": status.tokens,
            "context_window": status.window,
            "effective_window": status.effective_window,
            "autocompact_at": status.autocompact_at,
            "context_pct": round(status.utilization * 100),
            "total_cost_usd": round(event.cost_usd, 6),
        }
    elif isinstance(event, ev.Retrying):
        body = {
            "subtype": "retry",
            "attempt": event.attempt,
            "delay_ms": round(event.delay_seconds * 1000),
            "error": event.error,
        }
    elif isinstance(event, ev.Notice):
        body = {"subtype": "notice", "level": event.level, "text": event.text}
    elif isinstance(event, ev.Thinking):
        body = {"subtype": "thinking", "chars": event.chars, "redacted": event.redacted}
    elif isinstance(event, ev.PlanUpdated):
        body = {"subtype": "todos", "todos": [item.to_dict() for item in event.items]}
    elif isinstance(event, ev.ToolProgress):
        body = {
            "subtype": "tool_progress",
            "tool_use_id": event.tool_use_id,
            "tool_name": event.name,
            "last_lines": event.last_lines(PROGRESS_LINES),
            "lines": event.lines,
            "elapsed_ms": round(event.elapsed_seconds * 1000),
        }
    else:
        return None
    return {"type": OWN_TYPE, **body, "session_id": session_id, "uuid": _uuid()}


def result_line(outcome: Outcome, session_id: str) -> Line:
    line: Line = {
        "type": "result",
        "subtype": outcome.subtype,
        "is_error": outcome.is_error,
        "duration_ms": outcome.duration_ms,
        "duration_api_ms": outcome.duration_api_ms,
        "num_turns": outcome.num_turns,
        "result": outcome.result,
        "stop_reason": outcome.stop_reason,
        "session_id": session_id,
        "total_cost_usd": round(outcome.total_cost_usd, 6),
        "usage": usage_object(outcome.usage),
        "permission_denials": outcome.permission_denials,
        "uuid": _uuid(),
        "modelUsage": outcome.model_usage,
        "terminal_reason": outcome.terminal_reason,
        "api_error_status": outcome.api_error_status,
    }
    if outcome.errors:
        line["errors"] = list(outcome.errors)
    line[OWN_TYPE] = {
        "schema_version": SCHEMA_VERSION,
        "requests": outcome.requests,
        "compactions": outcome.compactions,
        "tokens_freed": dict(outcome.tokens_freed),
        "peak_context_tokens": outcome.peak_context_tokens,
        "context_window": outcome.context_window,
        "cost_known": outcome.cost_known,
    }
    return line
