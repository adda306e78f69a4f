"""Dollar cost of usage, with cache reads and writes priced on their own.

The prices are a table in :mod:`mini_claude.models`; a model with no row is counted
in tokens only and shown as "price unknown": a wrong dollar figure is worse than none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from mini_claude.models import price_for
from mini_claude.protocol import Usage

PRICE_UNKNOWN = "price unknown"


def cost_notes(usage: Usage, cache_misses: str) -> str:
    """The line under /cost: reasoning inside the output (billed as output), cache misses."""
    if not usage.thinking_tokens:
        return cache_misses
    return f"output includes {usage.thinking_tokens:,} reasoning tokens · {cache_misses}"


@dataclass
class CallTally:
    """Usage, money and count of one kind of model call."""

    usage: Usage = field(default_factory=Usage)
    dollars: float = 0.0
    requests: int = 0

    def count(self, usage: Usage, dollars: float) -> None:
        """One more call of this kind."""
        self.usage = self.usage + usage
        self.dollars += dollars
        self.requests += 1


class CostTracker:
    """Running totals for a session (every model call, summaries included);
    unknown models are counted in tokens only."""

    def __init__(self) -> None:
        self.usage = Usage()
        self.dollars = 0.0
        self.priced = True
        self.unpriced_models: set[str] = set()
        self.requests = 0
        self.summaries = CallTally()  # the summary calls' share of the totals above
        self.subagents = CallTally()  # the task tool's sub-agents' share (summaries included)
        self.pings = CallTally()  # keep-alive reads of the cache while the user was away
        self.api_seconds = 0.0  # time spent waiting on the model, all calls
        self.by_model: dict[str, CallTally] = {}  # the same totals, per model

    def add(self, model: str, usage: Usage, *, summary: bool = False, ping: bool = False) -> float:
        """Record one response's usage; returns its cost (0 when unpriced)."""
        self.usage = self.usage + usage
        self.requests += 1
        price = price_for(model)
        cost = 0.0 if price is None else price.cost(usage)
        if price is None:
            self.priced = False
            self.unpriced_models.add(model)
        self.dollars += cost
        self.by_model.setdefault(model, CallTally()).count(usage, cost)
        if summary:
            self.summaries.count(usage, cost)
        if ping:
            self.pings.count(usage, cost)
        return cost

    def totals(self) -> dict[str, Any]:
        return {"requests": self.requests, "usage": asdict(self.usage), "cost_usd": self.dollars}

    def replay(self, records: Iterable[Mapping[str, Any]], default_model: str) -> None:
        """Add the usage a transcript recorded, so a resumed session's totals go on from there.

        Records written before the model was noted are priced at ``default_model``
        (the model the session started with).
        """
        for record in records:
            usage = Usage.from_record(record)
            self.add(str(record.get("model") or default_model), usage,
                     summary=bool(record.get("summary", False)),
                     ping=bool(record.get("ping", False)))

