"""What the user reads when a compaction fails: one line per streak, not one per attempt.

A failed automatic summary leaves the history as it was and the tiers keep
clearing old results, so the user needs to hear it once, and again only when
auto-compact gives up (the breaker opens) and /compact is the way on.
"""

from __future__ import annotations

from mini_claude.events import CompactionFailed

ASKED_FOR = frozenset({"manual", "tool"})  # someone asked for this summary: always answer


def failure_notice(event: CompactionFailed) -> str | None:
    """The line for a failed compaction, or None when this streak was already told."""
    if event.reason in ASKED_FOR:
        return f"compaction failed: {event.error}"
    if event.breaker_open:
        return (
            f"auto-compact stopped after {event.failures} failed summaries ({event.error}); "
            "older tool results are still cleared, and /compact tries by hand"
        )
    if event.failures > 1:
        return None
    return (
        f"auto-compact failed ({event.error}); older tool results are cleared meanwhile, "
        "and it tries again after more work"
    )
