"""A numbered menu answered with one key (the digit) or the arrows and Enter."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from prompt_toolkit.application import Application
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import HSplit, Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl

from mini_claude.ui.live import KEY_TIMEOUT_SECONDS
from mini_claude.ui.statusbar import UI_STYLE
from mini_claude.ui.terminal_input import raw_while_printing

MAX_DIGIT_OPTIONS = 9


class ChoiceInterrupted(Exception):
    """Ctrl-C in a menu: the caller decides whether that interrupts the turn."""


async def choose(options: Sequence[str], *, escape_index: int | None = None,
                 hint: str = "",
                 status_line: Callable[[], StyleAndTextTuples] | None = None) -> int | None:
    """Index of the chosen option; ``escape_index`` (or None) when Esc is pressed.

    With ``status_line`` the status line stays on the bottom row while the menu is open.
    """
    menu = _Menu(options, escape_index, hint)
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
    def __init__(self, options: Sequence[str], escape_index: int | None, hint: str) -> None:
        self.options = list(options)
        self.escape_index = escape_index
        self.hint = hint
        self.selected = 0

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

