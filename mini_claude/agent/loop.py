"""The agent loop: call the model, run the tools it asks for, repeat. Emits events, never prints.

Before every model call the context pipeline (tiers 1-3) runs; at the turn
boundary, and inside a turn when one turn alone outgrows the window, the
compactor summarizes. Every message goes to the transcript as it happens.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import asdict, replace
from typing import Any

from mini_claude import events as ev
from mini_claude.agent.history import AdmittedResult, History
from mini_claude.agent.hooks import HookOutcome, HookRunner
from mini_claude.agent.metered import MeteredProvider
from mini_claude.agent.mode_reminder import approved_plan, with_mode_reminder
from mini_claude.context.attachments import ApprovedPlanSource, PlanSource, SkillSource
from mini_claude.context.base import ResultStore
from mini_claude.context.cache_misses import CacheMissLog
from mini_claude.context.compact import CompactionError, Compactor, SummaryContext
from mini_claude.context.fold import fold_exchanges, folder_of
from mini_claude.context.ledger import Ledger
from mini_claude.context.meter import TokenMeter
from mini_claude.context.pipeline import ContextPipeline
from mini_claude.context.thinking import (
    ClearThinkingTier,
    close_thinking_loop,
    max_tokens_for,
    thinking_config,
    thinking_loop_open,
)
from mini_claude.context.tier import cache_is_cold
from mini_claude.conversation import (
    Conversation,
    Message,
    TextBlock,
    ToolUseBlock,
    user_text,
)
from mini_claude.pricing import CostTracker
from mini_claude.protocol import (
    AuthenticationFailed,
    CompactReason,
    ContextStatus,
    ModelRequest,
    ModelTextDelta,
    ModelThinking,
    PromptTooLong,
    Provider,
    ProviderError,
    ResponseComplete,
    StreamRestarted,
    TierReport,
    ToolOutput,
    ToolUseStarted,
    Usage,
)
from mini_claude.sanitize import EMPTY_REPLY_NOTICE, SurrogateHold, clean_text
from mini_claude.secrets import api_keys, mask
from mini_claude.settings import Settings
from mini_claude.text import format_tokens
from mini_claude.tools.base import ToolContext
from mini_claude.tools.common import error_output
from mini_claude.tools.registry import ToolRegistry
from mini_claude.transcript import Transcript

INTERRUPTED_TEXT = "[interrupted by the user]"


class Agent:
    """One conversation with one model; the UI drives it through :meth:`turn`."""

    def __init__(
        self,
        *,
        settings: Settings,
        provider: Provider,
        registry: ToolRegistry,
        tool_context: ToolContext,
        system_prompt: str,
        transcript: Transcript,
        store: ResultStore,
        clock: Callable[[], float] = time.monotonic,
        conversation: Conversation | None = None,
        hooks: HookRunner | None = None,
    ) -> None:
        self.settings = settings
        self.hooks = hooks or HookRunner([], cwd=tool_context.root, env=None)
        self._hook_warnings: list[str] = []
        self.provider = provider
        self.registry = registry
        self.tool_context = tool_context
        self.system_prompt = system_prompt
        self.tools = registry.specs()
        self.store = store
        self.clock = clock
        self.costs = CostTracker()
        self.cache_misses = CacheMissLog()
        self.clear_thinking = ClearThinkingTier()
        self.tokens_freed: dict[str, int] = {}
        self.compactions = 0
        self.pipeline_seconds: list[float] = []
        self.last_call_at: float | None = None
        self._side_events: asyncio.Queue[ev.Event] | None = None
        # Called at each turn start; new settings (a window the Models API reported) or None.
        self.settings_update: Callable[[], Settings | None] | None = None
        self.attach(transcript, conversation or Conversation())

    # ---- session plumbing -------------------------------------------------------------

    @property
    def fixed_chars(self) -> int:
        """Characters sent with every request besides the messages."""
        schemas = json.dumps([asdict(t) for t in self.tools], ensure_ascii=False)
        return len(self.system_prompt) + len(schemas)

    @property
    def conversation(self) -> Conversation:
        return self.history.conversation

    @property
    def transcript(self) -> Transcript:
        return self.history.transcript

    def attach(self, transcript: Transcript, conversation: Conversation) -> None:
        """Start over on a new (or resumed) conversation and transcript.

        The meter, the pipeline and the compactor are built here, once per history:
        their anchors, indexes and breaker describe one history under one set of settings.
        """
        self.history = History(transcript, conversation, self.store, self.settings)
        self.meter = TokenMeter(self.settings, fixed_chars=self.fixed_chars)
        self.pipeline = ContextPipeline(
            self.settings, self.store, self.meter, root=self.tool_context.root
        )
        self.compactor = Compactor(self.settings, self.meter, self.store)
        self.compactor.add_reattach_source(Ledger(self.settings, self._chars_per_token))
        self._add_reattach_sources()
        self.last_call_at = None

    def refresh_tools(self) -> None:
        """The registry gained tools (an MCP server connected): later requests carry them."""
        tools = self.registry.specs()
        if tools == self.tools:
            return
        self.tools = tools
        self.meter.schemas_changed(self.fixed_chars)

    def _chars_per_token(self) -> float:
        return self.meter.chars_per_token

    def _add_reattach_sources(self) -> None:
        """The plan and the loaded skills are written back verbatim after every summary."""
        context = self.tool_context
        self.compactor.add_reattach_source(PlanSource(context.plan))
        self.compactor.add_reattach_source(ApprovedPlanSource(lambda: approved_plan(context)))
        skill_chars = int(self.settings.reattach_skills_tokens * self.settings.chars_per_token)
        self.compactor.add_reattach_source(
            SkillSource(context.skills, context.loaded_skills, skill_chars)
        )

    def reconfigure(self, settings: Settings) -> None:
        """New settings (e.g. another model) for the same conversation; totals carry over."""
        self.settings = settings
        self.tool_context.settings = settings
        self.attach(self.transcript, self.conversation)

    def status(self) -> ContextStatus:
        return self.compactor.status(self.conversation)

    # ---- turns ------------------------------------------------------------------------

    async def turn(self, text: str, max_requests: int | None = None) -> AsyncIterator[ev.Event]:
        """Run one user request to completion, yielding events as they happen.

        With ``max_requests`` the turn stops, once the tools of that many model
        calls have run, with :class:`TurnLimitReached` (print mode's ``--max-turns``).
        """
        yield ev.TurnStarted(text)
        if not text.strip():
            yield ev.TurnError("nothing to send: the prompt is empty", "error")
            return
        unsendable = self._prompt_cannot_fit(text)
        if unsendable is not None:
            yield ev.TurnError(unsendable, "prompt_too_long")
            return
        updated = self.settings_update() if self.settings_update is not None else None
        if updated is not None:
            self.reconfigure(updated)
        self.compactor.note_turn_start()
        self.history.append(
            with_mode_reminder(self._with_plan_reminder(user_text(text)), self.tool_context.rules)
        )
        if self.compactor.should_auto_compact(self.conversation):
            async for event in self._compact("auto"):
                yield event
        elif self._cache_is_cold() and self.compactor.should_compact_when_idle(
            self.conversation, self._history_tokens()
        ):
            async for event in self._compact("idle"):
                yield event
        elif self.compactor.thrash_warning:
            yield ev.Notice(self.compactor.thrash_warning, "warning")
        async for event in self._loop(max_requests):
            yield event

    def _prompt_cannot_fit(self, text: str) -> str | None:
        """Refuse up front a prompt that alone outgrows the window: no tier can shrink the
        newest request, so sending it would only be refused (and retried)."""
        tokens = self.meter.tokens_for(len(text)) + round(self.meter.fixed_tokens)
        room = self.settings.effective_window
        if tokens <= room:
            return None
        return (
            f"the prompt is too long to send: about {format_tokens(tokens)} tokens with the "
            f"system prompt and tools, and the window holds {format_tokens(room)} after room "
            "for the answer; shorten it or send less"
        )

    def _cache_is_cold(self) -> bool:
        idle = self.settings.microcompact_idle_seconds
        return cache_is_cold(self.clock(), self.last_call_at, idle)

    def _history_tokens(self) -> int:
        """Estimated tokens of the messages alone (what a summary would replace)."""
        return max(0, self.meter.estimate(self.conversation) - round(self.meter.fixed_tokens))

    async def compact(self, focus: str | None = None) -> AsyncIterator[ev.Event]:
        """Manual `/compact [focus]`."""
        async for event in self._compact("manual", focus):
            yield event

    async def _loop(self, max_requests: int | None = None) -> AsyncIterator[ev.Event]:
        requests = 0
        retried_too_long = False
        while True:
            async for event in self._prepare_context():
                yield event
            requests += 1
            response: ResponseComplete | None = None
            try:
                async for item in self._call_model(requests):
                    if isinstance(item, ResponseComplete):
                        response = item
                    else:
                        yield item
            except PromptTooLong as exc:
                if retried_too_long or not self.settings.auto_compact:
                    yield ev.TurnError(exc.message, "prompt_too_long")
                    return
                retried_too_long = True
                yield ev.Notice(
                    f"the server said the prompt is too long ({exc.message}); compacting"
                )
                async for event in self._compact("prompt-too-long"):
                    yield event
                continue
            except ProviderError as exc:
                auth = isinstance(exc, AuthenticationFailed)
                kind: ev.TurnErrorKind = "auth" if auth else "error"
                self.transcript.event("error", message=exc.message)
                yield ev.TurnError(exc.message, kind)
                return
            assert response is not None
            retried_too_long = False  # the reactive path gets one retry per request, not per turn
            yield ev.AssistantMessage(response.message)
            self.tool_context.plan.note_model_call()
            uses = response.message.tool_uses
            if not response.message.blocks:
                yield ev.Notice(EMPTY_REPLY_NOTICE)
            if not uses:
                yield ev.TurnFinished(response.message.text, response.stop_reason, requests)
                return
            async for event in self._run_tools(uses):
                yield event
            if max_requests is not None and requests >= max_requests:
                self.transcript.event("turn_limit", requests=requests)
                yield ev.TurnLimitReached(requests)
                return

    async def _prepare_context(self) -> AsyncIterator[ev.Event]:
        """Tiers 1-3, then the mid-turn safety net; all before the next request."""
        started = time.perf_counter()
        # Inside a tool loop with thinking nothing before its last reply may change.
        loop_open = thinking_loop_open(self.conversation.messages)
        reports = [] if loop_open else self.pipeline.run(
            self.conversation, now=self.clock(), last_call_at=self.last_call_at
        )
        cleared = None if loop_open else self._clear_thinking(edited=bool(reports))
        self.pipeline_seconds.append(time.perf_counter() - started)
        for report in [*reports, *([cleared] if cleared else [])]:
            self._count_freed(report)
            self.cache_misses.note_edit(report.tier)
            yield ev.TierFired(report)
        focus = self.tool_context.compaction_focus
        if focus is not None:
            self.tool_context.compaction_focus = None
            async for event in self._compact("tool", focus or None):
                yield event
        elif self.settings.auto_compact and self.compactor.needs_mid_turn_compaction(
            self.conversation
        ):
            if self._summary_would_come_too_soon() and not loop_open:
                relief = self.pipeline.relieve_pressure(self.conversation)
                if relief is not None:
                    self._count_freed(relief)
                    self.cache_misses.note_edit(relief.tier)
                    yield ev.TierFired(relief)
            folded = None if loop_open else self._fold_cleared_calls()
            if folded is not None:
                self._count_freed(folded)
                self.cache_misses.note_edit(folded.tier)
                yield ev.TierFired(folded)
            if self.compactor.needs_mid_turn_compaction(self.conversation):
                async for event in self._compact("mid-turn"):
                    yield event

    def _clear_thinking(self, *, edited: bool) -> TierReport | None:
        report = self.clear_thinking.run(
            self.conversation, cache_cold=self._cache_is_cold(), history_edited=edited,
            chars_per_token=self.meter.chars_per_token,
        )
        if report is not None:
            self.transcript.thinking_cleared(len(self.conversation.messages))
        return report

    def _fold_cleared_calls(self) -> TierReport | None:
        """Fold old exchanges whose results were cleared: the room a summary would buy,
        without one, when a long turn's cleared calls are what fills the window."""
        if not self.settings.fold_cleared_calls:
            return None
        messages = self.conversation.messages
        folder = folder_of(messages)
        if folder is None:
            return None
        folded = fold_exchanges(messages, self.settings.fold_keep_messages, folder)
        if folded is None:
            return None
        after = self.meter.estimate_messages(folded.messages)
        if after > self.settings.autocompact_tokens:
            return None  # a summary comes anyway: folding would only break the cache first
        chars, tokens = self.conversation.total_chars, self.meter.estimate(self.conversation)
        before = list(messages)
        self.history.fold(folded)
        self.compactor.note_fold(before, folded.removed, self.conversation.epoch)
        return TierReport("fold", folded.exchanges, chars - self.conversation.total_chars,
                          max(0, tokens - after),
                          "old calls with cleared results folded to one line each")

    def _summary_would_come_too_soon(self) -> bool:
        """Little work since the last summary: clear old results instead of summarizing again.

        A summary keeps what results said, so it is the first choice; but one turn that
        refills the window every few calls would summarize over and over, and clearing
        (the text stays on disk) buys the same room without an API call.
        """
        if self.settings.autocompact_tokens > self.settings.relief_max_tokens:
            return False
        work = self.compactor.work_since_last_compaction(self.conversation)
        return work is not None and work < self.settings.summary_min_work

    def _count_freed(self, report: TierReport) -> None:
        self.tokens_freed[report.tier] = self.tokens_freed.get(report.tier, 0) + report.tokens_freed

    def _request(self) -> ModelRequest:
        thinking = thinking_config(self.settings)
        return ModelRequest(
            model=self.settings.model,
            system=self.system_prompt,
            messages=list(self.conversation.messages),
            tools=self.tools,
            max_tokens=max_tokens_for(
                thinking, min(self.settings.max_output_tokens, self.settings.reserve)
            ),
            thinking=thinking,
        )

    async def _call_model(self, number: int) -> AsyncIterator[ev.Event | ResponseComplete]:
        """Stream one reply; on interruption keep whatever text had arrived."""
        yield ev.ModelCallStarted(number, self.status())
        request = self._request()
        partial: list[str] = []
        held = SurrogateHold()
        started = time.perf_counter()
        try:
            async for event in self.provider.stream(request):
                if isinstance(event, ModelTextDelta):
                    partial.append(event.text)
                    shown = held.feed(event.text)
                    if shown:
                        yield ev.TextDelta(shown)
                elif isinstance(event, StreamRestarted):
                    partial.clear()
                    held = SurrogateHold()
                    yield ev.Retrying(event.attempt, event.delay_seconds, event.error)
                elif isinstance(event, ModelThinking):
                    yield ev.Thinking(event.chars, event.redacted, clean_text(event.text))
                elif isinstance(event, ToolUseStarted):
                    continue
                elif isinstance(event, ResponseComplete):
                    rest = held.flush()
                    if rest:
                        yield ev.TextDelta(rest)
                    event = self._record_response(event)
                    if event.usage is not None:
                        yield ev.UsageReported(event.usage, self.status(), self.costs.dollars)
                    yield event
        except (asyncio.CancelledError, GeneratorExit):
            if "".join(partial).strip():
                self.history.append(
                    Message("assistant", [TextBlock("".join(partial) + "\n" + INTERRUPTED_TEXT)])
                )
            self.transcript.event("interrupted", during="model call")
            raise
        finally:
            self.last_call_at = self.clock()
            self.costs.api_seconds += time.perf_counter() - started

    def _record_response(self, response: ResponseComplete) -> ResponseComplete:
        """Append the reply; returns it with the tool call ids it was recorded under."""
        if response.usage is not None:
            self.meter.observe(response.usage.prompt_tokens, self.conversation)
            self.costs.add(self.settings.model, response.usage)
        missed = self.cache_misses.observe(
            response.cache_miss, diagnosed=response.response_id is not None
        )
        if missed is not None:
            self.transcript.event(
                "cache_miss", reason=missed.reason, missed_tokens=missed.missed_tokens,
                after=list(missed.after),
            )
        message = self.history.append_reply(response.message)
        if message is not response.message:
            response = replace(response, message=message)
        if response.usage is not None:
            self.transcript.event("usage", model=self.settings.model, **asdict(response.usage))
        return response

    async def _run_tools(self, uses: list[ToolUseBlock]) -> AsyncIterator[ev.Event]:
        results: list[AdmittedResult] = []
        try:
            for batch in self._batches(uses):
                outputs: list[ToolOutput] = []
                for use in batch:
                    yield ev.ToolStarted(use.id, use.name, use.input)
                if len(batch) == 1 and not self._runs_concurrently(batch[0]):
                    outputs.append(await self._execute(batch[0]))
                else:
                    async for side_event in self._execute_together(batch, outputs):
                        yield side_event
                for use, output in zip(batch, outputs, strict=True):
                    result = self.history.admit(use, output)
                    if result.report is not None:
                        self._count_freed(result.report)
                        yield ev.TierFired(result.report)
                    results.append(result)
                    yield ev.ToolFinished(
                        use.id, use.name, result.block, output.display, output.display_kind,
                        original=output.content,
                    )
                    for event in self._after_tool(use, output):
                        yield event
        except (asyncio.CancelledError, GeneratorExit):
            self.history.close_results(uses, results, interrupted=True)
            raise
        self.history.close_results(uses, self._remind_in_results(results))

    # ---- calls that run together (sub-agents) -----------------------------------------

    def _runs_concurrently(self, use: ToolUseBlock) -> bool:
        return bool(getattr(self.registry.get(use.name), "concurrent", False))

    def _batches(self, uses: list[ToolUseBlock]) -> list[list[ToolUseBlock]]:
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
            await _settle(calls)
            raise
        finally:
            self._side_events = None
            for future in [*calls, waiting]:
                if future is not None:
                    future.cancel()

    async def _execute(self, use: ToolUseBlock) -> ToolOutput:
        before = await self.hooks.pre_tool_use(use.name, use.input) if self.hooks else None
        if before is not None:
            self._hook_warnings.extend(before.warnings)
            if before.block_reason is not None:
                return error_output(f"Blocked by a PreToolUse hook: {before.block_reason}")
        output = await self.registry.execute(use.name, use.input, self.tool_context)
        content = clean_text(output.content)
        display = clean_text(output.display) if output.display else output.display
        if content is not output.content or display is not output.display:
            output = replace(output, content=content, display=display)
        output = self._without_keys(output)
        if self.hooks:
            after = await self.hooks.post_tool_use(
                use.name, use.input, output.content, output.is_error
            )
            output = self._with_hook_feedback(output, after)
        return output

    def _with_hook_feedback(self, output: ToolOutput, outcome: HookOutcome) -> ToolOutput:
        self._hook_warnings.extend(outcome.warnings)
        if not outcome.feedback:
            return output
        feedback = "\n".join(outcome.feedback)
        return replace(output, content=f"{output.content}\n\n[PostToolUse hook]: {feedback}")

    def _after_tool(self, use: ToolUseBlock, output: ToolOutput) -> list[ev.Event]:
        """Hook warnings, and the plan or skill the tool changed (recorded for resume)."""
        events: list[ev.Event] = [ev.Notice(w, "warning") for w in self._hook_warnings]
        self._hook_warnings.clear()
        if output.is_error:
            return events
        context = self.tool_context
        if use.name == "todo_write":
            items = context.plan.items
            self.transcript.event("todos", todos=[item.to_dict() for item in items])
            events.append(ev.PlanUpdated(items))
        elif use.name == "skill" and len(context.loaded_skills):
            self.transcript.event("skill_loaded", name=context.loaded_skills.newest_first()[0])
        return events

    def _with_plan_reminder(self, message: Message) -> Message:
        """A reminder rides on the newest message, so the cached prefix stays as it was."""
        reminder = self.tool_context.plan.reminder(self.settings.todo_reminder_calls)
        if reminder is None:
            return message
        return Message(message.role, [*message.blocks, TextBlock(reminder)])

    def _remind_in_results(self, results: list[AdmittedResult]) -> list[AdmittedResult]:
        reminder = self.tool_context.plan.reminder(self.settings.todo_reminder_calls)
        if reminder is None or not results:
            return results
        last = results[-1]
        block = replace(last.block, content=f"{last.block.content}\n\n{reminder}")
        original = replace(last.original, content=f"{last.original.content}\n\n{reminder}")
        return [*results[:-1], AdmittedResult(block, original, last.report)]

    def _without_keys(self, output: ToolOutput) -> ToolOutput:
        """A tool may print one of our API keys (``cat .env``); it must not reach the
        history, the saved results, the screen or the next request."""
        keys = api_keys(self.settings)
        content = mask(output.content, keys)
        display = mask(output.display, keys) if output.display else output.display
        if content == output.content and display == output.display:
            return output
        return replace(output, content=content, display=display)

    # ---- compaction -------------------------------------------------------------------

    def summary_context(self) -> SummaryContext:
        return SummaryContext(
            provider=MeteredProvider(self.provider, self.costs, summary=True,
                                     record=self._record_summary_usage),
            model=self.settings.compact_model or self.settings.model,
            system=self.system_prompt,
            tools=self.tools,
            root=self.tool_context.root,
            transcript_path=str(self.transcript.path),
            thinking=thinking_config(self.settings) if not self.settings.compact_model else None,
        )

    def _record_summary_usage(self, model: str, usage: Usage) -> None:
        """Summary calls are counted on resume too (see ``CostTracker.replay``)."""
        self.transcript.event("usage", model=model, summary=True, **asdict(usage))

    async def _compact(
        self, reason: CompactReason, focus: str | None = None
    ) -> AsyncIterator[ev.Event]:
        before = self.meter.estimate(self.conversation)
        yield ev.CompactionStarted(reason, before)
        instructions: str | None = None
        if self.hooks:
            pre = await self.hooks.pre_compact(reason, focus)
            for warning in pre.warnings:
                yield ev.Notice(warning, "warning")
            instructions = "\n\n".join(pre.instructions) or None
        try:
            result = await self.compactor.compact(
                self.conversation,
                self.summary_context(),
                reason=reason,
                focus=focus,
                instructions=instructions,
            )
        except CompactionError as exc:
            self.transcript.event("compaction_failed", reason=reason, error=str(exc))
            yield ev.CompactionFailed(reason, str(exc), self.compactor.breaker_open,
                                      self.compactor.consecutive_failures)
            return
        self.compactions += 1
        closed = close_thinking_loop(self.conversation.messages)
        if closed is not None:  # thinking whose history the summary replaced is void
            self.conversation.replace_all(closed)
        self.cache_misses.note_edit(f"compaction ({reason})")
        self.last_call_at = self.clock()  # the summary call was a model call too
        self.history.record_compaction(
            reason, result.summary, result.tokens_before, result.tokens_after
        )
        yield ev.CompactionFinished(
            reason, result.tokens_before, result.tokens_after, result.summary
        )
        if self.hooks:
            post = await self.hooks.post_compact(
                reason, result.tokens_before, result.tokens_after, result.summary
            )
            for warning in post.warnings:
                yield ev.Notice(warning, "warning")
        if self.compactor.thrash_warning:
            yield ev.Notice(self.compactor.thrash_warning, "warning")

    # ---- introspection ----------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Numbers for /cost, the benchmark and tests."""
        return {
            "requests": self.costs.requests,
            "usage": asdict(self.costs.usage),
            "cost_usd": self.costs.dollars,
            "compactions": self.compactions,
            "tokens_freed": dict(self.tokens_freed),
            "cache_misses": len(self.cache_misses.misses),
        }


SETTLE_SECONDS = 5.0


async def _settle(calls: Sequence[asyncio.Future[ToolOutput]]) -> None:
    """Cancel the calls and give them a moment to clean up (a sub-agent closes its history
    and notes the interruption in its transcript) before the turn ends."""
    for call in calls:
        call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait(calls, timeout=SETTLE_SECONDS)

