"""Tool calls whose output is shown while they run, and kept when they are interrupted.

The agent opens a :class:`CallProgress` for every call; tools that print as they
work (their traits say ``streams_output``) feed it. Its updates reach the faces as
events, and
what a call printed before an interrupt is what the model is told it printed.
"""

from __future__ import annotations

from collections.abc import Callable

from mini_claude.conversation import ToolUseBlock
from mini_claude.protocol import ToolProgress
from mini_claude.tools.base import ToolContext
from mini_claude.tools.progress import CallProgress


class LiveCalls:
    """The calls of the current batch, by tool_use id."""

    def __init__(
        self, publish: Callable[[ToolProgress], None], interval: float, context: ToolContext
    ) -> None:
        self._publish = publish
        self._interval = interval
        self._context = context
        self._calls: dict[str, CallProgress] = {}

    def start(self, use: ToolUseBlock) -> None:
        """The call's live view, handed to the tool through its context."""
        progress = CallProgress(use.id, use.name, self._publish, self._interval)
        self._calls[use.id] = progress
        self._context.progress = progress

    def partials(self) -> dict[str, str]:
        """What interrupted calls printed before they were stopped (and forget the batch)."""
        found = {i: c.partial for i, c in self._calls.items() if c.partial is not None}
        self._calls.clear()
        return found

    def finished(self, use: ToolUseBlock) -> None:
        """The call returned: its output is in its result, and nobody feeds a stale view."""
        self._calls.pop(use.id, None)
        self._context.progress = None
