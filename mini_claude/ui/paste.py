"""Long pastes shown as one placeholder in the input box, sent in full.

A 300-line paste would otherwise fill the screen and push the conversation
away. As Claude Code does, the box shows ``[Pasted text #1 +300 lines]`` and the
message carries the text itself. Placeholders stay valid for the whole session,
so a message taken back into the box, or recalled from history, still expands.
"""

from __future__ import annotations

import re

from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys

COLLAPSE_LINES = 10  # a paste of more lines than this becomes a placeholder
COLLAPSE_CHARS = 2_000  # or of more characters (one long line)
_PLACEHOLDER = re.compile(r"\[Pasted text #(\d+) \+(\d+) lines\]")


class PastedTexts:
    """The long pastes of a session, by number."""

    def __init__(self) -> None:
        self._texts: dict[int, str] = {}

    def placeholder_for(self, text: str) -> str | None:
        """The placeholder to show for ``text``, or None when it is short enough to show."""
        lines = len(text.splitlines()) or 1  # a last newline ends a line; it starts none
        if lines <= COLLAPSE_LINES and len(text) <= COLLAPSE_CHARS:
            return None
        number = len(self._texts) + 1
        self._texts[number] = text
        return f"[Pasted text #{number} +{lines} lines]"

    def expand(self, message: str) -> str:
        """The message with every known placeholder replaced by its text."""
        def original(match: re.Match[str]) -> str:
            return self._texts.get(int(match.group(1)), match.group(0))

        return _PLACEHOLDER.sub(original, message) if self._texts else message


def paste_keys(pastes: PastedTexts) -> KeyBindings:
    """Bracketed paste: long text goes in as a placeholder, short text as itself."""
    keys = KeyBindings()

    @keys.add(Keys.BracketedPaste)
    def _paste(event: KeyPressEvent) -> None:
        text = event.data.replace("\r\n", "\n").replace("\r", "\n")
        event.current_buffer.insert_text(pastes.placeholder_for(text) or text)

    return keys
