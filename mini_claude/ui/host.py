"""What the slash commands and the views need from the REPL, as a small protocol.

They take a :class:`ReplHost` rather than the REPL class itself, so the REPL can
import them without either module importing the other.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # the agent chain is imported after the first prompt is drawn
    import asyncio
    from pathlib import Path

    from rich.console import Console

    from mini_claude import events as ev
    from mini_claude.agent.loop import Agent
    from mini_claude.conversation import ImageBlock
    from mini_claude.session.wiring import Session
    from mini_claude.settings import Settings
    from mini_claude.ui.live import LiveView, TurnActivity
    from mini_claude.ui.recall import Recall


class ReplHost(Protocol):
    console: Console
    started: float  # when the REPL started, for /cost's wall time
    verbose: bool  # every tier report on its own line
    recall: Recall  # the latest collapsed result and summary
    view: LiveView  # the live area of a running turn
    activity: TurnActivity  # the spinner's label
    at_prompt: asyncio.Event  # set while waiting for input

    @property
    def session(self) -> Session: ...

    @property
    def built_session(self) -> Session | None:
        """The session if it is built already (never builds it)."""
        ...

    @property
    def settings(self) -> Settings: ...

    @property
    def cwd(self) -> Path: ...

    @property
    def agent(self) -> Agent: ...

    @property
    def turn_running(self) -> bool: ...

    async def run_events(self, events: AsyncIterator[ev.Event], label: str = ...) -> bool:
        """Show a stream of events (a turn, a compaction) live; False if interrupted."""
        ...

    def show_resumed(self) -> None:
        """Show the conversation just resumed or started."""
        ...

    def toggle_vim_mode(self) -> bool:
        """``/vim``: switch the prompt's editing mode; True when vi keys are on now."""
        ...

    def refresh_status(self) -> None:
        """Redraw the status line now (the permission mode changed)."""
        ...

    def question(self) -> AbstractAsyncContextManager[None]:
        """Borrow the terminal for a question."""
        ...

    def user_turn(self, text: str) -> AsyncIterator[ev.Event]:
        """A turn for text as the user typed it (its ``@path`` files attached)."""
        ...

    def send(self, text: str, images: Sequence[ImageBlock] = ()) -> AsyncIterator[ev.Event]:
        """A turn for text whose files are attached already (a custom command's prompt)."""
        ...
