"""Running the tool calls of one reply: batches, hooks, tier 0, and every call answered.

Calls run in order; neighbouring calls of a concurrent tool (task) form one batch
that runs at once, and what those calls publish while they run (a sub-agent's
progress) is passed on as it comes. Each output is cleaned, stripped of our API
keys, shown to the PostToolUse hooks, admitted through tier 0, and its effects
(a plan changed, a skill loaded, a summary requested) are handled here, by kind,
never by the tool's name. A call whose tool streams its output (run_shell) also runs
beside the turn, so its live lines reach the UI. On interruption every call still gets
a result, with what it printed so far.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from typing import Any

from mini_claude import events as ev
from mini_claude.agent.context_steps import ContextSteps
from mini_claude.agent.current_call import CURRENT_CALL
from mini_claude.agent.history import AdmittedResult
from mini_claude.agent.hooks import HookOutcome, HookRunner
from mini_claude.agent.lifecycle import LifecycleHooks
from mini_claude.agent.live_calls import LiveCalls
from mini_claude.agent.loop_guard import LoopGuard, Thresholds
from mini_claude.agent.step_end import StepEnd
from mini_claude.conversation import ToolUseBlock
from mini_claude.project.rules import PathRules
from mini_claude.protocol import (
    CompactionRequested,
    PlanChanged,
    SkillLoaded,
    ToolEffect,
    ToolOutput,
)
from mini_claude.sanitize import clean_text
from mini_claude.secrets import api_keys, mask
from mini_claude.steering import SteeringQueue
from mini_claude.tools.base import ToolContext
from mini_claude.tools.common import error_output
from mini_claude.tools.registry import ToolRegistry

SETTLE_SECONDS = 5.0


class ToolCalls:
    """Runs the calls of one reply after another and records their results."""

    def __init__(
        self,
        *,
        registry: ToolRegistry,
        tool_context: ToolContext,
        context: ContextSteps,
        hooks: Callable[[], HookRunner],
        path_rules: PathRules | None = None,
        lifecycle: LifecycleHooks | None = None,
        step_end: StepEnd | None = None,
    ) -> None:
        self.registry = registry
        # Reminders and steering messages ride on each step's results as they go in.
        self.step_end = step_end or StepEnd(tool_context, SteeringQueue(), LoopGuard(Thresholds()))
        self.tool_context = tool_context
        self.context = context
        self.hooks = hooks
        self.path_rules = path_rules or PathRules((), tool_context.root)
        # Notes a hook's "continue": false; the turn ends once the results are in.
        self.lifecycle = lifecycle or LifecycleHooks()
        self._hook_warnings: list[str] = []
        self._side_events: asyncio.Queue[ev.Event] | None = None
        self.live_calls = LiveCalls(
            self.publish, tool_context.settings.shell_progress_interval_seconds, tool_context
        )

    async def run(self, uses: list[ToolUseBlock]) -> AsyncIterator[ev.Event]:
        """Run every call; the history gets one result per call, interrupted or not."""
        history = self.context.history
        results: list[AdmittedResult] = []
        try:
            for batch in self.batches(uses):
                outputs: list[ToolOutput] = []
                for use in batch:
                    yield ev.ToolStarted(use.id, use.name, use.input)
                if len(batch) == 1 and not self._runs_concurrently(batch[0]) and not (
                    self.registry.traits(batch[0].name).streams_output
                ):
                    outputs.append(await self._execute(batch[0]))
                else:
                    async for side_event in self._execute_together(batch, outputs):
                        yield side_event
                for use, output in zip(batch, outputs, strict=True):
                    result = history.admit(use, output)
                    if result.report is not None:
                        self.context.count_freed(result.report)
                        yield ev.TierFired(result.report)
                    results.append(result)
                    yield ev.ToolFinished(
                        use.id, use.name, result.block, output.display, output.display_kind,
                        original=output.content,
                    )
                    for event in self._after_tool(output):
                        yield event
        except (asyncio.CancelledError, GeneratorExit):
            history.close_results(
                uses, results, interrupted=True, partial=self.live_calls.partials()
            )
            raise
        for event in self.step_end.close(history, uses, results):
            yield event

    # ---- calls that run together (sub-agents) -----------------------------------------

    def _runs_concurrently(self, use: ToolUseBlock) -> bool:
        return self.registry.traits(use.name).concurrent

    def batches(self, uses: list[ToolUseBlock]) -> list[list[ToolUseBlock]]:
        """Calls in order; neighbouring calls of a concurrent tool (task) form one batch."""
        batches: list[list[ToolUseBlock]] = []
        for use in uses:
            together = self._runs_concurrently(use)
            if together and batches and self._runs_concurrently(batches[-1][0]):
                batches[-1].append(use)
            else:
                batches.append([use])
        return batches

    def publish(self, event: ev.Event) -> None:
        """An event from work running beside the loop (a sub-agent's progress).

        It reaches the UI while a batch of concurrent calls runs; at any other time
        there is nobody to tell, and it is dropped.
        """
        if self._side_events is not None:
            self._side_events.put_nowait(event)

    async def _execute_together(
        self, batch: list[ToolUseBlock], outputs: list[ToolOutput]
    ) -> AsyncIterator[ev.Event]:
        """Run the batch at once, yielding published events; outputs come in call order."""
        queue: asyncio.Queue[ev.Event] = asyncio.Queue()
        self._side_events = queue
        calls = [asyncio.ensure_future(self._execute(use)) for use in batch]
        waiting: asyncio.Future[ev.Event] | None = None
        try:
            pending: set[asyncio.Future[Any]] = set(calls)
            while pending:
                waiting = waiting or asyncio.ensure_future(queue.get())
                done, pending = await asyncio.wait(
                    {*pending, waiting}, return_when=asyncio.FIRST_COMPLETED
                )
                if waiting in done:
                    yield waiting.result()
                    done.discard(waiting)
                    waiting = None
                else:
                    pending.discard(waiting)
                if any(call.cancelled() for call in done):
                    raise asyncio.CancelledError  # a question was answered with Esc
            while not queue.empty():
                yield queue.get_nowait()
            outputs.extend(call.result() for call in calls)
        except asyncio.CancelledError:
            await settle(calls)
            raise
        finally:
            self._side_events = None
            for future in [*calls, waiting]:
                if future is not None:
                    future.cancel()

    # ---- one call ---------------------------------------------------------------------

    async def _execute(self, use: ToolUseBlock) -> ToolOutput:
        token = CURRENT_CALL.set(use)
        try:
            return await self._execute_call(use)
        finally:
            CURRENT_CALL.reset(token)

    async def _execute_call(self, use: ToolUseBlock) -> ToolOutput:
        hooks = self.hooks()
        before = await hooks.pre_tool_use(use.name, use.input) if hooks else None
        if before is not None:
            self._hook_warnings.extend(before.warnings)
            if before.block_reason is not None:
                return error_output(f"Blocked by a PreToolUse hook: {before.block_reason}")
            if self.lifecycle.stops_turn(before):
                return error_output(f"Stopped by a PreToolUse hook: {before.stop_reason}")
        self.live_calls.start(use)
        output = await self.registry.execute(use.name, use.input, self.tool_context)
        self.live_calls.finished(use)
        content = clean_text(output.content)
        display = clean_text(output.display) if output.display else output.display
        if content is not output.content or display is not output.display:
            output = replace(output, content=content, display=display)
        output = self._without_keys(output)
        if hooks:
            after = await hooks.post_tool_use(
                use.name, use.input, output.content, output.is_error
            )
            output = self._with_hook_feedback(output, after)
        return self._with_rules(use, output)

    def _with_rules(self, use: ToolUseBlock, output: ToolOutput) -> ToolOutput:
        """A path-scoped rule the call brings in rides on its result (the newest message)."""
        argument = self.registry.traits(use.name).file_argument
        if output.is_error or argument is None:
            return output
        reminder = self.path_rules.reminder_for(use.input.get(argument))
        return replace(output, content=f"{output.content}\n\n{reminder}") if reminder else output

    def _with_hook_feedback(self, output: ToolOutput, outcome: HookOutcome) -> ToolOutput:
        self._hook_warnings.extend(outcome.warnings)
        self.lifecycle.stops_turn(outcome)
        if not outcome.feedback:
            return output
        feedback = "\n".join(outcome.feedback)
        return replace(output, content=f"{output.content}\n\n[PostToolUse hook]: {feedback}")

    def _without_keys(self, output: ToolOutput) -> ToolOutput:
        """A tool may print one of our API keys (``cat .env``); it must not reach the
        history, the saved results, the screen or the next request."""
        keys = api_keys(self.tool_context.settings)
        content = mask(output.content, keys)
        display = mask(output.display, keys) if output.display else output.display
        if content == output.content and display == output.display:
            return output
        return replace(output, content=content, display=display)

    def _after_tool(self, output: ToolOutput) -> list[ev.Event]:
        """Hook warnings, then what the call changed besides its result."""
        events: list[ev.Event] = [ev.Notice(w, "warning") for w in self._hook_warnings]
        self._hook_warnings.clear()
        for effect in output.effects:
            events.extend(self._apply(effect))
        return events

    def _apply(self, effect: ToolEffect) -> list[ev.Event]:
        """One effect: recorded for resume, shown, or handed to the context steps."""
        transcript = self.context.history.transcript
        if isinstance(effect, PlanChanged):
            items = self.tool_context.plan.items
            transcript.event("todos", todos=[item.to_dict() for item in items])
            return [ev.PlanUpdated(items)]
        if isinstance(effect, SkillLoaded):
            transcript.event("skill_loaded", name=effect.name)
        elif isinstance(effect, CompactionRequested):
            self.context.request_summary(effect.focus)
        return []


async def settle(calls: Sequence[asyncio.Future[ToolOutput]]) -> None:
    """Cancel the calls and give them a moment to clean up (a sub-agent closes its history
    and notes the interruption in its transcript) before the turn ends."""
    for call in calls:
        call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait(calls, timeout=SETTLE_SECONDS)
