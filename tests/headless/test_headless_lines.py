"""The translation from internal events to public lines, checked against the shipped schema
for every kind of line, including the ones a short end-to-end run rarely produces."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from mini_claude import events as ev
from mini_claude.conversation import Message, TextBlock, ToolResultBlock, ToolUseBlock
from mini_claude.headless import load_schema
from mini_claude.headless.lines import (
    UNPUBLISHED,
    Outcome,
    RunInfo,
    Subtype,
    assistant_lines,
    init_line,
    own_line,
    result_line,
    tool_result_line,
)
from mini_claude.plan import TodoItem
from mini_claude.protocol import ContextStatus, TierReport, Usage

VALIDATOR = Draft202012Validator(load_schema())
STATUS = ContextStatus(tokens=900, effective_window=18_000, window=24_000,
                          autocompact_at=15_300, anchored=True)
SID = "20261126-101500-ab12cd"

OWN_EVENTS: list[ev.Event] = [
    ev.TierFired(TierReport("snip", 3, 12_000, 3_000, "stale reads")),
    ev.CompactionStarted("mid-turn", 17_000),
    ev.CompactionFinished("auto", 17_000, 4_000, "summary text"),
    ev.CompactionFailed("manual", "the summary was empty", breaker_open=True),
    ev.UsageReported(Usage(10, 800, 20, 5), STATUS, 0.0123),
    ev.Retrying(2, 1.5, "overloaded (529)"),
    ev.Notice("compacting often", "warning"),
    ev.Thinking(1_234),
    ev.TierFired(TierReport("clear_thinking", 4, 9_000, 2_250, "earlier turns' thinking")),
    ev.PlanUpdated((TodoItem("read the config loader", "completed"),
                    TodoItem("fix the port parsing", "in_progress"))),
    ev.ToolProgress("toolu_7", "run_shell", "building\nstep 1\nstep 2", 3, 12.5),
]


@pytest.mark.parametrize("event", OWN_EVENTS, ids=lambda e: type(e).__name__)
def test_every_context_event_becomes_a_valid_line_of_our_own(event: ev.Event) -> None:
    line = own_line(event, SID)
    assert line is not None and line["type"] == "mini_claude"
    VALIDATOR.validate(line)


def test_every_internal_event_is_published_or_deliberately_not() -> None:
    """A new internal event must be given a public line, or listed as unpublished."""
    published = {type(e) for e in OWN_EVENTS} | {ev.AssistantMessage, ev.ToolFinished}
    for kind in typing.get_args(ev.Event):
        assert kind in published or kind in UNPUBLISHED, kind.__name__
    for kind in UNPUBLISHED:
        assert kind not in published


def test_messages_and_init_and_results_validate() -> None:
    message = Message("assistant", [TextBlock("Let me look."),
                                    ToolUseBlock("toolu_1", "read_file", {"path": "a.py"})])
    info = RunInfo(SID, "/p", "sim-sonnet", "anthropic", ("read_file",), "default", "0.1.0",
                   24_000, 18_000, 15_300, None)
    lines: list[dict[str, Any]] = [
        init_line(info),
        *assistant_lines(message, SID, "sim-sonnet", None),
        *assistant_lines(message, SID, "sim-sonnet", Usage(1, 2, 3, 4)),
        tool_result_line(
            ev.ToolFinished("toolu_1", "read_file", ToolResultBlock("toolu_1", "x", True)), SID
        ),
    ]
    cases: list[tuple[Subtype, bool, str]] = [("success", False, "completed"),
                                              ("error_max_turns", True, "max_turns"),
                                              ("error_during_execution", True, "aborted")]
    for subtype, is_error, reason in cases:
        outcome = Outcome(subtype, is_error, "answer", "end_turn", 2, 10, 5, 0.5, Usage(),
                          errors=["why"] if is_error else [], terminal_reason=reason)
        lines.append(result_line(outcome, SID))
    refused = Outcome("success", True, "API error", None, 0, 10, 5, 0.0, Usage(),
                      terminal_reason="api_error", api_error_status=529)
    lines.append(result_line(refused, SID))
    for line in lines:
        VALIDATOR.validate(line)
    assert lines[4]["message"]["usage"]["cache_read_input_tokens"] == 2
    # one line per content block, as Claude Code writes a reply
    assert [line["message"]["content"][0]["type"] for line in lines[1:3]] == ["text", "tool_use"]
    assert lines[1]["message"]["id"] == lines[2]["message"]["id"]


def test_a_result_that_contradicts_itself_is_rejected_by_the_schema() -> None:
    outcome = Outcome("success", False, "answer", "end_turn", 1, 10, 5, 0.0, Usage())
    line = result_line(outcome, SID)
    assert VALIDATOR.is_valid(line)
    assert not VALIDATOR.is_valid({**line, "is_error": True})
    assert not VALIDATOR.is_valid({**line, "subtype": "error_max_turns"})  # no errors listed
    assert not VALIDATOR.is_valid({**line, "extra_field": 1})
