"""A numbered menu answered with one key (the digit) or the arrows and Enter, and the one
way a question that lets a project's files act (a trust question) is asked."""

from __future__ import annotations

import contextlib
import select
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from prompt_toolkit.application import Application
from prompt_toolkit.application.current import get_app_session
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.input import Input
from prompt_toolkit.input.typeahead import get_typeahead, store_typeahead
from prompt_toolkit.key_binding import KeyBindings, KeyPress, KeyPressEvent
from prompt_toolkit.layout import HSplit, Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl

from mini_claude.ui.live import KEY_TIMEOUT_SECONDS
from mini_claude.ui.statusbar import UI_STYLE
from mini_claude.ui.terminal_input import raw_while_printing

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

MAX_DIGIT_OPTIONS = 9
MAX_PENDING_READS = 256  # reads of at most 1 KB each: far more than anyone types ahead
TRUST_YES, TRUST_NO = 0, 1
TRUST_HINT = "esc means no"


class ChoiceInterrupted(Exception):
    """Ctrl-C in a menu: the caller decides whether that interrupts the turn."""


async def choose(options: Sequence[str], *, escape_index: int | None = None,
                 hint: str = "",
                 status_line: Callable[[], StyleAndTextTuples] | None = None,
                 selected: int = 0) -> int | None:
    """Index of the chosen option; ``escape_index`` (or None) when Esc is pressed.

    ``selected`` is the option a bare Enter picks. With ``status_line`` the status line
    stays on the bottom row while the menu is open.
    """
    menu = _Menu(options, escape_index, hint, selected)
    rows: list[Window] = [Window(FormattedTextControl(menu.fragments, focusable=True),
                                 dont_extend_height=True)]
    if status_line is not None:
        rows += [Window(), Window(FormattedTextControl(status_line), height=1,
                                  dont_extend_height=True, style="class:bottom-toolbar")]
    app: Application[int | None] = Application(
        layout=Layout(HSplit(rows)),
        input=raw_while_printing(),
        key_bindings=menu.keys(),
        style=UI_STYLE,
        full_screen=False,
        erase_when_done=True,
    )
    app.ttimeoutlen = KEY_TIMEOUT_SECONDS
    app.timeoutlen = KEY_TIMEOUT_SECONDS
    return await app.run_async(set_exception_handler=False)


class _Menu:
    def __init__(self, options: Sequence[str], escape_index: int | None, hint: str,
                 selected: int = 0) -> None:
        self.options = list(options)
        self.escape_index = escape_index
        self.hint = hint
        self.selected = selected

    def fragments(self) -> StyleAndTextTuples:
        out: StyleAndTextTuples = []
        for index, label in enumerate(self.options):
            chosen = index == self.selected
            out.append(("class:choice.selected" if chosen else "", " ❯ " if chosen else "   "))
            out.append(("class:choice.number", f"{index + 1}. "))
            out.append(("class:choice.selected" if chosen else "", label + "\n"))
        if self.hint:
            out.append(("class:choice.hint", f"   {self.hint}"))
        return out

    def keys(self) -> KeyBindings:
        keys = KeyBindings()

        @keys.add("up")
        @keys.add("s-tab")
        def _up(event: KeyPressEvent) -> None:
            self.selected = (self.selected - 1) % len(self.options)

        @keys.add("down")
        @keys.add("tab")
        def _down(event: KeyPressEvent) -> None:
            self.selected = (self.selected + 1) % len(self.options)

        @keys.add("enter")
        def _accept(event: KeyPressEvent) -> None:
            event.app.exit(result=self.selected)

        @keys.add("escape", eager=True)
        def _escape(event: KeyPressEvent) -> None:
            event.app.exit(result=self.escape_index)

        @keys.add("c-c")
        @keys.add("<sigint>")
        def _interrupt(event: KeyPressEvent) -> None:
            event.app.exit(exception=ChoiceInterrupted())

        for index in range(min(len(self.options), MAX_DIGIT_OPTIONS)):
            keys.add(str(index + 1))(self._pick(index))
        return keys

    @staticmethod
    def _pick(index: int) -> Callable[[KeyPressEvent], None]:
        def handler(event: KeyPressEvent) -> None:
            event.app.exit(result=index)

        return handler


async def ask_trust(console: Console, panel: RenderableType, yes: str, no: str) -> bool | None:
    """Ask whether a project's files may act (start servers, run hooks, load outside files).

    True for yes, False for no (Esc too), None for Ctrl-C (no decision). Only keys typed
    after the panel is on screen answer it (:func:`keys_typed_before_kept`), and a bare
    Enter answers no: the cursor starts on the safe answer.
    """
    with keys_typed_before_kept():
        console.print(panel)
        try:
            index = await choose([yes, no], escape_index=TRUST_NO, hint=TRUST_HINT,
                                 selected=TRUST_NO)
        except ChoiceInterrupted:
            return None
    return index == TRUST_YES


@contextlib.contextmanager
def keys_typed_before_kept() -> Iterator[None]:
    """Keys typed before a question is on screen are no answer to it.

    A message and Enter typed while mini-claude starts (or while a turn runs) would
    otherwise pick the question's option the moment it is drawn. Everything pending
    on the input is taken off before the question is shown and handed back after it,
    ahead of anything the question left unread: the prompt (or a running turn's
    type-ahead box) then gets those keys as they were typed.
    """
    source = get_app_session().input
    kept = _pending_keys(source)
    try:
        yield
    finally:
        store_typeahead(source, [*kept, *get_typeahead(source)])


def _pending_keys(source: Input) -> list[KeyPress]:
    """The keys kept from an earlier app and those waiting unread, without blocking."""
    keys = list(get_typeahead(source))
    with contextlib.suppress(OSError, ValueError):  # no descriptor, or a closed one
        for _ in range(MAX_PENDING_READS):
            if source.closed or not select.select([source.fileno()], [], [], 0)[0]:
                break
            keys += source.read_keys()
    keys += source.flush_keys()
    return keys
