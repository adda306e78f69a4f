"""The end of a step: its tool results go into the history with what rides on them.

That is the todo reminder and the loop guard's reminder (both in the last result's
text, as reminders always are) and the messages the user sent while the step ran
(steering, as text blocks after the results: every tool_use keeps its tool_result).
What was added is recorded in the transcript and reported as events.
"""

from __future__ import annotations

from collections.abc import Sequence

from mini_claude import events as ev
from mini_claude.agent.history import AdmittedResult, History
from mini_claude.agent.loop_guard import CallRecord, LoopGuard, Repetition
from mini_claude.agent.reminders import remind_in_results, with_reminder_in_results
from mini_claude.conversation import Conversation, ResultState, ToolUseBlock
from mini_claude.steering import SteeringQueue, steering_block
from mini_claude.tools.base import ToolContext


class StepEnd:
    """Closes each step's results: reminders, the loop guard and steering."""

    def __init__(self, tool_context: ToolContext, steering: SteeringQueue,
                 guard: LoopGuard) -> None:
        self.tool_context = tool_context
        self.steering = steering
        self.guard = guard

    def close(self, history: History, uses: Sequence[ToolUseBlock],
              results: list[AdmittedResult]) -> list[ev.Event]:
        """Append the step's results message; the events it gives rise to."""
        settings = self.tool_context.settings
        results = remind_in_results(results, self.tool_context.plan, settings.todo_reminder_calls)
        found = self._repetition(history.conversation, uses, results)
        reminder, notice = self.guard.respond(found) if found is not None else (None, None)
        results = with_reminder_in_results(results, reminder)
        steered = self.steering.take()
        history.close_results(uses, results, trailing=[steering_block(t) for t in steered])
        events: list[ev.Event] = []
        if found is not None:
            record_repetition(history, found, reminded=reminder is not None,
                              told_user=notice is not None)
        for text in steered:
            history.transcript.steering(text)
            events.append(ev.SteeringDelivered(text))
        if notice is not None:
            events.append(ev.Notice(notice, "warning"))
        return events

    def _repetition(self, conversation: Conversation, uses: Sequence[ToolUseBlock],
                    results: Sequence[AdmittedResult]) -> Repetition | None:
        if not self.tool_context.settings.loop_guard:
            return None
        records = [CallRecord(use.id, use.name, use.input, result.original.content,
                              result.original.is_error)
                   for use, result in zip(uses, results, strict=False)]
        in_view = {block.tool_use_id for message in conversation.messages
                   for block in message.tool_results if block.state == ResultState.FULL}
        in_view.update(use.id for use in uses)
        return self.guard.observe(records, in_view.__contains__)


def record_repetition(history: History, found: Repetition, *, reminded: bool,
                      told_user: bool) -> None:
    """The trigger and what was done about it, for the transcript and ``/context``."""
    history.transcript.event("loop_guard", rule=found.rule, subject=found.subject,
                             times=found.times, reminded=reminded, told_user=told_user)
