"""The agent loop: call the model, run the tools it asks for, repeat. Emits events, never prints.

Before every model call the context pipeline (tiers 1-3) runs; at the turn
boundary, and inside a turn when one turn alone outgrows the window, the
compactor summarizes. Every message goes to the transcript as it happens.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, replace
from typing import Any

from mini_claude import events as ev
from mini_claude.context.base import ResultStore
from mini_claude.context.compact import CompactionError, Compactor, SummaryContext
from mini_claude.context.meter import TokenMeter
from mini_claude.context.pipeline import ContextPipeline
from mini_claude.context.tier import cache_is_cold
from mini_claude.conversation import (
    Conversation,
    Message,
    TextBlock,
    ToolUseBlock,
    user_text,
)
from mini_claude.history import AdmittedResult, History
from mini_claude.metered import MeteredProvider
from mini_claude.pricing import CostTracker
from mini_claude.protocol import (
    AuthenticationFailed,
    CompactReason,
    ContextStatus,
    ModelRequest,
    ModelTextDelta,
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
    ) -> None:
        self.settings = settings
        self.provider = provider
        self.registry = registry
        self.tool_context = tool_context
        self.system_prompt = system_prompt
        self.tools = registry.specs()
        self.store = store
        self.clock = clock
        self.costs = CostTracker()
        self.tokens_freed: dict[str, int] = {}
        self.compactions = 0
        self.pipeline_seconds: list[float] = []
        self.last_call_at: float | None = None
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
        self.last_call_at = None

    def refresh_tools(self) -> None:
        """The registry gained tools (an MCP server connected): later requests carry them."""
        tools = self.registry.specs()
        if tools == self.tools:
            return
        self.tools = tools
        self.meter.schemas_changed(self.fixed_chars)

    def reconfigure(self, settings: Settings) -> None:
        """New settings (e.g. another model) for the same conversation; totals carry over."""
        self.settings = settings
        self.tool_context.settings = settings
        self.attach(self.transcript, self.conversation)

    def status(self) -> ContextStatus:
        return self.meter.status(self.conversation)

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
        self.compactor.note_turn_start()
        self.history.append(user_text(text))
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
        reports = self.pipeline.run(
            self.conversation, now=self.clock(), last_call_at=self.last_call_at
        )
        self.pipeline_seconds.append(time.perf_counter() - started)
        for report in reports:
            self._count_freed(report)
            yield ev.TierFired(report)
        focus = self.tool_context.compaction_focus
        if focus is not None:
            self.tool_context.compaction_focus = None
            async for event in self._compact("tool", focus or None):
                yield event
        elif self.settings.auto_compact and self.compactor.needs_mid_turn_compaction(
            self.conversation
        ):
            if self._summary_would_come_too_soon():
                relief = self.pipeline.relieve_pressure(self.conversation)
                if relief is not None:
                    self._count_freed(relief)
                    yield ev.TierFired(relief)
            if self.compactor.needs_mid_turn_compaction(self.conversation):
                async for event in self._compact("mid-turn"):
                    yield event

    def _summary_would_come_too_soon(self) -> bool:
        """Little work since the last summary: clear old results instead of summarizing again.

        A summary keeps what results said, so it is the first choice; but one turn that
        refills the window every few calls would summarize over and over, and clearing
        (the text stays on disk) buys the same room without an API call.
        """
        work = self.compactor.work_since_last_compaction(self.conversation)
        return work is not None and work < self.settings.summary_min_work

    def _count_freed(self, report: TierReport) -> None:
        self.tokens_freed[report.tier] = self.tokens_freed.get(report.tier, 0) + report.tokens_freed

    def _request(self) -> ModelRequest:
        return ModelRequest(
            model=self.settings.model,
            system=self.system_prompt,
            messages=list(self.conversation.messages),
            tools=self.tools,
            max_tokens=min(self.settings.max_output_tokens, self.settings.reserve),
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
        message = self.history.append_reply(response.message)
        if message is not response.message:
            response = ResponseComplete(message, response.stop_reason, response.usage)
        if response.usage is not None:
            self.transcript.event("usage", model=self.settings.model, **asdict(response.usage))
        return response

    async def _run_tools(self, uses: list[ToolUseBlock]) -> AsyncIterator[ev.Event]:
        results: list[AdmittedResult] = []
        try:
            for use in uses:
                yield ev.ToolStarted(use.id, use.name, use.input)
                output = await self._execute(use)
                result = self.history.admit(use, output)
                if result.report is not None:
                    self._count_freed(result.report)
                    yield ev.TierFired(result.report)
                results.append(result)
                yield ev.ToolFinished(
                    use.id, use.name, result.block, output.display, output.display_kind,
                    original=output.content,
                )
        except (asyncio.CancelledError, GeneratorExit):
            self.history.close_results(uses, results, interrupted=True)
            raise
        self.history.close_results(uses, results)

    async def _execute(self, use: ToolUseBlock) -> ToolOutput:
        output = await self.registry.execute(use.name, use.input, self.tool_context)
        content = clean_text(output.content)
        display = clean_text(output.display) if output.display else output.display
        if content is not output.content or display is not output.display:
            output = replace(output, content=content, display=display)
        return self._without_keys(output)

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
        )

    def _record_summary_usage(self, model: str, usage: Usage) -> None:
        """Summary calls are counted on resume too (see ``CostTracker.replay``)."""
        self.transcript.event("usage", model=model, summary=True, **asdict(usage))

    async def _compact(
        self, reason: CompactReason, focus: str | None = None
    ) -> AsyncIterator[ev.Event]:
        before = self.meter.estimate(self.conversation)
        yield ev.CompactionStarted(reason, before)
        try:
            result = await self.compactor.compact(
                self.conversation, self.summary_context(), reason=reason, focus=focus
            )
        except CompactionError as exc:
            self.transcript.event("compaction_failed", reason=reason, error=str(exc))
            yield ev.CompactionFailed(reason, str(exc), self.compactor.breaker_open)
            if self.compactor.breaker_open:
                yield ev.Notice(
                    "auto-compact stopped after repeated failures; older tool results will "
                    "still be "
                    "cleared, and /compact can be tried by hand",
                    "warning",
                )
            return
        self.compactions += 1
        self.last_call_at = self.clock()  # the summary call was a model call too
        self.history.record_compaction(
            reason, result.summary, result.tokens_before, result.tokens_after
        )
        yield ev.CompactionFinished(
            reason, result.tokens_before, result.tokens_after, result.summary
        )
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
        }
