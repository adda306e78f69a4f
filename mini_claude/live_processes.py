"""Whether a process id still names a running process: what a leftover file of a session
that may have been killed (a rewind journal, a sandbox stand-in) is judged by."""

from __future__ import annotations

import os


def is_running(pid: int) -> bool:
    """A signal-0 probe: a process we may not signal still runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
