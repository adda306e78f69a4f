"""Shared types of the context pipeline: what a tier reports, where cleared text goes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class TierReport:
    """What one tier did in one pass; the agent turns it into an event."""

    tier: str  # "persist" | "truncate" | "budget" | "snip" | "microcompact" | "compact"
    results_touched: int
    chars_freed: int
    tokens_freed: int
    detail: str = ""

    def describe(self) -> str:
        """One line for the UI, e.g. ``snip: 4 stale results cleared, 12.3k tokens freed``."""
        verb = {"budget": "trimmed", "snip": "cleared", "microcompact": "cleared"}.get(
            self.tier, "edited"
        )
        noun = "result" if self.results_touched == 1 else "results"
        extra = f" ({self.detail})" if self.detail else ""
        return (
            f"{self.tier}: {self.results_touched} {noun} {verb}, "
            f"{format_tokens(self.tokens_freed)} tokens freed{extra}"
        )


class ResultStore(Protocol):
    """Writes full tool output to disk so that nothing cleared is lost."""

    def save(self, tool_name: str, content: str) -> str | None:
        """Write ``content`` and return its path, or None when the disk refused."""
        ...


def format_tokens(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 1_000:
        return f"{n / 1_000:.1f}k"
    return str(n)
