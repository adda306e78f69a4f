"""The terminal's input, left in raw mode while output is printed above a running app.

prompt_toolkit prints above an app (``in_terminal``) with the terminal in cooked
mode. Keys that arrive meanwhile pass through the line discipline: Enter (CR)
becomes a line feed, which the input box reads as Ctrl-J, a new line, so a
message typed while a reply streams was never sent; and the terminal echoed the
keys into the output. Printing needs no cooked input, so here it stays raw: keys
wait, untouched and unechoed, until the app reads them again.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

from prompt_toolkit.application.current import get_app_session
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyPress


class RawWhilePrinting(Input):
    """Another input with ``cooked_mode`` made a no-op; everything else is passed on."""

    def __init__(self, inner: Input) -> None:
        self.inner = inner

    def fileno(self) -> int:
        return self.inner.fileno()

    def typeahead_hash(self) -> str:
        return self.inner.typeahead_hash()  # type-ahead kept for the inner input stays found

    def read_keys(self) -> list[KeyPress]:
        return self.inner.read_keys()

    def flush_keys(self) -> list[KeyPress]:
        return self.inner.flush_keys()

    def flush(self) -> None:
        self.inner.flush()

    @property
    def closed(self) -> bool:
        return self.inner.closed

    def raw_mode(self) -> AbstractContextManager[None]:
        return self.inner.raw_mode()

    def cooked_mode(self) -> AbstractContextManager[None]:
        return nullcontext()

    def attach(self, input_ready_callback: Callable[[], None]) -> AbstractContextManager[None]:
        return self.inner.attach(input_ready_callback)

    def detach(self) -> AbstractContextManager[None]:
        return self.inner.detach()

    def close(self) -> None:
        self.inner.close()


def raw_while_printing() -> Input:
    """The current session's input (a pipe in tests, the terminal otherwise), wrapped."""
    inner = get_app_session().input
    return inner if isinstance(inner, RawWhilePrinting) else RawWhilePrinting(inner)
