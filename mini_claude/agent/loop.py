"""The agent loop: prepare the context, call the model, run the tools it asks for, repeat.

Every decision about the context lives in :mod:`context_steps`, tool execution in
:mod:`tool_calls`; this module keeps the turn itself. It emits events, never prints.
Every message goes to the transcript as it happens.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from mini_claude import events as ev
from mini_claude.agent.context_steps import ContextSteps
from mini_claude.agent.history import History
from mini_claude.agent.hooks import HookRunner
from mini_claude.agent.keep_warm import CacheKeeper
from mini_claude.agent.lifecycle import LifecycleHooks
from mini_claude.agent.loop_guard import LoopGuard, thresholds_from
from mini_claude.agent.metered import MeteredProvider
from mini_claude.agent.mode_reminder import with_mode_reminder
from mini_claude.agent.reminders import with_plan_reminder
from mini_claude.agent.reply_stream import ReplyStream
from mini_claude.agent.requests import fixed_chars, next_request, summary_context
from mini_claude.agent.step_end import StepEnd
from mini_claude.agent.tool_calls import ToolCalls
from mini_claude.context.base import ResultStore
from mini_claude.context.compact import RangeSummary, SummaryContext
from mini_claude.conversation import (
    Conversation,
    ImageBlock,
    Message,
    TextBlock,
    ToolUseBlock,
    user_text,
)
from mini_claude.pricing import CostTracker
from mini_claude.project.rules import PathRules
from mini_claude.protocol import (
    AuthenticationFailed,
    ContextStatus,
    PromptTooLong,
    Provider,
    ProviderError,
    ResponseComplete,
    Usage,
)
from mini_claude.sanitize import EMPTY_REPLY_NOTICE
from mini_claude.settings import Settings
from mini_claude.steering import SteeringQueue
from mini_claude.tools.base import ToolContext
from mini_claude.tools.registry import ToolRegistry
from mini_claude.transcript import Transcript


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
        path_rules: PathRules | None = None,
        lifecycle: LifecycleHooks | None = None,
    ) -> None:
        self.settings = settings
        self.hooks = hooks or HookRunner([], cwd=tool_context.root, env=None)
        self.lifecycle = lifecycle or LifecycleHooks(continue_limit=settings.stop_hook_limit)
        self.path_rules = path_rules or PathRules((), tool_context.root)
        self.provider = provider
        self.registry = registry
        self.tool_context = tool_context
        self.system_prompt = system_prompt
        self.tools = registry.specs()
        self.store = store
        self.clock = clock
        self.costs = CostTracker()
        self.steps = ContextSteps(
            store=store, tool_context=tool_context, clock=lambda: self.clock(),
            hooks=lambda: self.hooks, summary_context=self.summary_context,
            path_rules=self.path_rules, lifecycle=self.lifecycle,
        )
        # Messages the user sends while a turn runs, for its next model call (see steer).
        self.steering = SteeringQueue()
        # When the model answers without tools while steering messages wait: True sends them
        # and the turn goes on (the REPL); False ends the turn and leaves them for the front end
        # to send as the next turn (stream-json input, as Claude Code does there).
        self.steering_extends_turn = True
        self.loop_guard = LoopGuard(thresholds_from(settings), settings.loop_guard_reminders)
        self.tool_calls = ToolCalls(registry=registry, tool_context=tool_context,
                                    context=self.steps, hooks=lambda: self.hooks,
                                    path_rules=self.path_rules, lifecycle=self.lifecycle,
                                    step_end=StepEnd(tool_context, self.steering, self.loop_guard))
        # Asked before each request; new settings (a window the Models API reported) or None.
        self.settings_update: Callable[[], Settings | None] | None = None
        self.cache_keeper = self._cache_keeper()
        self.attach(transcript, conversation or Conversation())

    def _cache_keeper(self) -> CacheKeeper:
        """Pings are metered and recorded like any call; only Anthropic states a cache life."""
        def record(model: str, usage: Usage) -> None:
            self.transcript.event("usage", model=model, ping=True, **asdict(usage))

        pings = self.settings.cache_keepalive_pings if self.provider.name == "anthropic" else 0
        return CacheKeeper(MeteredProvider(self.provider, self.costs, summary=False, ping=True,
                                           record=record),
                           pings=pings, interval=self.settings.cache_keepalive_seconds,
                           last_call_at=lambda: self.steps.last_call_at,
                           call_made=self.steps.call_ended,
                           worth_keeping=self.steps.room_for_a_page)

    async def keep_cache_warm(self, wait_until: Callable[[float], Awaitable[None]],
                              end: float | None = None) -> None:
        """While the user is away: keep the last request cached (see agent/keep_warm.py)."""
        await self.cache_keeper.keep_until(self.conversation, self.clock, wait_until, end)

    # ---- session plumbing -------------------------------------------------------------

    @property
    def fixed_chars(self) -> int:
        """Characters sent with every request besides the messages."""
        return fixed_chars(self.system_prompt, self.tools)

    @property
    def conversation(self) -> Conversation:
        return self.history.conversation

    @property
    def transcript(self) -> Transcript:
        return self.history.transcript

    def attach(self, transcript: Transcript, conversation: Conversation) -> None:
        """Start over on a new (or resumed) conversation and transcript."""
        self.history = History(transcript, conversation, self.store, self.settings)
        self.steps.attach(self.history, self.settings, self.fixed_chars)

    def refresh_tools(self) -> None:
        """The registry gained tools (an MCP server connected): later requests carry them."""
        tools = self.registry.specs()
        if tools == self.tools:
            return
        self.tools = tools
        self.steps.meter.schemas_changed(self.fixed_chars)

    def reconfigure(
        self,
        settings: Settings | None = None,
        *,
        system_prompt: str | None = None,
        hooks: HookRunner | None = None,
        command_env: dict[str, str] | None = None,
    ) -> None:
        """The one way to change a running agent, so every part that reads a setting (the
        meter, the tiers, the loop guard, the tools) sees the same ones: new settings
        (another model, a thinking budget, a learnt window), a system prompt, hooks or the
        environment of commands. The conversation and the totals carry over."""
        if hooks is not None:
            self.hooks = hooks
        if command_env is not None:
            self.tool_context.env = command_env
        if system_prompt is not None and system_prompt != self.system_prompt:
            self.system_prompt = system_prompt
            self.steps.meter.schemas_changed(self.fixed_chars)
        if settings is None:
            return
        self.settings = settings
        self.tool_context.settings = settings
        self.loop_guard.thresholds = thresholds_from(settings)
        self.loop_guard.reminders_before_notice = settings.loop_guard_reminders
        self.cache_keeper = self._cache_keeper()  # another model or thinking: another cache
        self.attach(self.transcript, self.conversation)

    async def close(self) -> None:
        """The session ends: no notes request outlives it (its answer would find no one)."""
        await self.steps.cancel_notes()

    def adopt_settings_update(self) -> None:
        """Take settings that changed since the last request (the Models API answered while
        a turn was running): every threshold governs the very next request."""
        updated = self.settings_update() if self.settings_update is not None else None
        if updated is not None:
            self.reconfigure(updated)

    def status(self) -> ContextStatus:
        return self.steps.status()

    def publish(self, event: ev.Event) -> None:
        """An event from work running beside the loop (a sub-agent's progress)."""
        self.tool_calls.publish(event)

    # ---- steering -----------------------------------------------------------------------

    def steer(self, text: str) -> bool:
        """Send ``text`` into the running turn: the model reads it before its next call
        (after the current step's tool results, or as a message of its own when the
        model has just answered). False, and nothing queued, for blank text.

        Any front end may call it, on the event loop's thread, while :meth:`turn` runs (or
        just before); what is still waiting when the turn ends early (an interruption, an
        error, or an answer without tools when :attr:`steering_extends_turn` is off) is
        returned by :meth:`take_steering`.
        """
        return self.steering.add(text)

    def send_commands_to_background(self) -> int:
        """Move the shell commands running in the foreground now (this agent's and its
        sub-agents') to the background: each call returns at once with a shell id, and the
        command goes on. How many were moved; with none running, nothing happens.

        Any front end may call it (Ctrl-B in the REPL), on the event loop's thread.
        """
        return self.tool_context.shells.send_to_background()

    def take_steering(self) -> list[str]:
        """Steering messages not delivered yet, removed (to give them back to the user)."""
        return self.steering.take()

    def _deliver_steering_alone(self) -> list[ev.Event]:
        """The model answered without tools while messages wait: they go as a user message
        of their own, and the turn goes on."""
        texts = self.steering.take()
        self.history.append(Message("user", [TextBlock(text) for text in texts]))
        events: list[ev.Event] = []
        for text in texts:
            self.transcript.steering(text)
            events.append(ev.SteeringDelivered(text))
        return events

    # ---- turns ------------------------------------------------------------------------

    async def turn(
        self, text: str, max_requests: int | None = None, images: Sequence[ImageBlock] = ()
    ) -> AsyncIterator[ev.Event]:
        """Run one user request to completion, yielding events as they happen.

        With ``max_requests`` the turn stops, once the tools of that many model
        calls have run, with :class:`TurnLimitReached` (print mode's ``--max-turns``).
        ``images`` (pasted or mentioned) go with the text.
        """
        yield ev.TurnStarted(text)
        if not text.strip():
            yield ev.TurnError("nothing to send: the prompt is empty", "error")
            return
        self.adopt_settings_update()
        unsendable = self.steps.prompt_cannot_fit(text)
        if unsendable is not None:
            yield ev.TurnError(unsendable, "prompt_too_long")
            return
        async for event in self.lifecycle.before_prompt(self.hooks, text):
            yield event
        if self.lifecycle.blocked:
            return
        reminder_after = self.settings.todo_reminder_calls
        message = user_text(text)
        message.blocks.extend(images)
        message = with_mode_reminder(
            with_plan_reminder(message, self.tool_context.plan, reminder_after),
            self.tool_context.rules,
        )
        self.tool_context.checkpoints.at_turn_boundary()
        self.history.append(self.lifecycle.with_context(message))
        self.loop_guard.start_turn()
        async for event in self.steps.at_turn_start():
            yield event
        async for event in self._loop(max_requests):
            yield event

    async def compact(self, focus: str | None = None) -> AsyncIterator[ev.Event]:
        """Manual `/compact [focus]`."""
        async for event in self.steps.summarize("manual", focus):
            yield event

    async def summarize_range(
        self, start: int, end: int, instructions: str | None = None
    ) -> RangeSummary:
        """Replace ``messages[start:end]`` with a summary, guided by ``instructions``; the
        messages around it stay as they were. Raises :class:`CompactionError` (nothing
        changed) when no summary could be made."""
        return await self.steps.summarize_range(start, end, instructions)

    async def _loop(self, max_requests: int | None = None) -> AsyncIterator[ev.Event]:
        """Prepare the context, call the model, run the tools it asks for; repeat."""
        requests = 0
        while True:
            requests += 1
            step = _Step(requests)
            async for event in self._request(step):
                yield event
            if step.response is not None:
                async for event in self._take_reply(step.response, step):
                    yield event
            if step.turn_over:
                return
            if step.uses:
                async for event in self._run_tools(step, max_requests):
                    yield event
                if step.turn_over:
                    return

    async def _request(self, step: _Step) -> AsyncIterator[ev.Event]:
        """Prepare the context and make one call; no response and the turn not over means
        the context was summarized after "prompt too long": the same call again, smaller."""
        self.adopt_settings_update()
        async for event in self.steps.before_call():
            yield event
        refused = False
        async for item in self._call_model(step.number):
            if isinstance(item, ResponseComplete):
                step.response = item
            else:
                refused = refused or isinstance(item, ev.TurnError)
                yield item
        step.turn_over = refused and step.response is None

    async def _take_reply(self, response: ResponseComplete, step: _Step) -> AsyncIterator[ev.Event]:
        """Show the reply; then its tool calls run, waiting messages go in, or the turn ends."""
        yield ev.AssistantMessage(response.message)
        self.tool_context.plan.note_model_call()
        if not response.message.blocks:
            yield ev.Notice(EMPTY_REPLY_NOTICE)
        step.uses = response.message.tool_uses
        steered = not step.uses and self.steering_extends_turn and bool(self.steering.pending)
        # session notes, beside the tools or the user's reading
        self.steps.after_reply(ends_turn=not step.uses and not steered)
        if steered:
            for event in self._deliver_steering_alone():
                yield event
        elif not step.uses:
            async for event in self._stop_unless_continued(response, step):
                yield event

    async def _stop_unless_continued(
        self, response: ResponseComplete, step: _Step
    ) -> AsyncIterator[ev.Event]:
        """The model is done: the Stop hooks may send it on, or the turn finishes."""
        async for event in self.lifecycle.at_stop(self.hooks, self.history):
            yield event
        if not self.lifecycle.continuing:
            yield ev.TurnFinished(response.message.text, response.stop_reason, step.number)
            step.turn_over = True

    async def _run_tools(self, step: _Step, max_requests: int | None) -> AsyncIterator[ev.Event]:
        """Run the reply's calls; a hook's "continue": false or the turn limit ends the turn."""
        async for event in self.tool_calls.run(step.uses):
            yield event
        if self.lifecycle.stop_requested is not None:
            for event in self.lifecycle.turn_stopped(step.number):
                yield event
            step.turn_over = True
        elif max_requests is not None and step.number >= max_requests:
            self.transcript.event("turn_limit", requests=step.number)
            yield ev.TurnLimitReached(step.number)
            step.turn_over = True

    async def _call_model(self, number: int) -> AsyncIterator[ev.Event | ResponseComplete]:
        """One call; a refusal ends the turn with a TurnError, unless "prompt too long"
        can be answered with a summary (then no ResponseComplete and no TurnError)."""
        try:
            async for item in self._stream_reply(number):
                yield item
        except PromptTooLong as exc:
            async for event in self.steps.after_prompt_too_long(exc.message):
                yield event
        except ProviderError as exc:
            auth = isinstance(exc, AuthenticationFailed)
            self.transcript.event("error", message=exc.message)
            yield ev.TurnError(exc.message, "auth" if auth else "error", exc.status)

    async def _stream_reply(self, number: int) -> AsyncIterator[ev.Event | ResponseComplete]:
        """Stream one reply; on interruption keep whatever text had arrived."""
        yield ev.ModelCallStarted(number, self.status())
        request = next_request(self.settings, self.system_prompt, self.tools,
                               self.conversation.messages, planning=self._planning())
        self.cache_keeper.remember(request)
        reply = ReplyStream(self.provider.stream(request))
        started = time.perf_counter()
        try:
            async for item in reply:
                if isinstance(item, ResponseComplete):
                    item = self._record_response(item)
                    if item.usage is not None:
                        yield ev.UsageReported(item.usage, self.status(), self.costs.dollars)
                yield item
        except (asyncio.CancelledError, GeneratorExit):
            kept = reply.interrupted_reply()
            if kept is not None:
                self.history.append(kept)
            self.transcript.event("interrupted", during="model call")
            raise
        finally:
            self.steps.call_ended()
            self.costs.api_seconds += time.perf_counter() - started

    def _record_response(self, response: ResponseComplete) -> ResponseComplete:
        """Append the reply; returns it with the tool call ids it was recorded under."""
        model = (self.settings.plan_model if self._planning() else None) or self.settings.model
        if response.usage is not None:
            self.costs.add(model, response.usage)
        self.steps.observe_reply(response)
        message = self.history.append_reply(response.message)
        if message is not response.message:
            response = replace(response, message=message)
        if response.usage is not None:  # with what a resumed meter anchors on
            self.transcript.event("usage", model=model,
                                  fixed_chars=self.steps.meter.fixed_chars,
                                  **asdict(response.usage))
        return response

    def _planning(self) -> bool:
        rules = self.tool_context.rules
        return rules is not None and rules.row.read_only

    # ---- numbers --------------------------------------------------------------------

    def summary_context(self) -> SummaryContext:
        return summary_context(
            provider=self.provider, costs=self.costs, settings=self.settings,
            system=self.system_prompt, tools=self.tools, root=self.tool_context.root,
            transcript=self.transcript,
        )

    def stats(self) -> dict[str, Any]:
        """Numbers for /cost, the benchmark and tests."""
        return {**self.costs.totals(), **self.steps.totals()}


@dataclass
class _Step:
    """One model call of a turn, and what its phases decided."""

    number: int  # counted from 1 in this turn
    response: ResponseComplete | None = None
    uses: list[ToolUseBlock] = field(default_factory=list)  # the calls to run
    turn_over: bool = False
