"""Prompt-cache accounting on the simulator's clock, for both providers' rules.

A prefix is identified by a chain of unit hashes: two prompts share a cached
prefix exactly when their chains agree up to that unit.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from itertools import accumulate

from mini_claude.simulator.clock import SimClock
from mini_claude.simulator.tokens import chain
from mini_claude.simulator.types import PromptUnit

MIN_CACHEABLE_TOKENS = 1_024
LOOKBACK_BLOCKS = 20
OPENAI_STEP = 128
OPENAI_TTL_SECONDS = 300.0
_PURGE_EVERY = 5_000


@dataclass(frozen=True, slots=True)
class CacheOutcome:
    read_tokens: int = 0
    write_tokens: int = 0


def _chains(units: list[PromptUnit]) -> list[bytes]:
    out: list[bytes] = []
    previous = b""
    for unit in units:
        previous = chain(previous, unit.key)
        out.append(previous)
    return out


class _Entries:
    """Prefix hash -> (expiry, lifetime), with expired entries swept now and then."""

    def __init__(self, clock: SimClock) -> None:
        self.clock = clock
        self._items: dict[bytes, tuple[float, float]] = {}
        self._writes = 0

    def alive(self, key: bytes, now: float) -> bool:
        item = self._items.get(key)
        return item is not None and item[0] > now

    def refresh(self, key: bytes, now: float) -> None:
        _, lifetime = self._items[key]
        self._items[key] = (now + lifetime, lifetime)

    def store(self, key: bytes, now: float, lifetime: float) -> None:
        current = self._items.get(key)
        if current is not None and current[0] > now:
            lifetime = max(lifetime, current[1])
        self._items[key] = (now + lifetime, lifetime)
        self._writes += 1
        if self._writes % _PURGE_EVERY == 0:
            self._items = {k: v for k, v in self._items.items() if v[0] > now}

    def clear(self) -> None:
        self._items.clear()


class AnthropicCache:
    """Explicit breakpoints; reads look back up to 20 blocks before each breakpoint."""

    def __init__(self, clock: SimClock) -> None:
        self._entries = _Entries(clock)
        self._clock = clock
        self._lock = threading.Lock()

    def account(self, units: list[PromptUnit]) -> CacheOutcome:
        breakpoints = [i for i, u in enumerate(units) if u.breakpoint_ttl is not None]
        if not breakpoints:
            return CacheOutcome()
        chains = _chains(units)
        totals = list(accumulate(u.tokens for u in units))
        with self._lock:
            now = self._clock.now()
            read_end = self._longest_hit(breakpoints, chains, now)
            read = totals[read_end] if read_end is not None else 0
            if read_end is not None:
                self._entries.refresh(chains[read_end], now)
            last = breakpoints[-1]
            write = totals[last] - read if totals[last] >= MIN_CACHEABLE_TOKENS else 0
            for point in breakpoints:
                ttl = units[point].breakpoint_ttl
                if totals[point] >= MIN_CACHEABLE_TOKENS and ttl is not None:
                    self._entries.store(chains[point], now, ttl)
        return CacheOutcome(read, max(0, write))

    def _longest_hit(self, breakpoints: list[int], chains: list[bytes], now: float) -> int | None:
        best: int | None = None
        for point in breakpoints:
            for index in range(point, max(-1, point - LOOKBACK_BLOCKS - 1), -1):
                if best is not None and index <= best:
                    break
                if self._entries.alive(chains[index], now):
                    best = index
                    break
        return best

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


class OpenAICache:
    """Automatic prefix caching for long prompts, reported in 128-token steps."""

    def __init__(self, clock: SimClock) -> None:
        self._entries = _Entries(clock)
        self._clock = clock
        self._lock = threading.Lock()

    def account(self, units: list[PromptUnit]) -> CacheOutcome:
        totals = list(accumulate(u.tokens for u in units))
        if not totals or totals[-1] < MIN_CACHEABLE_TOKENS:
            return CacheOutcome()
        chains = _chains(units)
        with self._lock:
            now = self._clock.now()
            matched = 0
            for index in range(len(chains) - 1, -1, -1):
                if self._entries.alive(chains[index], now):
                    matched = totals[index]
                    break
            for index, key in enumerate(chains):
                if totals[index] >= MIN_CACHEABLE_TOKENS:
                    self._entries.store(key, now, OPENAI_TTL_SECONDS)
        cached = matched // OPENAI_STEP * OPENAI_STEP
        return CacheOutcome(read_tokens=cached if cached >= MIN_CACHEABLE_TOKENS else 0)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
