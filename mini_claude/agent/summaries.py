"""One summary of the history, with the hooks around it and the events it makes.

When to summarize is decided in ``context_steps``; how the summary is made is the
compactor's job. This is the step between: ask the PreCompact hooks for extra
instructions, run the compactor, record the result (or the failure), tell the
PostCompact hooks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from mini_claude import events as ev
from mini_claude.agent.history import History
from mini_claude.agent.hooks import HookRunner
from mini_claude.agent.lifecycle import LifecycleHooks
from mini_claude.context.compact import CompactionError, Compactor, SummaryContext
from mini_claude.context.notes import SessionNotes
from mini_claude.context.thinking import close_thinking_loop
from mini_claude.protocol import CompactReason


async def run_summary(
    compactor: Compactor,
    history: History,
    hooks: HookRunner,
    context: SummaryContext,
    reason: CompactReason,
    focus: str | None = None,
    notes: Sequence[SessionNotes] = (),
    lifecycle: LifecycleHooks | None = None,
) -> AsyncIterator[ev.Event]:
    """Summarize; :class:`CompactionFinished` or :class:`CompactionFailed` says how it went.

    With ``lifecycle``, the SessionStart hooks (source ``compact``) run before the summary,
    so their context is among what is written back after it."""
    conversation = history.conversation
    yield ev.CompactionStarted(reason, compactor.meter.estimate(conversation))
    instructions: str | None = None
    if hooks:
        pre = await hooks.pre_compact(reason, focus)
        for warning in pre.warnings:
            yield ev.Notice(warning, "warning")
        instructions = "\n\n".join(pre.instructions) or None
        if lifecycle is not None:
            async for event in lifecycle.at_compaction(hooks):
                yield event
    try:
        result = await compactor.compact(
            conversation, context, reason=reason, focus=focus, instructions=instructions,
            notes=notes,
        )
    except CompactionError as exc:
        history.transcript.event("compaction_failed", reason=reason, error=str(exc))
        yield ev.CompactionFailed(reason, str(exc), compactor.breaker_open,
                                  compactor.consecutive_failures)
        return
    closed = close_thinking_loop(conversation.messages)
    if closed is not None:  # thinking whose history the summary replaced is void
        conversation.replace_all(closed)
    history.record_compaction(reason, result.summary, result.tokens_before, result.tokens_after)
    yield ev.CompactionFinished(reason, result.tokens_before, result.tokens_after, result.summary,
                                result.from_notes)
    if hooks:
        post = await hooks.post_compact(
            reason, result.tokens_before, result.tokens_after, result.summary
        )
        for warning in post.warnings:
            yield ev.Notice(warning, "warning")
    if compactor.thrash_warning:
        yield ev.Notice(compactor.thrash_warning, "warning")
