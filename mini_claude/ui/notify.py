"""Telling the user, away in another window, that mini-claude waits for them.

When a permission question waits, or a turn that ran longer than
``NOTIFY_AFTER_SECONDS`` ends, the terminal is signalled: the bell, or a
desktop notification by OSC 9 (iTerm2, WezTerm, Ghostty, Windows Terminal) or
OSC 777 (foot, rxvt-unicode, VTE terminals), chosen by the ``NOTIFY`` setting
(``auto`` picks from ``TERM_PROGRAM`` / ``TERM``). The ``Notification`` hook
gets the same event.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from mini_claude.agent.hooks import HookRunner

STYLES = ("auto", "bell", "osc9", "osc777", "off")
OSC9_PROGRAMS = ("iTerm.app", "WezTerm", "ghostty", "vscode")
OSC777_TERMS = ("foot", "rxvt-unicode", "xterm-kitty")
TITLE = "mini-claude"


def choose_style(setting: str, environ: Mapping[str, str]) -> str:
    """The signal for this terminal: the setting, or for ``auto`` what the terminal speaks."""
    style = setting.strip().lower()
    if style != "auto":
        return style if style in STYLES else "bell"
    program, term = environ.get("TERM_PROGRAM", ""), environ.get("TERM", "")
    if program in OSC9_PROGRAMS or environ.get("WT_SESSION"):
        return "osc9"
    if term in OSC777_TERMS or environ.get("VTE_VERSION"):
        return "osc777"
    return "bell"


def signal_text(style: str, message: str) -> str:
    clean = "".join(ch for ch in message if ch.isprintable()).replace(";", ",")
    if style == "osc9":
        return f"\x1b]9;{TITLE}: {clean}\x07"
    if style == "osc777":
        return f"\x1b]777;notify;{TITLE};{clean}\x07"
    if style == "bell":
        return "\a"
    return ""


class Notifier:
    """Writes the signal to the terminal and runs the ``Notification`` hooks."""

    def __init__(self, stream: IO[str], setting: str,
                 environ: Mapping[str, str] | None = None) -> None:
        self.stream = stream
        self.style = choose_style(setting, os.environ if environ is None else environ)

    async def notify(self, message: str, kind: str, hooks: HookRunner | None) -> list[str]:
        """Signal; returns the hook warnings to show."""
        text = signal_text(self.style, message)
        if text:
            try:
                self.stream.write(text)
                self.stream.flush()
            except (OSError, ValueError):
                pass
        if hooks is None or not hooks.for_event("Notification"):
            return []
        outcome = await hooks.notification(message, kind)
        return outcome.warnings
