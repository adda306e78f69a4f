"""Prompt-cache accounting follows each provider's rules on the simulator's clock."""

from __future__ import annotations

from typing import Any

import anthropic
import openai

from mini_claude.simulator import SimClock, Simulator

MODEL = "sim-claude"
MARK = {"type": "ephemeral"}
# About 2,000 tokens: long enough to be cached on its own.
BIG_SYSTEM = " ".join(f"rule{n} keep the code tidy and tested." for n in range(250))


def claude(sim: Simulator) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test-key", base_url=sim.url, max_retries=0)


def turns(count: int, mark_last: bool = True) -> list[Any]:
    """A growing conversation; the last block carries a breakpoint like our adapter sets."""
    messages: list[Any] = []
    for n in range(count):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"question {n}"}]})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {n}"}]})
    messages.append({"role": "user", "content": [{"type": "text", "text": "next question"}]})
    if mark_last:
        messages[-1]["content"][-1]["cache_control"] = MARK
    return messages


def ask(sim: Simulator, messages: list[Any], system: Any = None) -> Any:
    system = (
        system
        if system is not None
        else [{"type": "text", "text": BIG_SYSTEM, "cache_control": MARK}]
    )
    return (
        claude(sim)
        .messages.create(model=MODEL, max_tokens=8, system=system, messages=messages)
        .usage
    )


def test_second_request_reads_what_the_first_wrote() -> None:
    with Simulator(clock=SimClock(start=0.0)) as sim:
        first = ask(sim, turns(1))
        second = ask(sim, turns(2))
    total_first = sim.requests[0].prompt_tokens
    assert first.cache_read_input_tokens == 0
    assert first.cache_creation_input_tokens == total_first  # breakpoint on the last block
    assert first.input_tokens == 0
    assert second.cache_read_input_tokens < total_first  # the tail of request one changed
    assert second.cache_read_input_tokens > 1_024  # the system prompt at least
    total_second = sim.requests[1].prompt_tokens
    assert (
        second.input_tokens + second.cache_read_input_tokens + second.cache_creation_input_tokens
        == total_second
    )
    assert sim.requests[1].cache_read_tokens == second.cache_read_input_tokens


def test_identical_prefix_is_read_in_full_and_expires_after_five_minutes() -> None:
    clock = SimClock(start=0.0)
    with Simulator(clock=clock) as sim:
        ask(sim, turns(3))
        clock.advance(4 * 60)
        again = ask(sim, turns(3))
        clock.advance(4 * 60)  # eight minutes after the write, four after the refreshing hit
        refreshed = ask(sim, turns(3))
        clock.advance(6 * 60)
        expired = ask(sim, turns(3))
    total = sim.requests[0].prompt_tokens
    assert again.cache_read_input_tokens == total and again.cache_creation_input_tokens == 0
    assert refreshed.cache_read_input_tokens == total
    assert expired.cache_read_input_tokens == 0 and expired.cache_creation_input_tokens == total


def test_one_hour_ttl_survives_six_minutes() -> None:
    clock = SimClock(start=0.0)
    system = [{"type": "text", "text": BIG_SYSTEM, "cache_control": {**MARK, "ttl": "1h"}}]
    with Simulator(clock=clock) as sim:
        ask(sim, turns(1, mark_last=False), system=system)
        clock.advance(6 * 60)
        later = ask(sim, turns(1, mark_last=False), system=system)
    assert later.cache_read_input_tokens > 1_024 and later.cache_creation_input_tokens == 0


def test_short_prompts_are_never_cached() -> None:
    small = [{"type": "text", "text": "short system", "cache_control": MARK}]
    with Simulator(clock=SimClock(start=0.0)) as sim:
        first = ask(sim, turns(1), system=small)
        second = ask(sim, turns(1), system=small)
    assert sim.requests[0].prompt_tokens < 1_024
    for usage in (first, second):
        assert usage.cache_read_input_tokens == 0 and usage.cache_creation_input_tokens == 0
        assert usage.input_tokens == sim.requests[0].prompt_tokens


def test_no_breakpoint_means_no_cache_activity() -> None:
    with Simulator(clock=SimClock(start=0.0)) as sim:
        ask(sim, turns(2, mark_last=False), system=BIG_SYSTEM)
        usage = ask(sim, turns(2, mark_last=False), system=BIG_SYSTEM)
    assert usage.cache_read_input_tokens == 0 and usage.cache_creation_input_tokens == 0


def test_lookback_finds_a_prefix_at_most_twenty_blocks_back() -> None:
    """A breakpoint only at the end finds the earlier entry within 20 blocks, not beyond."""

    def with_extra_blocks(extra: int) -> list[Any]:
        messages = turns(1, mark_last=False)  # same prefix; the breakpoint moves to the end
        blocks: list[dict[str, Any]] = [{"type": "text", "text": f"note {i}"} for i in range(extra)]
        blocks[-1]["cache_control"] = MARK
        messages.append({"role": "assistant", "content": [{"type": "text", "text": "ok"}]})
        messages.append({"role": "user", "content": blocks})
        return messages

    plain_system = BIG_SYSTEM  # no breakpoint on the system: only the message breakpoints count
    with Simulator(clock=SimClock(start=0.0)) as near_sim:
        ask(near_sim, turns(1), system=plain_system)
        near = ask(near_sim, with_extra_blocks(10), system=plain_system)
    with Simulator(clock=SimClock(start=0.0)) as far_sim:
        ask(far_sim, turns(1), system=plain_system)
        far = ask(far_sim, with_extra_blocks(30), system=plain_system)
    assert near.cache_read_input_tokens == near_sim.requests[0].prompt_tokens
    assert far.cache_read_input_tokens == 0
    assert far.cache_creation_input_tokens == far_sim.requests[1].prompt_tokens


def test_openai_caches_long_prefixes_in_128_token_steps() -> None:
    clock = SimClock(start=0.0)

    def messages(extra: int) -> list[Any]:
        out: list[Any] = [{"role": "system", "content": BIG_SYSTEM}]
        for n in range(extra):
            out += [
                {"role": "user", "content": f"question {n}"},
                {"role": "assistant", "content": f"answer {n}"},
            ]
        return [*out, {"role": "user", "content": "and now?"}]

    with Simulator(clock=clock) as sim:
        client = openai.OpenAI(api_key="k", base_url=sim.openai_base_url, max_retries=0)

        def cached(extra: int) -> int:
            usage = client.chat.completions.create(model="gpt-4.1", messages=messages(extra)).usage
            assert usage is not None and usage.prompt_tokens_details is not None
            return usage.prompt_tokens_details.cached_tokens or 0

        first = cached(1)
        second = cached(3)
        clock.advance(6 * 60)
        expired = cached(3)
        short = client.chat.completions.create(
            model="gpt-4.1", messages=[{"role": "user", "content": "hi"}]
        ).usage
    assert first == 0
    assert second > 1_024 and second % 128 == 0
    assert second <= sim.requests[0].prompt_tokens
    assert sim.requests[0].prompt_tokens - second < 128 + 20  # all but the changed tail
    assert expired == 0
    assert short is not None and short.prompt_tokens_details is not None
    assert short.prompt_tokens_details.cached_tokens == 0
