"""Reminders the client adds for the model: the plan reminder (after a while without
todo_write, a line asks the model to keep its plan current) and the loop guard's. They
ride on the newest message (the user's text, or the last tool result), so the cached
prefix stays as it was."""

from __future__ import annotations

from dataclasses import replace

from mini_claude.agent.history import AdmittedResult
from mini_claude.conversation import Message, TextBlock
from mini_claude.plan import Plan


def with_plan_reminder(message: Message, plan: Plan, after_calls: int) -> Message:
    reminder = plan.reminder(after_calls)
    if reminder is None:
        return message
    return Message(message.role, [*message.blocks, TextBlock(reminder)])


def remind_in_results(
    results: list[AdmittedResult], plan: Plan, after_calls: int
) -> list[AdmittedResult]:
    return with_reminder_in_results(results, plan.reminder(after_calls))


def with_reminder_in_results(
    results: list[AdmittedResult], reminder: str | None
) -> list[AdmittedResult]:
    """The results with ``reminder`` after the last one's text (as the model and the
    transcript read it)."""
    if reminder is None or not results:
        return results
    last = results[-1]
    block = replace(last.block, content=f"{last.block.content}\n\n{reminder}")
    original = replace(last.original, content=f"{last.original.content}\n\n{reminder}")
    return [*results[:-1], AdmittedResult(block, original, last.report, last.images)]
