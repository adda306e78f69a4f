"""Injected failures: which request a fault hits and what kind of failure it is."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import Literal

from mini_claude.simulator.types import SimConversation

FaultKind = Literal[
    "rate_limit",
    "overloaded",
    "model_not_found",
    "server_error",
    "unavailable",
    "drop_before",
    "drop_after_text",
    "drop_in_tool_call",
    "stream_error",
    "slow",
    "hang",
    "prompt_too_long",
    "empty_summary",
    "long_summary",
    "summary_error",
]
FAULT_KINDS: tuple[str, ...] = FaultKind.__args__  # type: ignore[attr-defined]

# Answered with an error status before any reply is made.
STATUS_FAULTS = {
    "rate_limit": 429, "overloaded": 529, "model_not_found": 404, "server_error": 500,
    "unavailable": 503,
}
# Cut or spoil a reply mid-way: the reply is kept for the retry.
INTERRUPTING_FAULTS = {"drop_after_text", "drop_in_tool_call", "stream_error"}
# Only summary requests can be hit by these.
SUMMARY_FAULTS = {"empty_summary", "long_summary", "summary_error"}


@dataclass(slots=True)
class Fault:
    """A failure to play on matching requests, ``times`` times.

    ``on_request`` is the 1-based request number (as ``len(sim.requests)``
    counts it) from which the fault applies; ``when`` filters by content;
    with neither it hits the next request(s). Summary faults wait for a
    summary request.
    """

    kind: FaultKind
    _: KW_ONLY
    on_request: int | None = None
    when: Callable[[SimConversation], bool] | None = None
    times: int = 1
    retry_after_ms: int | None = None
    retry_after_s: float | None = None
    delay_s: float = 0.0
    hits: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(
                f"unknown fault kind {self.kind!r}; expected one of {', '.join(FAULT_KINDS)}"
            )
        if self.times < 1:
            raise ValueError("a fault must apply at least once")

    def matches(self, index: int, conv: SimConversation) -> bool:
        if self.kind in SUMMARY_FAULTS and (not conv.is_summary_request or conv.is_notes_request):
            return False  # summary faults hit a compaction's summary, not a notes update
        if self.on_request is not None and index < self.on_request:
            return False
        return self.when is None or bool(self.when(conv))

    @property
    def exhausted(self) -> bool:
        return self.hits >= self.times


class FaultQueue:
    """Faults waiting to fire, first injected first considered."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._lock = threading.Lock()

    def inject(self, fault: Fault) -> None:
        with self._lock:
            self._faults.append(fault)

    def take(self, index: int, conv: SimConversation) -> Fault | None:
        """The fault that hits this request, if any (counted as one use)."""
        with self._lock:
            for fault in self._faults:
                if fault.matches(index, conv):
                    fault.hits += 1
                    if fault.exhausted:
                        self._faults.remove(fault)
                    return fault
        return None

    @property
    def pending(self) -> list[Fault]:
        with self._lock:
            return list(self._faults)

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()
