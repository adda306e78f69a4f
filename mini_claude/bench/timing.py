"""How long the user waits for compactions, in simulated time.

The simulator answers at once, so the wait is computed from each request's tokens with a
model of a real Sonnet-class service:

- time to first token: 1.8 s at a short prompt (Artificial Analysis' median for Claude Sonnet
  4.5, 63 output tokens a second at the same measurement), plus prefill: uncached input at
  8,000 tokens a second (a 150K-token prompt written fresh takes about 20 s before the first
  token, as long-context users report) and cached input at 80,000 tokens a second (a cache hit
  is about ten times quicker to start, as the provider's caching guide says);
- then the output at 63 tokens a second.

A summary call makes the user wait for all of it. Session notes make nobody wait at the
moment of compaction; if the notes used were asked for so recently that their update could
not have finished yet, the rest of that update's time is counted as a wait.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from mini_claude.bench.runner import CompactionMark, RequestRecord, RunResult

FIRST_TOKEN_SECONDS = 1.8
UNCACHED_TOKENS_PER_SECOND = 8_000
CACHED_TOKENS_PER_SECOND = 80_000
OUTPUT_TOKENS_PER_SECOND = 63


def request_seconds(record: RequestRecord) -> float:
    """Simulated seconds from sending ``record`` to its last token."""
    uncached = record.input_tokens + record.cache_write_tokens
    return (FIRST_TOKEN_SECONDS + uncached / UNCACHED_TOKENS_PER_SECOND
            + record.cache_read_tokens / CACHED_TOKENS_PER_SECOND
            + record.output_tokens / OUTPUT_TOKENS_PER_SECOND)


@dataclass(frozen=True, slots=True)
class Waits:
    per_compaction: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.per_compaction) if self.per_compaction else 0.0

    @property
    def p95(self) -> float:
        if not self.per_compaction:
            return 0.0
        ordered = sorted(self.per_compaction)
        return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]

    @property
    def total(self) -> float:
        return sum(self.per_compaction)


def compaction_waits(run: RunResult) -> Waits:
    return Waits(tuple(_wait(run.requests, mark) for mark in run.compactions))


def _wait(requests: Sequence[RequestRecord], mark: CompactionMark) -> float:
    if mark.from_notes:
        update = next((r for r in reversed(requests[: mark.request_index]) if r.is_notes), None)
        if update is None:
            return 0.0
        return max(0.0, request_seconds(update) - (mark.notes_age_seconds or 0.0))
    calls = []
    for record in requests[mark.request_index:]:
        if not record.is_summary:
            break
        calls.append(record)
    return sum(request_seconds(r) for r in calls)
