"""SIGTERM, SIGINT and SIGHUP always end print mode cleanly, even when a tool thread
cannot be stopped.

Inside the event loop a signal cancels the running task at its next await (the
transcript records the interruption, a running shell command is killed, the JSON
formats still write their result line); a Python signal handler raising
``KeyboardInterrupt`` in the middle of whatever runs (a half-spawned shell command)
could leave a child running and print a traceback. Outside the loop (start-up, the
way out) the signal raises ``KeyboardInterrupt`` as usual. A thread stuck in a
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
# SIGHUP: the terminal was closed (or ``kill -HUP``); ended like the others.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# Called (once each) before a forced exit: print mode's result line.
last_words: list[Callable[[], None]] = []
# The stop signals received, in order (the exit code names the first).
received: list[int] = []


def exit_code() -> int:
    """128 + the signal that stopped the run, as a shell reports it (SIGTERM: 143); 130
    when none did (Ctrl-C reached us as KeyboardInterrupt)."""
    return 128 + received[0] if received else EXIT_INTERRUPTED


def _force_exit() -> None:
    kill_live_groups()  # shell commands go with us, as on a normal interrupt
    with contextlib.suppress(OSError):
        os.write(2, b"mini-claude: interrupted (a tool did not stop; exiting)\n")
    for words in list(last_words):
        with contextlib.suppress(Exception):
            words()
    os._exit(exit_code())


def _start_watchdog() -> None:
    watchdog = threading.Timer(EXIT_GRACE_SECONDS, _force_exit)
    watchdog.daemon = True
    watchdog.start()


def _interrupt(signum: int, frame: FrameType | None) -> None:
    received.append(signum)
    _start_watchdog()
    raise KeyboardInterrupt


def cancel_in_loop() -> None:
    """Inside the event loop, every stop signal cancels the running task at its next
    await, rather than raising in the middle of whatever runs (a half-spawned shell
    command); the watchdog still ends the process if a tool thread will not stop."""
    task = asyncio.current_task()
    if task is None:
        return

    def stop(signum: int) -> None:
        received.append(signum)
        _start_watchdog()
        task.cancel()

    loop = asyncio.get_running_loop()
    for sig in STOP_SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop, sig)


def install() -> Callable[[], None]:
    """Route both signals to the interrupt; returns a function that puts the old ones back."""
    received.clear()
    previous = {sig: signal.signal(sig, _interrupt) for sig in STOP_SIGNALS}

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore
