"""How long the user waits for compactions, in simulated time.

The simulator answers at once, so the wait is computed from each request's tokens with a
model of a real Sonnet-class service:

- time to first token: 1.8 s at a short prompt (Artificial Analysis' median for Claude Sonnet
  4.5, 63 output tokens a second at the same measurement), plus prefill: uncached input at
  8,000 tokens a second (a 150K-token prompt written fresh takes about 20 s before the first
  token, as long-context users report) and cached input at 80,000 tokens a second (a cache hit
  is about ten times quicker to start, as the provider's caching guide says);
- then the output at 63 tokens a second.

A compaction's wait is what the main loop stands still beyond a normal step, the quantity
``tests/agent/test_compaction_stall.py`` measures on the wire (``make wait-bench`` at full
latency): a summary call makes the user wait for all of it; notes that have arrived make
nobody wait, and nothing waits for notes still on their way (they stand in at a later
compaction, re-based), so a compaction from notes counts 0 s.
"""

from __future__ import annotations

from mini_claude.protocol import Usage

FIRST_TOKEN_SECONDS = 1.8
UNCACHED_TOKENS_PER_SECOND = 8_000
CACHED_TOKENS_PER_SECOND = 80_000
OUTPUT_TOKENS_PER_SECOND = 63


def response_seconds(uncached: int, cached: int, output: int) -> float:
    """Simulated seconds from sending a request to its last token."""
    return (FIRST_TOKEN_SECONDS + uncached / UNCACHED_TOKENS_PER_SECOND
            + cached / CACHED_TOKENS_PER_SECOND + output / OUTPUT_TOKENS_PER_SECOND)


def usage_seconds(usage: Usage) -> float:
    return response_seconds(usage.input_tokens + usage.cache_write_tokens,
                            usage.cache_read_tokens, usage.output_tokens)
