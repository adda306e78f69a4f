"""SIGTERM and SIGINT always end print mode, even when a tool thread cannot be stopped.

The first signal interrupts the turn the usual way (``KeyboardInterrupt``: the
transcript records it, a running shell command is killed). A thread stuck in a
system call (a hung network file system) cannot be interrupted, and the event
loop would wait for it forever on the way out, so a watchdog ends the process
shortly after. Transcript lines are flushed as they are written: nothing is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType

from mini_claude.exit_codes import EXIT_INTERRUPTED
from mini_claude.tools.process import kill_live_groups

EXIT_GRACE_SECONDS = 2.0
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _force_exit() -> None:
    kill_live_groups()  # shell commands go with us, as on a normal interrupt
    os.write(2, b"mini-claude: interrupted (a tool did not stop; exiting)\n")
    os._exit(EXIT_INTERRUPTED)


def _start_watchdog() -> None:
    watchdog = threading.Timer(EXIT_GRACE_SECONDS, _force_exit)
    watchdog.daemon = True
    watchdog.start()


def _interrupt(signum: int, frame: FrameType | None) -> None:
    _start_watchdog()
    raise KeyboardInterrupt


def cancel_in_loop() -> None:
    """Inside the event loop, SIGTERM cancels the running task at its next await, as Ctrl-C
    does, rather than raising in the middle of whatever runs (a half-spawned shell command);
    the watchdog still ends the process if a tool thread will not stop."""
    task = asyncio.current_task()
    if task is None:
        return

    def stop() -> None:
        _start_watchdog()
        task.cancel()

    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop)


def install() -> Callable[[], None]:
    """Route both signals to the interrupt; returns a function that puts the old ones back."""
    previous = {sig: signal.signal(sig, _interrupt) for sig in STOP_SIGNALS}

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore
