"""Print mode's ``json`` and ``stream-json`` output: events in, public lines out."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from mini_claude import events as ev
from mini_claude.headless.claude_names import OURS, ToolNames
from mini_claude.headless.lines import (
    Line,
    Outcome,
    RunInfo,
    Subtype,
    assistant_lines,
    init_line,
    model_usage,
    own_line,
    permission_denied_line,
    result_line,
    text_delta_line,
    tool_result_line,
)
from mini_claude.headless.safe_json import OutputClosed, dumps_line, json_safe, write_or_close
from mini_claude.protocol import Usage

if TYPE_CHECKING:
    from mini_claude.agent.loop import Agent

INTERRUPTED = "interrupted"


DENIED_PREFIX = "Permission denied"  # how the registry words a refused call


class HeadlessReporter:
    """Follows one print-mode turn and writes its JSON lines.

    ``stream-json`` writes a line per published event as it happens and the
    result last; ``json`` writes the result alone. Either way exactly one
    result line is written, also when the run is interrupted.
    """

    def __init__(
        self,
        output_format: str,
        out: TextIO,
        narrate: Callable[[ev.Event], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        *,
        partial: bool = False,
        names: ToolNames = OURS,
    ) -> None:
        self.streaming = output_format == "stream-json"
        self.partial = partial  # --include-partial-messages: stream_event lines
        self.names = names
        self.out = out
        self.narrate = narrate
        self.clock = clock
        self.started_at = clock()
        self.info: RunInfo | None = None
        self.agent: Agent | None = None
        self.final_text: str | None = None
        self.stop_reason: str | None = None
        self.last_text = ""
        self.last_had_tools = False
        self.error: str | None = None
        self.error_kind = ""
        self.error_status: int | None = None
        self.limit_reached = False
        self.num_turns = 0
        self.api_seconds = 0.0
        self.peak_context = 0
        self.finished = False
        self.output_closed = False
        self._last_usage: Usage | None = None
        self._call_started: float | None = None
        self._compaction_started: float | None = None
        self._claimed_denials: set[int] = set()  # indexes into the context's denials
        self._denials: list[Line] = []

    # ---- the run ----------------------------------------------------------------------

    def begin(self, info: RunInfo, agent: Agent) -> None:
        self.info = info
        self.agent = agent
        self.peak_context = agent.status().tokens
        if self.streaming:
            self._write(init_line(info, self.names))

    def handle(self, event: ev.Event) -> None:
        self._track(event)
        if self.narrate is not None:
            self.narrate(event)
        if not self.streaming or self.info is None:
            return
        session_id = self.info.session_id
        if isinstance(event, ev.AssistantMessage):
            usage = self._last_usage
            recorded = self.agent.transcript.last_message_id if self.agent is not None else ""
            for block_line in assistant_lines(event.message, session_id, self.info.model, usage,
                                        recorded, self.names):
                self._write(block_line)
        elif isinstance(event, ev.ToolFinished):
            self._write(tool_result_line(event, session_id))
        elif isinstance(event, ev.TextDelta):
            if self.partial:
                self._write(text_delta_line(event.text, session_id))
        else:
            line = own_line(event, session_id)
            if line is not None:
                self._write(line)

    def _track(self, event: ev.Event) -> None:
        now = self.clock()
        if isinstance(event, ev.ModelCallStarted):
            self._call_started = now
            self._last_usage = None
            self.peak_context = max(self.peak_context, event.status.tokens)
        elif isinstance(event, ev.UsageReported):
            self._last_usage = event.usage
            self.peak_context = max(self.peak_context, event.status.tokens)
        elif isinstance(event, ev.AssistantMessage):
            self.num_turns += 1
            self._end_call(now)
            self.last_text = event.message.text
            self.last_had_tools = bool(event.message.tool_uses)
        elif isinstance(event, ev.CompactionStarted):
            self._compaction_started = now
        elif isinstance(event, ev.CompactionFinished | ev.CompactionFailed):
            if self._compaction_started is not None:
                self.api_seconds += now - self._compaction_started
                self._compaction_started = None
        elif isinstance(event, ev.ToolFinished):
            self._note_denial(event)
        elif isinstance(event, ev.TurnFinished):
            self.final_text = event.final_text
            self.stop_reason = event.stop_reason
        elif isinstance(event, ev.TurnError):
            self._end_call(now)
            self.error = event.message
            self.error_kind = event.kind
            self.error_status = event.status
        elif isinstance(event, ev.TurnLimitReached):
            self.limit_reached = True

    def _end_call(self, now: float) -> None:
        if self._call_started is not None:
            self.api_seconds += now - self._call_started
            self._call_started = None

    def _note_denial(self, event: ev.ToolFinished) -> None:
        """A refused call: matched to the oldest unclaimed denial of that tool (calls of one
        reply finish in any order, so counting before and after would mix them up)."""
        result = event.result
        if self.agent is None or not result.is_error:
            return
        if not result.content.startswith(DENIED_PREFIX):
            return
        for index, denied in enumerate(self.agent.tool_context.denials):
            if index in self._claimed_denials or denied.tool_name != event.name:
                continue
            self._claimed_denials.add(index)
            denial = {
                "tool_name": self.names.name(denied.tool_name),
                "tool_use_id": event.id,
                "tool_input": json_safe(self.names.input(denied.tool_name, denied.tool_input)),
            }
            self._denials.append(denial)
            if self.streaming and self.info is not None:
                self._write(permission_denied_line(denial, result.content,
                                                   self.info.session_id))
            return

    # ---- the result -------------------------------------------------------------------

    def finish(self, *, interrupted: bool = False) -> Outcome | None:
        """Write the result line (once); returns its outcome, None if already written."""
        if self.finished or self.info is None:
            return None
        self.finished = True
        outcome = self.outcome(interrupted=interrupted)
        self._write(result_line(outcome, self.info.session_id))
        return outcome

    def outcome(self, *, interrupted: bool = False) -> Outcome:
        """As Claude Code reports it: a refused model call is a "success" that is an error,
        its text the result; the turn that hit --max-turns counts as one more turn."""
        subtype: Subtype = "success"
        errors: list[str] = []
        reason, turns, failed = "completed", self.num_turns, False
        if interrupted:
            subtype, errors, reason = "error_during_execution", [INTERRUPTED], "aborted"
        elif self.error is not None:
            failed = True
            reason = "prompt_too_long" if self.error_kind == "prompt_too_long" else "api_error"
        elif self.limit_reached:
            subtype, reason, turns = "error_max_turns", "max_turns", self.num_turns + 1
            errors = [f"reached the limit of {self.num_turns} model calls"]
        success = subtype == "success" and not failed
        agent = self.agent
        costs = agent.costs if agent is not None else None
        if failed:
            result = self.error or ""
        elif success and self.final_text is not None:
            result = self.final_text
        else:
            result = self.last_text
        info = self.info
        return Outcome(
            subtype=subtype,
            is_error=not success,
            result=result,
            stop_reason=self.stop_reason if success else self._last_stop_reason(),
            num_turns=turns,
            duration_ms=round((self.clock() - self.started_at) * 1000),
            duration_api_ms=round(self.api_seconds * 1000),
            total_cost_usd=costs.dollars if costs is not None else 0.0,
            usage=costs.usage if costs is not None else Usage(),
            errors=errors,
            permission_denials=list(self._denials),
            compactions=agent.steps.compactions if agent is not None else 0,
            tokens_freed=dict(agent.steps.tokens_freed) if agent is not None else {},
            peak_context_tokens=self.peak_context,
            context_window=self.info.context_window if self.info is not None else 0,
            requests=costs.requests if costs is not None else 0,
            cost_known=costs.priced if costs is not None else True,
            terminal_reason=reason,
            api_error_status=self.error_status if failed else None,
            model_usage=model_usage(
                costs.by_model if costs is not None else {},
                info.context_window if info is not None else 0,
                agent.settings.max_output_tokens if agent is not None else 0,
            ),
        )

    def _last_stop_reason(self) -> str | None:
        if self.num_turns == 0:
            return None
        return "tool_use" if self.last_had_tools else "end_turn"

    def _write(self, line: Line) -> None:
        if self.output_closed:
            return
        try:
            write_or_close(self.out, dumps_line(line) + "\n")
        except OutputClosed:
            # Nobody reads on (`| head -1`): stop the turn as an interrupt does, at its next
            # await, so it winds down cleanly (its shell command killed, its transcript whole).
            self.output_closed = True
            task = _current_task()
            if task is not None:
                task.cancel()


def _current_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no running loop: the result line after the loop ended
        return None
