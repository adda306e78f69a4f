"""The model and price tables against the installed SDKs' model lists."""

from __future__ import annotations

import typing

import pytest
from anthropic.types.model_param import ModelParam
from openai.types.shared.chat_model import ChatModel

from mini_claude.models import (
    DEFAULT_MODELS,
    DEFAULT_WINDOW,
    PRICES,
    known_window,
    model_key,
    price_for,
    window_for_model,
)
from mini_claude.pricing import CostTracker
from mini_claude.protocol import Usage
from mini_claude.ui.statusbar import cost_label

ANTHROPIC_MODELS = [
    name for arg in typing.get_args(ModelParam) for name in typing.get_args(arg)
]
OPENAI_MODELS = list(typing.get_args(ChatModel))


def test_the_sdk_lists_were_read() -> None:
    assert "claude-sonnet-5-5" in ANTHROPIC_MODELS
    assert "gpt-5.6-terra" in OPENAI_MODELS


def test_defaults_are_current_models_of_the_sdk_lists_with_known_windows_and_prices() -> None:
    assert DEFAULT_MODELS["anthropic"] in ANTHROPIC_MODELS
    assert DEFAULT_MODELS["openai"] in OPENAI_MODELS
    for model in DEFAULT_MODELS.values():
        assert known_window(model) is not None
        assert price_for(model) is not None


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("claude-sonnet-5-5", 1_000_000),
        ("claude-opus-4-6", 1_000_000),
        ("claude-haiku-4-5-20251001", 200_000),
        ("claude-sonnet-4-5-20250929", 200_000),
        ("gpt-5-2025-08-07", 272_000),
        ("qwen2.5-coder:7b", 32_768),
        ("sim-sonnet", 200_000),
    ],
)
def test_windows_match_names_dates_and_tags(model: str, window: int) -> None:
    assert window_for_model(model) == window


def test_a_newer_model_does_not_borrow_an_older_family_row() -> None:
    """``gpt-5.6-sol`` is not ``gpt-5``; ``claude-fable-5-2`` is not ``claude-fable-5``."""
    assert known_window("claude-fable-5-2") is None
    assert window_for_model("claude-fable-5-2") == DEFAULT_WINDOW
    assert price_for("claude-fable-5-2") is None
    assert price_for("gpt-6.2-sol") is None
    assert price_for("gpt-5.6-sol") != price_for("gpt-5")
    assert model_key("claude-sonnet-5-5[1m]") == "claude-sonnet-5-5"


def test_every_sdk_model_is_priced_or_honestly_unknown() -> None:
    """A listed model either has its own row or none; never a neighbour's row."""
    for model in ANTHROPIC_MODELS + OPENAI_MODELS:
        price = price_for(model)
        if price is not None:
            key = model_key(model)
            assert key in PRICES, model


def test_current_rates() -> None:
    sonnet = price_for("claude-sonnet-5-5")
    assert sonnet is not None
    assert (sonnet.input, sonnet.cache_write, sonnet.cache_read, sonnet.output) == (
        2.00, 2.50, 0.10, 10.00
    )
    million_out = Usage(output_tokens=1_000_000)
    assert sonnet.cost(million_out) == pytest.approx(10.00)


def test_long_prompts_are_billed_at_the_long_rates() -> None:
    haiku = price_for("claude-haiku-5-5")
    assert haiku is not None
    short = Usage(input_tokens=100_000, output_tokens=1_000)
    long = Usage(input_tokens=100_001, output_tokens=1_000)
    assert haiku.cost(short) == pytest.approx((100_000 * 0.10 + 1_000 * 0.50) / 1e6)
    assert haiku.cost(long) == pytest.approx((100_001 * 0.50 + 1_000 * 2.50) / 1e6)
    terra = price_for("gpt-5.6-terra")
    assert terra is not None
    big = Usage(input_tokens=200_000, cache_read_tokens=100_000)
    assert terra.cost(big) == pytest.approx((200_000 * 4.00 + 100_000 * 0.40) / 1e6)


def test_an_unpriced_model_says_price_unknown_not_a_dollar_figure() -> None:
    costs = CostTracker()
    costs.add("claude-mythos-5-2", Usage(input_tokens=5_000, output_tokens=500))
    assert cost_label(costs) == "price unknown"
    assert costs.unpriced_models == {"claude-mythos-5-2"}
    costs.add("claude-sonnet-5-5", Usage(output_tokens=1_000_000))
    label = cost_label(costs)
    assert label.startswith("$10.00") and "price unknown" in label
