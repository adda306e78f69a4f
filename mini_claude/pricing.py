"""Dollar cost of usage, with cache reads and writes priced on their own."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mini_claude.protocol import Usage


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens."""

    input: float
    cache_write: float
    cache_read: float
    output: float

    def cost(self, usage: Usage) -> float:
        return (
            usage.input_tokens * self.input
            + usage.cache_write_tokens * self.cache_write
            + usage.cache_read_tokens * self.cache_read
            + usage.output_tokens * self.output
        ) / 1_000_000


SONNET = Price(3.00, 3.75, 0.30, 15.00)

# Prefix match, longest first. Cache writes are free on OpenAI (automatic caching).
PRICES: dict[str, Price] = {
    "claude-opus-4-5": Price(5.00, 6.25, 0.50, 25.00),
    "claude-opus-4": Price(15.00, 18.75, 1.50, 75.00),
    "claude-sonnet-4": SONNET,
    "claude-3-7-sonnet": SONNET,
    "claude-3-5-sonnet": SONNET,
    "claude-haiku-4": Price(1.00, 1.25, 0.10, 5.00),
    "claude-3-5-haiku": Price(0.80, 1.00, 0.08, 4.00),
    "gpt-5": Price(1.25, 0.0, 0.125, 10.00),
    "gpt-4.1-mini": Price(0.40, 0.0, 0.10, 1.60),
    "gpt-4.1": Price(2.00, 0.0, 0.50, 8.00),
    "gpt-4o-mini": Price(0.15, 0.0, 0.075, 0.60),
    "gpt-4o": Price(2.50, 0.0, 1.25, 10.00),
    "sim-": SONNET,
}


def price_for(model: str) -> Price | None:
    for prefix in sorted(PRICES, key=len, reverse=True):
        if model.startswith(prefix):
            return PRICES[prefix]
    return None


@dataclass
class CallTally:
    """Usage, money and count of one kind of model call."""

    usage: Usage = field(default_factory=Usage)
    dollars: float = 0.0
    requests: int = 0


class CostTracker:
    """Running totals for a session (every model call, summaries included);
    unknown models are counted in tokens only."""

    def __init__(self) -> None:
        self.usage = Usage()
        self.dollars = 0.0
        self.priced = True
        self.requests = 0
        self.summaries = CallTally()  # the summary calls' share of the totals above
        self.api_seconds = 0.0  # time spent waiting on the model, all calls

    def add(self, model: str, usage: Usage, *, summary: bool = False) -> float:
        """Record one response's usage; returns its cost (0 when unpriced)."""
        self.usage = self.usage + usage
        self.requests += 1
        price = price_for(model)
        cost = 0.0 if price is None else price.cost(usage)
        if price is None:
            self.priced = False
        self.dollars += cost
        if summary:
            self.summaries.usage = self.summaries.usage + usage
            self.summaries.dollars += cost
            self.summaries.requests += 1
        return cost

    def replay(self, records: Iterable[Mapping[str, Any]], default_model: str) -> None:
        """Add the usage a transcript recorded, so a resumed session's totals go on from there.

        Records written before the model was noted are priced at ``default_model``
        (the model the session started with).
        """
        for record in records:
            usage = Usage(**{name: int(record.get(name, 0)) for name in USAGE_FIELDS})
            self.add(str(record.get("model") or default_model), usage,
                     summary=bool(record.get("summary", False)))


USAGE_FIELDS = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
