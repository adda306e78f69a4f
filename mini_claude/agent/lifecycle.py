"""The session and turn hook events for one agent: SessionStart, UserPromptSubmit, Stop.

What their commands answered decides whether a prompt is sent, what context rides
on it, and whether the model goes back to work when it wanted to stop; the
commands themselves are run by :class:`~mini_claude.agent.hooks.HookRunner`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from mini_claude import events as ev
from mini_claude.agent.hooks import HookEvent, HookOutcome, HookRunner
from mini_claude.context.reattach import Reattachment
from mini_claude.conversation import Message, TextBlock, user_text
from mini_claude.text import shorten

if TYPE_CHECKING:
    from mini_claude.agent.history import History


class LifecycleHooks:
    """What the session and turn events decided, for one agent.

    ``SessionStart`` runs before the first message of a conversation is sent (its
    ``source`` says why the conversation began) and again as a compaction starts;
    ``UserPromptSubmit`` before each prompt. Their context rides on the newest
    message as a ``<system-reminder>``, so the cached prefix stays as it was. A
    ``Stop`` (``SubagentStop`` in a sub-agent) hook may send the model back to
    work with a reason, at most ``continue_limit`` times in one turn; the input's
    ``stop_hook_active`` tells the hook it already did once.
    """

    def __init__(self, stop_event: HookEvent = "Stop", continue_limit: int = 5) -> None:
        self.stop_event = stop_event
        self.continue_limit = continue_limit
        self.session_source: str | None = None  # a SessionStart waiting for the next turn
        self.context: list[str] = []
        self.blocked = False
        self.continuing = False
        self.continues = 0
        self.compact_context: list[str] = []
        self.stop_requested: str | None = None  # a tool hook's ``continue: false``

    def stops_turn(self, outcome: HookOutcome) -> bool:
        """Note a tool hook's ``continue: false``: the turn ends once the results are in."""
        if outcome.stop_reason is not None and self.stop_requested is None:
            self.stop_requested = outcome.stop_reason
        return outcome.stop_reason is not None

    def turn_stopped(self, requests: int) -> list[ev.Event]:
        reason, self.stop_requested = self.stop_requested, None
        return [ev.Notice(f"a hook stopped the turn: {reason}", "warning"),
                ev.TurnFinished("", "hook_stop", requests)]

    async def before_prompt(self, runner: HookRunner, text: str) -> AsyncIterator[ev.Event]:
        """SessionStart (if one waits), then UserPromptSubmit; sets :attr:`blocked`."""
        self.blocked, self.continues, self.context = False, 0, []
        self.stop_requested = None
        source, self.session_source = self.session_source, None
        if not runner:
            return
        if source is not None:
            started = await runner.session_start(source)
            self.context.extend(started.context)
            for event in _notices(started):
                yield event
        submitted = await runner.user_prompt_submit(text)
        for event in _notices(submitted):
            yield event
        refusal = submitted.block_reason or submitted.stop_reason
        if refusal is not None:
            self.blocked = True
            yield ev.TurnError(f"the prompt was blocked by a UserPromptSubmit hook: {refusal}")
            return
        self.context.extend(submitted.context)

    def with_context(self, message: Message) -> Message:
        """The message with the hooks' context appended (once)."""
        if not self.context:
            return message
        context, self.context = self.context, []
        reminder = "<system-reminder>\nContext from the user's hooks:\n" + "\n\n".join(
            context) + "\n</system-reminder>"
        return Message(message.role, [*message.blocks, TextBlock(reminder)])

    async def at_stop(self, runner: HookRunner, history: History) -> AsyncIterator[ev.Event]:
        """Stop hooks as the model ends its turn; :attr:`continuing` says whether it goes on."""
        self.continuing = False
        if not runner.for_event(self.stop_event):
            return
        outcome = await runner.stop(self.stop_event, stop_hook_active=self.continues > 0)
        for event in _notices(outcome):
            yield event
        reason = outcome.block_reason
        if reason is None or outcome.stop_reason is not None:
            return
        if self.continues >= self.continue_limit:
            yield ev.Notice(f"{self.stop_event} hooks asked to go on {self.continues} times in "
                            "this turn; the turn ends here", "warning")
            return
        self.continues += 1
        history.append(user_text(f"<system-reminder>\nA {self.stop_event} hook asks you to "
                                 f"continue:\n{reason}\n</system-reminder>"))
        yield ev.Notice(f"{self.stop_event} hook: {shorten(reason, 200, marker='...')}; "
                        "the model goes on")
        self.continuing = True

    async def at_compaction(self, runner: HookRunner) -> AsyncIterator[ev.Event]:
        """SessionStart with source ``compact``; its context is re-attached after the summary."""
        self.compact_context = []
        if not runner.for_event("SessionStart"):
            return
        outcome = await runner.session_start("compact")
        self.compact_context = outcome.context
        for event in _notices(outcome):
            yield event

    def reattachments(self, history: Sequence[Message]) -> list[Reattachment]:
        context, self.compact_context = self.compact_context, []
        if not context:
            return []
        return [Reattachment("session-start", "context from the user's SessionStart hooks",
                             "\n\n".join(context))]


def _notices(outcome: HookOutcome) -> list[ev.Event]:
    return [*(ev.Notice(w, "warning") for w in outcome.warnings),
            *(ev.Notice(m) for m in outcome.messages)]


async def end_session(runner: HookRunner, reason: str) -> list[str]:
    """``SessionEnd`` (``clear``, ``prompt_input_exit``, ``other``); returns the warnings."""
    if not runner.for_event("SessionEnd"):
        return []
    outcome = await runner.session_end(reason)
    return [*outcome.warnings, *outcome.messages]
