"""Keys typed before the first prompt is drawn: kept for it, not echoed raw, Enter still Enter.

A terminal in its ordinary (canonical) mode echoes what is typed at the
cursor, holds it until Enter, and turns Enter into a newline, which the
prompt reads as "insert a line break": a message typed while the program
starts appears twice and is never sent. Switching the terminal to
non-canonical, no-echo input from the start hands those keys to the prompt
exactly as typed; the original mode comes back when the REPL ends.
"""

from __future__ import annotations

import contextlib
import termios
from collections.abc import Iterator
from typing import TextIO


@contextlib.contextmanager
def keys_kept_for_the_prompt(stream: TextIO) -> Iterator[None]:
    """Terminal input unechoed, unbuffered and untranslated while the block runs."""
    try:
        fd = stream.fileno()
        original = termios.tcgetattr(fd)
    except (OSError, ValueError, termios.error):  # not a terminal
        yield
        return
    quiet = list(original)
    quiet[0] &= ~termios.ICRNL  # Enter stays \r
    quiet[3] &= ~(termios.ICANON | termios.ECHO)
    control = list(original[6])
    control[termios.VMIN], control[termios.VTIME] = 1, 0
    quiet[6] = control
    try:
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
    except (OSError, termios.error):
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError, termios.error):
            termios.tcsetattr(fd, termios.TCSADRAIN, original)
