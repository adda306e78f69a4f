"""Dollar cost of usage, with cache reads and writes priced on their own.

Prices come from the providers' pricing pages (Anthropic: platform.claude.com
/docs/en/about-claude/pricing; OpenAI: developers.openai.com/api/docs/pricing)
as of November 2026. A model with no row here is counted in tokens only and
shown as "price unknown": a wrong dollar figure is worse than none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mini_claude.protocol import Usage
from mini_claude.settings import table_lookup


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens.

    ``long_prompt_above`` and ``long_prompt``: a request whose prompt (input plus
    cache reads and writes) exceeds that many tokens is billed, every token of it,
    at the other rates (Haiku 5.5 above 100K, OpenAI's newest models above 272K).
    """

    input: float
    cache_write: float
    cache_read: float
    output: float
    long_prompt_above: int | None = None
    long_prompt: Price | None = None

    def for_prompt(self, prompt_tokens: int) -> Price:
        """The rates that apply to one request of this prompt size."""
        if (
            self.long_prompt is not None
            and self.long_prompt_above is not None
            and prompt_tokens > self.long_prompt_above
        ):
            return self.long_prompt
        return self

    def cost(self, usage: Usage) -> float:
        """One response's cost; reasoning and thinking tokens are in ``output_tokens``."""
        rates = self.for_prompt(usage.prompt_tokens)
        return (
            usage.input_tokens * rates.input
            + usage.cache_write_tokens * rates.cache_write
            + usage.cache_read_tokens * rates.cache_read
            + usage.output_tokens * rates.output
        ) / 1_000_000


def _openai(input_: float, cached: float, output: float, *, writes: bool = True) -> Price:
    """OpenAI rates: cache writes cost 1.25x input on the models that bill them, and a
    prompt over 272K tokens costs 2x input and cache, 1.5x output (``writes`` models)."""
    write = input_ * 1.25 if writes else 0.0
    if not writes:
        return Price(input_, write, cached, output)
    long = Price(input_ * 2, write * 2, cached * 2, output * 1.5)
    return Price(input_, write, cached, output, 272_000, long)


SONNET_4 = Price(3.00, 3.75, 0.30, 15.00)
SONNET = SONNET_4  # the simulated models are priced like a Sonnet 4
OPUS_4_5 = Price(5.00, 6.25, 0.50, 25.00)
OPUS_4 = Price(15.00, 18.75, 1.50, 75.00)
FABLE_5 = Price(10.00, 12.50, 1.00, 50.00)
FABLE_5_1 = Price(10.00, 12.50, 0.25, 50.00)

# Exact names (after a date suffix is dropped); a key ending in "-" is a prefix.
# Cache writes are free on OpenAI's older models (automatic caching).
PRICES: dict[str, Price] = {
    "claude-fable-5-1": FABLE_5_1,
    "claude-mythos-5-1": FABLE_5_1,
    "claude-fable-5": FABLE_5,
    "claude-mythos-5": FABLE_5,
    "claude-opus-5-5": Price(4.00, 5.00, 0.20, 20.00),
    "claude-opus-5": OPUS_4_5,
    "claude-opus-4-8": OPUS_4_5,
    "claude-opus-4-7": OPUS_4_5,
    "claude-opus-4-6": OPUS_4_5,
    "claude-opus-4-5": OPUS_4_5,
    "claude-opus-4-1": OPUS_4,
    "claude-opus-4": OPUS_4,
    "claude-sonnet-5-5": Price(2.00, 2.50, 0.10, 10.00),  # cache reads $0.10 since 2026-10-07
    "claude-sonnet-5": Price(2.00, 2.50, 0.20, 10.00),
    "claude-sonnet-4-6": SONNET_4,
    "claude-sonnet-4-5": SONNET_4,
    "claude-sonnet-4": SONNET_4,
    "claude-3-7-sonnet": SONNET_4,
    "claude-3-5-sonnet": SONNET_4,
    "claude-haiku-5-5": Price(
        0.10, 0.125, 0.01, 0.50, 100_000, Price(0.50, 0.625, 0.05, 2.50)
    ),
    "claude-haiku-4-5": Price(1.00, 1.25, 0.10, 5.00),
    "claude-3-5-haiku": Price(0.80, 1.00, 0.08, 4.00),
    "gpt-6-astra": _openai(10.00, 1.00, 50.00),
    "gpt-6-sol": _openai(2.00, 0.20, 10.00),
    "gpt-6-luna": _openai(0.10, 0.01, 0.50),
    "gpt-6.1-terra": _openai(1.00, 0.05, 5.00),
    "gpt-5.6-sol": _openai(5.00, 0.50, 30.00),
    "gpt-5.6-terra": _openai(2.00, 0.20, 12.00),
    "gpt-5.6-luna": _openai(0.20, 0.02, 1.20),
    "gpt-5.5": _openai(5.00, 0.50, 30.00, writes=False),
    "gpt-5.4": _openai(2.50, 0.25, 15.00, writes=False),
    "gpt-5.4-mini": _openai(0.75, 0.075, 4.50, writes=False),
    "gpt-5": _openai(1.25, 0.125, 10.00, writes=False),
    "gpt-5-mini": _openai(0.25, 0.025, 2.00, writes=False),
    "gpt-5-nano": _openai(0.05, 0.005, 0.40, writes=False),
    "gpt-4.1": _openai(2.00, 0.50, 8.00, writes=False),
    "gpt-4.1-mini": _openai(0.40, 0.10, 1.60, writes=False),
    "gpt-4.1-nano": _openai(0.10, 0.025, 0.40, writes=False),
    "gpt-4o": _openai(2.50, 1.25, 10.00, writes=False),
    "gpt-4o-mini": _openai(0.15, 0.075, 0.60, writes=False),
    "o3": _openai(2.00, 0.50, 8.00, writes=False),
    "o4-mini": _openai(1.10, 0.275, 4.40, writes=False),
    "sim-": SONNET_4,
}


def price_for(model: str) -> Price | None:
    return table_lookup(PRICES, model)


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
        self.api_seconds = 0.0  # time spent waiting on the model, all calls

    def add(self, model: str, usage: Usage, *, summary: bool = False) -> float:
        """Record one response's usage; returns its cost (0 when unpriced)."""
        self.usage = self.usage + usage
        self.requests += 1
        price = price_for(model)
        cost = 0.0 if price is None else price.cost(usage)
        if price is None:
            self.priced = False
            self.unpriced_models.add(model)
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
