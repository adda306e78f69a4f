"""The window a server enforces: learnt from its refusal, kept for the session and cached.

The model table and the Models API say what a model accepts; a server that
refuses a prompt with numbers ("prompt is too long: 63289 tokens > 60000
maximum", OpenAI's "maximum context length is 60000 tokens") says what *this*
endpoint accepts. That maximum becomes the window for the rest of the session
(every budget, the meter and the auto-compact threshold follow it), and it is
cached under the home folder, so the same refusal never comes twice.

:class:`WindowWatch` hears every refusal of the session's calls, the summary
calls included (a summary request is the largest prompt a session sends, so it
is often the first to be refused).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Protocol

from mini_claude.model_facts import remember_rejection
from mini_claude.protocol import ModelRequest, PromptTooLong, Provider, StreamEvent
from mini_claude.settings import Settings


class Reconfigurable(Protocol):
    """What holds the session's settings and can rebuild itself on new ones (the agent)."""

    settings: Settings

    def reconfigure(self, settings: Settings) -> None: ...


def rejection_source(error: PromptTooLong) -> str:
    """How ``/context`` names the window's origin."""
    return f"the server's rejection ({error.message})"


def window_from_rejection(settings: Settings, error: PromptTooLong) -> Settings | None:
    """Settings whose window is the server's maximum, or None when it teaches nothing new.

    Only a maximum below the window in use is news: a larger one means the estimate,
    not the window, was off, and the compaction that follows deals with that.
    """
    maximum = error.maximum
    if maximum is None or maximum <= 0 or maximum >= settings.window:
        return None
    return settings.with_overrides(
        rejected_window=maximum, window_rejected_by=rejection_source(error)
    )


def adopt_rejected_window(target: Reconfigurable, error: PromptTooLong) -> bool:
    """Take the server's maximum as the window of ``target`` and cache it; True when it did."""
    updated = window_from_rejection(target.settings, error)
    if updated is None or updated.rejected_window is None:
        return False
    remember_rejection(updated, updated.rejected_window, rejection_source(error))
    target.reconfigure(updated)
    return True


def keep_learnt_window(new: Settings, learnt: Settings) -> Settings:
    """``new`` settings (a thinking toggle, a Models API answer) keep a window a server
    enforced on the same model; another model starts from its own sources."""
    if learnt.rejected_window is None or new.model != learnt.model:
        return new
    if new.rejected_window == learnt.rejected_window:
        return new
    return new.with_overrides(
        rejected_window=learnt.rejected_window, window_rejected_by=learnt.window_rejected_by
    )


class WindowWatch:
    """Forwards to ``inner``; a refusal with numbers is told to ``on_refusal`` first."""

    def __init__(self, inner: Provider,
                 on_refusal: Callable[[str, PromptTooLong], None]) -> None:
        self.inner = inner
        self.on_refusal = on_refusal  # (the refused request's model, the error)
        self.name = inner.name

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        try:
            async for event in self.inner.stream(request):
                yield event
        except PromptTooLong as exc:
            self.on_refusal(request.model, exc)
            raise

    async def close(self) -> None:
        await self.inner.close()
