"""The input line: history across sessions, multi-line editing, slash-command completion."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent, merge_key_bindings

from mini_claude.private_dirs import make_private_dirs
from mini_claude.ui.joined_emoji import ShowJoinedEmojiApart
from mini_claude.ui.live import KEY_TIMEOUT_SECONDS
from mini_claude.ui.statusbar import UI_STYLE
from mini_claude.ui.terminal_input import raw_while_printing

HISTORY_FILE = "input-history"
PROMPT: StyleAndTextTuples = [("class:prompt", "> ")]


class EmptyInterrupt(Exception):
    """Ctrl-C on an empty input line (a second one in a row exits)."""


class SlashCommandCompleter(Completer):
    """Completes ``/name`` at the start of the input, and nothing else."""

    def __init__(self, commands: Sequence[tuple[str, str]]) -> None:
        self.commands = commands  # (name, summary)

    def get_completions(self, document: Document,
                        complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/") or any(c.isspace() for c in text):
            return
        typed = text[1:].lower()
        for name, summary in self.commands:
            if name.startswith(typed):
                yield Completion("/" + name, start_position=-len(text), display_meta=summary)


def history_for(home: Path) -> History:
    """Input history under the user's folder, readable by its owner only."""
    path = home / HISTORY_FILE
    try:
        make_private_dirs(home)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
        os.chmod(path, 0o600)
    except OSError:
        return InMemoryHistory()
    return FileHistory(str(path))


def input_keys() -> KeyBindings:
    keys = KeyBindings()

    @keys.add("enter")
    def _enter(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.document.text_before_cursor.endswith("\\"):
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
        else:
            buffer.validate_and_handle()

    @keys.add("escape", "enter")
    @keys.add("c-j")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @keys.add("c-c")
    def _cancel(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.text:
            buffer.reset()
        else:
            event.app.exit(exception=EmptyInterrupt())

    return keys


def build_prompt(history: History, completer: Completer,
                 toolbar: Callable[[], StyleAndTextTuples], *,
                 extra_keys: KeyBindings | None = None) -> PromptSession[str]:
    keys = input_keys() if extra_keys is None else merge_key_bindings([input_keys(), extra_keys])
    session: PromptSession[str] = PromptSession(
        PROMPT,
        input=raw_while_printing(),
        history=history,
        completer=completer,
        complete_while_typing=True,
        bottom_toolbar=toolbar,
        key_bindings=keys,
        style=UI_STYLE,
        prompt_continuation="  ",
        enable_history_search=False,
        reserve_space_for_menu=4,
        input_processors=[ShowJoinedEmojiApart()],
    )
    session.app.ttimeoutlen = KEY_TIMEOUT_SECONDS
    return session
