"""A clock the simulator and a benchmark can share, so cache lifetimes follow simulated time."""

from __future__ import annotations

import threading
import time


class SimClock:
    """Monotonic seconds plus an offset that :meth:`advance` moves forward.

    A benchmark advances it to expire prompt-cache entries without waiting;
    the agent may read the same object so both sides agree on "now".
    """

    def __init__(self, start: float | None = None) -> None:
        self._lock = threading.Lock()
        self._offset = 0.0
        self._base = time.monotonic() if start is None else start
        self._follow_real_time = start is None

    def now(self) -> float:
        with self._lock:
            if self._follow_real_time:
                return time.monotonic() + self._offset
            return self._base + self._offset

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock only moves forward")
        with self._lock:
            self._offset += seconds

    async def wait_until(self, moment: float) -> None:
        """Waiting on simulated time is moving it: the clock jumps to ``moment``."""
        self.advance(max(0.0, moment - self.now()))
