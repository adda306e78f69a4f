"""The live area under the scrollback while a turn runs: tail, spinner, input box, status line.

A small non-full-screen prompt_toolkit Application redraws a few times a
second, so the status line stays on screen and current while text streams and
tools run. Finished output is printed above it through ``in_terminal``. Only
one Application can draw at a time, so anything else that wants the terminal
(a permission question) pauses this view first.

The input box stays alive during a turn: what is typed is kept (the buffer
outlives the Application, across pauses and turns). Enter hands it to the REPL,
which sends it into the running turn (steering); Ctrl-X Enter (Claude Code's
``chat:queueSubmit``) queues it as the next message, for after the turn.

While a shell command runs in the foreground, Ctrl-B sends it to the background (under
tmux, whose prefix it is, press it twice); otherwise it moves the cursor back, as ever.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from prompt_toolkit.application import Application
from prompt_toolkit.application.run_in_terminal import in_terminal
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.data_structures import Point
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent, merge_key_bindings
from prompt_toolkit.layout import (
    ConditionalContainer,
    Dimension,
    HSplit,
    Layout,
    VSplit,
    Window,
)
from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl

from mini_claude.text import format_tokens
from mini_claude.ui.joined_emoji import ShowJoinedEmojiApart
from mini_claude.ui.statusbar import UI_STYLE
from mini_claude.ui.terminal_input import raw_while_printing
from mini_claude.visible import visible

SPINNER_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
REFRESH_SECONDS = 0.1
KEY_TIMEOUT_SECONDS = 0.05  # a lone Esc is read as Esc after this long
TAIL_ROWS_LEFT_FREE = 6
QUEUED_PREVIEW_CHARS = 70


@dataclass
class TurnActivity:
    """What the spinner row says; the presenter updates it as events arrive."""

    label: str = "thinking…"
    started: float = field(default_factory=time.monotonic)
    streamed_chars: int = 0
    tail: str = ""
    plan: list[str] = field(default_factory=list)  # the todo checklist, redrawn in place
    output: list[str] = field(default_factory=list)  # a running command's last lines

    def set(self, label: str) -> None:
        self.label = label

    def restart(self, label: str) -> None:
        """A new turn: clock, counters and tail start over."""
        self.label = label
        self.started = time.monotonic()
        self.streamed_chars = 0
        self.tail = ""
        self.output = []


class LiveView:
    """Draws the live area; ``run_in_terminal`` style printing goes above it."""

    def __init__(
        self,
        activity: TurnActivity,
        status_line: Callable[[], StyleAndTextTuples],
        on_interrupt: Callable[[], None],
        chars_per_token: Callable[[], float],
        *,
        on_submit: Callable[[str], None] | None = None,
        on_escape: Callable[[], None] | None = None,
        on_expand: Callable[[], None] | None = None,
        on_end_of_input: Callable[[], None] | None = None,
        queued: Callable[[], list[str]] = list,
        steering: Callable[[], Sequence[str]] = tuple,
        on_queue: Callable[[str], None] | None = None,
        on_cycle_mode: Callable[[], None] | None = None,
        can_background: Callable[[], bool] = lambda: False,
        on_background: Callable[[], None] | None = None,
        extra_keys: KeyBindings | None = None,
    ) -> None:
        self.activity = activity
        self.status_line = status_line
        self.on_interrupt = on_interrupt
        self.chars_per_token = chars_per_token
        self.on_submit = on_submit
        self.on_escape = on_escape or on_interrupt
        self.on_expand = on_expand
        self.on_end_of_input = on_end_of_input
        self.queued = queued
        self.steering = steering  # sent into the turn, not delivered yet
        self.on_queue = on_queue  # Ctrl-X Enter: for after the turn
        self._queue_next = False  # Ctrl-X was pressed: the next Enter queues
        self.on_cycle_mode = on_cycle_mode  # Shift+Tab: the next permission mode
        self.can_background = can_background  # a foreground command runs that Ctrl-B moves
        self.on_background = on_background  # Ctrl-B: it goes on in the background
        self.extra_keys = extra_keys
        self.input = Buffer(multiline=True)  # type-ahead; lives as long as the view
        self.input.on_text_changed += self._typed
        self._app: Application[None] | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if self.running:
            return
        self._app = self._build()
        self._task = asyncio.ensure_future(self._app.run_async(set_exception_handler=False))

    async def stop(self) -> None:
        """Erase the live area and give the terminal back."""
        app, task = self._app, self._task
        self._app = self._task = None
        if app is None or task is None:
            return
        if not app.is_running:
            await _until_running_or_done(app, task)
        if app.is_running and app.future is not None and not app.future.done():
            app.exit()
        await asyncio.gather(task, return_exceptions=True)

    @asynccontextmanager
    async def paused(self) -> AsyncIterator[None]:
        """Hand the terminal to something else (a question), then come back."""
        was_running = self.running
        await self.stop()
        yield
        if was_running:
            self.start()

    async def print_above(self, write: Callable[[], None]) -> None:
        """Print finished output into the scrollback, above the live area."""
        app = self._app
        if app is not None and not app.is_running and self._task is not None:
            await _until_running_or_done(app, self._task)
        if app is not None and app.is_running:
            async with in_terminal():
                write()
        else:
            write()

    def refresh(self) -> None:
        if self._app is not None and self._app.is_running:
            self._app.invalidate()

    def take_draft(self) -> str:
        """What was typed but not sent; it moves to the next prompt."""
        text = self.input.text
        self.input.reset()
        return text

    def put_back(self, text: str) -> None:
        """Put text into the box, before what is there (a queued message taken back)."""
        current = self.input.text
        joined = text + ("\n" + current if current else "")
        self.input.set_document(Document(joined, len(joined)))
        self.refresh()

    def _typed(self, _buffer: Buffer) -> None:
        self._queue_next = False  # Ctrl-X, then typing: the chord is off

    # ---- drawing --------------------------------------------------------------------

    def _build(self) -> Application[None]:
        tail = FormattedTextControl(self._tail_text, show_cursor=False,
                                    get_cursor_position=self._tail_end)
        has_tail = Condition(lambda: bool(self.activity.tail))
        has_queue = Condition(lambda: bool(self.queued()) or bool(self.steering()))
        box = Window(BufferControl(self.input, input_processors=[ShowJoinedEmojiApart()]),
                     wrap_lines=True, dont_extend_height=True,
                     height=Dimension(min=1, max=5))
        layout = Layout(HSplit([
            ConditionalContainer(
                Window(tail, wrap_lines=True, dont_extend_height=True,
                       height=self._tail_height),
                filter=has_tail,
            ),
            Window(FormattedTextControl(self._spinner_line), height=1, dont_extend_height=True),
            ConditionalContainer(
                Window(FormattedTextControl(lambda: [("class:spinner.hint",
                                                      "\n".join(self.activity.plan))]),
                       dont_extend_height=True),
                filter=Condition(lambda: bool(self.activity.plan)),
            ),
            ConditionalContainer(
                Window(FormattedTextControl(self._output_lines), dont_extend_height=True,
                       wrap_lines=False),
                filter=Condition(lambda: bool(self.activity.output)),
            ),
            ConditionalContainer(
                Window(FormattedTextControl(self._queued_lines), dont_extend_height=True),
                filter=has_queue,
            ),
            VSplit([Window(FormattedTextControl([("class:prompt", "> ")]), width=2,
                           dont_extend_width=True), box]),
            Window(),  # takes the free rows, so the status line sits on the bottom row
            Window(FormattedTextControl(self.status_line), height=1, dont_extend_height=True,
                   style="class:bottom-toolbar"),
        ]), focused_element=box)
        keys = self._keys()
        app: Application[None] = Application(
            layout=layout,
            input=raw_while_printing(),
            key_bindings=(keys if self.extra_keys is None
                          else merge_key_bindings([keys, self.extra_keys])),
            style=UI_STYLE,
            full_screen=False,
            erase_when_done=True,
            refresh_interval=REFRESH_SECONDS,
            min_redraw_interval=0.03,
        )
        app.ttimeoutlen = KEY_TIMEOUT_SECONDS
        app.timeoutlen = KEY_TIMEOUT_SECONDS
        return app

    def _keys(self) -> KeyBindings:
        keys = KeyBindings()

        @keys.add("escape", eager=True)
        def _escape(event: KeyPressEvent) -> None:
            self.on_escape()

        @keys.add("c-c", eager=True)
        @keys.add("<sigint>")
        def _interrupt(event: KeyPressEvent) -> None:
            self.on_interrupt()

        @keys.add("enter")
        def _enter(event: KeyPressEvent) -> None:
            self._enter_pressed()

        @keys.add("c-x")
        def _arm_queue(event: KeyPressEvent) -> None:
            """Ctrl-X Enter: the message waits for the turn's end instead of steering it."""
            self._queue_next = True

        @keys.add("c-d", filter=Condition(lambda: not self.input.text))
        def _end_of_input(event: KeyPressEvent) -> None:
            """Ctrl-D on an empty box: what it means at the prompt, once the turn ends."""
            if self.on_end_of_input is not None:
                self.on_end_of_input()

        @keys.add("c-j")
        def _newline(event: KeyPressEvent) -> None:
            self.input.insert_text("\n")

        @keys.add("c-o")
        def _expand(event: KeyPressEvent) -> None:
            if self.on_expand is not None:
                self.on_expand()

        @keys.add("c-b", filter=Condition(lambda: self.on_background is not None
                                          and self.can_background()))
        def _to_background(event: KeyPressEvent) -> None:
            """Ctrl-B: the running command goes on in the background, the turn goes on."""
            if self.on_background is not None:
                self.on_background()

        @keys.add("s-tab")
        def _cycle_mode(event: KeyPressEvent) -> None:
            if self.on_cycle_mode is not None:
                self.on_cycle_mode()

        return keys

    def _enter_pressed(self) -> None:
        """A line ending in a backslash continues; otherwise the text steers the turn, or
        waits for its end after Ctrl-X."""
        buffer = self.input
        queue, self._queue_next = self._queue_next, False
        submit = self.on_queue if queue and self.on_queue is not None else self.on_submit
        if buffer.document.text_before_cursor.endswith("\\"):
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
        elif buffer.text.strip() and submit is not None:
            text = buffer.text
            buffer.reset(append_to_history=False)
            submit(text)

    def _queued_lines(self) -> StyleAndTextTuples:
        out: StyleAndTextTuples = []
        steering, queued = list(self.steering()), self.queued()
        for label, texts in (("steering", steering), ("queued", queued)):
            for text in texts:
                line = " ".join(text.split())
                if len(line) > QUEUED_PREVIEW_CHARS:
                    line = line[: QUEUED_PREVIEW_CHARS - 1] + "…"
                out.append(("class:spinner.hint", f"  ↳ {label}: {line}\n"))
        when = [*(["steering goes in before the next model call"] if steering else []),
                *(["queued is sent when this turn ends"] if queued else [])]
        out.append(("class:spinner.hint", f"    ({' · '.join(when)} · esc takes it back)"))
        return out

    def _output_lines(self) -> StyleAndTextTuples:
        """A running command's last lines, dim and indented under the spinner; what the
        command printed is shown, never obeyed (a bidi override, a C1 control)."""
        lines = [f"  │ {visible(line, one_line=True)}" for line in self.activity.output]
        lines.append("  └ ctrl+o shows all of it")
        return [("class:spinner.hint", "\n".join(lines))]

    def _tail_text(self) -> StyleAndTextTuples:
        return [("class:tail", visible(self.activity.tail))]  # streamed text, never obeyed

    def _tail_end(self) -> Point:
        return Point(0, self.activity.tail.count("\n"))

    def _tail_height(self) -> Dimension:
        """As tall as the tail, but never so tall that the status line leaves the screen."""
        app = self._app
        rows = app.output.get_size().rows if app is not None else 24
        return Dimension(min=1, max=max(1, rows - TAIL_ROWS_LEFT_FREE))

    def _spinner_line(self) -> StyleAndTextTuples:
        activity = self.activity
        elapsed = time.monotonic() - activity.started
        frame = SPINNER_FRAMES[int(elapsed / REFRESH_SECONDS) % len(SPINNER_FRAMES)]
        details = [f"{elapsed:.0f}s"]
        if activity.streamed_chars:
            tokens = round(activity.streamed_chars / max(self.chars_per_token(), 1.0))
            details.append(f"↓ {format_tokens(tokens)} tokens")
        if self.on_background is not None and self.can_background():
            details.append("ctrl+b to run in background")
        details.append("esc to interrupt")
        return [
            ("class:spinner", f"{frame} {visible(activity.label, one_line=True)}"),
            ("class:spinner.hint", f" ({' · '.join(details)})"),
        ]


async def _until_running_or_done(app: Application[None], task: asyncio.Task[None]) -> None:
    """An app just started needs a moment before it can be exited or print above itself."""
    while not app.is_running and not task.done():
        await asyncio.sleep(0.005)
