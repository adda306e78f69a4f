"""Compactor.compact end to end: real adapters and SDKs over HTTP against the simulator."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar

import pytest

from mini_claude.context.compact import (
    THRASH_MIN_NEW_WORK,
    CompactionError,
    CompactionResult,
    Compactor,
    SummaryContext,
)
from mini_claude.context.meter import TokenMeter
from mini_claude.context.reattach import Reattachment, is_reattachment
from mini_claude.context.rebuild import ACK_TEXT, USER_TEXT_LABEL
from mini_claude.context.store import DiskResultStore
from mini_claude.conversation import (
    Conversation,
    Message,
    SummaryBlock,
    TextBlock,
    ToolResultBlock,
    message_to_dict,
    validate,
)
from mini_claude.prompts import SUMMARY_HEADING
from mini_claude.protocol import CompactReason, ModelRequest, ResponseComplete, ToolSpec
from mini_claude.providers import create_provider
from mini_claude.settings import Settings
from mini_claude.simulator import Fault, RecordedRequest, Reply, ScriptedPolicy, Simulator
from tests.support.compact import call, exchange, read, reply, shell, user

Protocol = Literal["anthropic", "openai"]
PROTOCOLS: list[Protocol] = ["anthropic", "openai"]
WINDOW = 24_000  # reserve 6K: effective 18K, auto-compact above 15.3K, target 9K
SYSTEM = "You are a careful coding agent working in a small project."
TOOLS = [
    ToolSpec("read_file", "Read a file.", {
        "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    ToolSpec("run_shell", "Run a command.", {
        "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
]
FACTS = ["FACT-port the service listens on port 8443",
         "FACT-owner the billing module belongs to team Heron"]

T = TypeVar("T")


def log_lines(tag: str, count: int) -> str:
    return "".join(f"{tag} line {i}: request handled in {i % 97} ms\n" for i in range(count))


class Harness:
    """A compactor and a conversation wired to the simulator the way the agent wires them."""

    def __init__(self, sim: Simulator, protocol: Protocol, home: Path, root: Path,
                 **overrides: Any) -> None:
        values: dict[str, Any] = {
            "provider": protocol,
            "model": "sim-model",
            "context_window": WINDOW,
            "home": home,
            "max_retries": 0,
            "api_keys": {"anthropic": "sk-test-compact", "openai": "sk-test-compact"},
            "base_urls": {"anthropic": sim.anthropic_base_url, "openai": sim.openai_base_url},
        }
        values.update(overrides)
        self.sim = sim
        self.loop = asyncio.new_event_loop()  # one loop: the SDK client is bound to it
        self.settings = Settings(**values)
        schemas = json.dumps([t.input_schema for t in TOOLS])
        self.meter = TokenMeter(self.settings, fixed_chars=len(SYSTEM) + len(schemas))
        self.compactor = Compactor(self.settings, self.meter,
                                   DiskResultStore(self.settings, "compact-e2e"))
        self.conversation = Conversation()
        self.provider = create_provider(self.settings)
        self.ctx = SummaryContext(self.provider, "sim-model", SYSTEM, TOOLS, root,
                                  str(home / "transcripts" / "compact-e2e.jsonl"))

    def run(self, coro: Awaitable[T]) -> T:
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        self.run(self.provider.close())
        self.loop.close()

    def add(self, *messages: Message) -> None:
        for message in messages:
            self.conversation.append(message)

    async def call(self) -> ResponseComplete:
        """One normal request for the whole conversation; the reply is appended."""
        request = ModelRequest("sim-model", SYSTEM, list(self.conversation.messages), TOOLS,
                               max_tokens=min(self.settings.max_output_tokens,
                                              self.settings.reserve))
        final: ResponseComplete | None = None
        async for event in self.provider.stream(request):
            if isinstance(event, ResponseComplete):
                final = event
        assert final is not None
        if final.usage is not None:
            self.meter.observe(final.usage.prompt_tokens, self.conversation)
        self.conversation.append(final.message)
        return final

    async def compact(
        self, reason: CompactReason = "auto", focus: str | None = None
    ) -> CompactionResult:
        return await self.compactor.compact(self.conversation, self.ctx, reason=reason,
                                            focus=focus)

    def snapshot(self) -> list[dict[str, Any]]:
        return [message_to_dict(m) for m in self.conversation.messages]

    @property
    def tokens(self) -> int:
        return self.meter.estimate(self.conversation)

    def summary_requests(self) -> list[RecordedRequest]:
        return [r for r in self.sim.requests if r.is_summary_request]


@pytest.fixture(params=PROTOCOLS)
def harness(request: pytest.FixtureRequest, simulator: Simulator, isolated_home: Path,
            tmp_path: Path) -> Iterator[Harness]:
    root = tmp_path / "project"
    root.mkdir()
    h = Harness(simulator, request.param, isolated_home, root)
    yield h
    h.close()


def busy_history(h: Harness, turns: int = 3, reads_per_turn: int = 4) -> None:
    """Finished turns of file reads whose results carry the planted facts."""
    for turn in range(turns):
        h.add(user(f"turn {turn}: look through the service logs"))
        for i in range(reads_per_turn):
            fact = FACTS[(turn * reads_per_turn + i) % len(FACTS)]
            h.add(*read(f"logs/{turn}-{i}.log", log_lines(f"t{turn}r{i}", 30) + fact + "\n"))
        h.add(reply(f"Turn {turn} done."))


def fill_to_threshold(h: Harness) -> None:
    """Finished exchanges until the estimate passes the auto-compact threshold."""
    n = 0
    while h.tokens <= h.settings.autocompact_tokens:
        h.add(*shell(f"cat big-{n}.log", log_lines(f"big{n}", 40)))
        n += 1


def strip_cache_marks(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_cache_marks(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_marks(v) for v in value]
    return value


def wire_messages(record: RecordedRequest) -> list[Any]:
    return list(strip_cache_marks(record.body["messages"]))


def last_user_text(record: RecordedRequest) -> str:
    assert record.conversation is not None
    return record.conversation.messages[-1].text


def assert_accepted_by_the_server(h: Harness) -> None:
    """The rebuilt history is a valid request for the strict simulator."""
    before = len(h.sim.requests)
    h.run(h.call())
    assert h.sim.requests[before].status == 200


# ---- the request ------------------------------------------------------------------------


def test_summary_request_reuses_the_previous_request_as_its_prefix(harness: Harness) -> None:
    h = harness
    h.sim.policy = ScriptedPolicy([Reply("All three turns are done.")])
    busy_history(h)
    h.add(user("what did the logs say?"))
    h.run(h.call())
    normal = h.sim.requests[-1]
    h.add(user("next: fix the port"))
    result = h.run(h.compact())
    summary_request = h.sim.requests[-1]
    assert summary_request.is_summary_request
    sent, before = wire_messages(summary_request), wire_messages(normal)
    assert sent[: len(before)] == before
    assert len(sent) == len(before) + 2  # the reply, then the instruction
    assert last_user_text(summary_request).startswith(SUMMARY_HEADING)
    body = summary_request.body
    if h.settings.provider == "anthropic":
        assert body["tool_choice"] == {"type": "none"}
        assert strip_cache_marks(body["system"]) == strip_cache_marks(normal.body["system"])
        assert summary_request.cache_read_tokens > 0  # the history came from the cache
    else:
        assert body["tool_choice"] == "none"
    assert strip_cache_marks(body["tools"]) == strip_cache_marks(normal.body["tools"])
    assert result.tokens_before > result.tokens_after
    assert_accepted_by_the_server(h)


def test_facts_from_tool_results_survive_into_the_summary(harness: Harness) -> None:
    h = harness
    busy_history(h)
    h.add(user("carry on"))
    result = h.run(h.compact())
    for fact in FACTS:
        assert fact in result.summary
    boundary = h.conversation.messages[0].blocks[0]
    assert isinstance(boundary, SummaryBlock) and boundary.summary == result.summary
    assert boundary.transcript_path == h.ctx.transcript_path
    assert "<analysis>" not in result.summary
    assert h.conversation.messages[-1].text == "carry on"
    assert validate(h.conversation.messages) == []


def test_focus_text_reaches_the_request(harness: Harness) -> None:
    h = harness
    busy_history(h, turns=2)
    result = h.run(h.compact("manual", focus="the billing ownership"))
    assert last_user_text(h.summary_requests()[-1]).endswith("Focus: the billing ownership")
    assert "the billing ownership" in result.summary


def test_dangling_tool_calls_are_not_sent_and_stay_last(harness: Harness) -> None:
    h = harness
    busy_history(h, turns=2)
    h.add(user("compact yourself"), Message("assistant", [call("compact", focus="logs")]))
    result = h.run(h.compact("tool"))
    sent = h.summary_requests()[-1]
    assert sent.conversation is not None
    assert not any(m.tool_uses for m in sent.conversation.messages[-2:])
    last = h.conversation.messages[-1]
    assert last.role == "assistant" and last.tool_uses and last.tool_uses[0].name == "compact"
    assert result.messages_kept >= 1


# ---- failures leave everything as it was ---------------------------------------------


@pytest.mark.parametrize("fault", ["empty_summary", "summary_error", "long_summary"])
def test_bad_summaries_leave_the_conversation_unchanged(harness: Harness, fault: Any) -> None:
    h = harness
    busy_history(h)
    h.add(user("continue"))
    before, epoch = h.snapshot(), h.conversation.epoch
    h.sim.inject(Fault(fault))
    with pytest.raises(CompactionError) as raised:
        h.run(h.compact())
    assert "\n" not in str(raised.value)
    assert h.snapshot() == before and h.conversation.epoch == epoch
    assert h.compactor.consecutive_failures == 1
    assert not h.compactor.breaker_open


def test_three_failures_open_the_breaker_and_a_manual_success_closes_it(
    harness: Harness,
) -> None:
    h = harness
    busy_history(h)
    h.add(user("continue"))
    fill_to_threshold(h)
    assert h.compactor.should_auto_compact(h.conversation)
    h.sim.inject(Fault("empty_summary", times=3))
    for _ in range(3):
        with pytest.raises(CompactionError, match="empty summary"):
            h.run(h.compact())
    assert h.compactor.breaker_open
    assert not h.compactor.should_auto_compact(h.conversation)
    assert not h.compactor.needs_mid_turn_compaction(h.conversation)
    h.run(h.compact("manual"))
    assert not h.compactor.breaker_open and h.compactor.consecutive_failures == 0


def test_a_failed_attempt_is_not_retried_until_the_history_changes(harness: Harness) -> None:
    h = harness
    busy_history(h)
    h.add(user("continue"))
    fill_to_threshold(h)
    h.sim.inject(Fault("summary_error"))
    with pytest.raises(CompactionError, match="summary request failed"):
        h.run(h.compact())
    assert not h.compactor.needs_mid_turn_compaction(h.conversation)
    h.add(reply("working on it"), user("go on"))
    assert h.compactor.should_auto_compact(h.conversation)


def test_prompt_too_long_on_the_summary_drops_old_turns_and_succeeds(harness: Harness) -> None:
    h = harness
    busy_history(h, turns=4)
    h.add(user("continue"))
    h.sim.inject(Fault("prompt_too_long"))  # the summary request is the next request
    result = h.run(h.compact())
    first, second = h.summary_requests()[-2:]
    assert first.status == 400 and second.status == 200
    assert second.prompt_tokens < first.prompt_tokens
    assert second.conversation is not None
    assert "earlier messages of this session are left out" in \
        second.conversation.messages[0].text
    assert any("oldest messages out of the summary request" in e for e in result.escalations)
    if h.settings.provider == "anthropic":
        assert "cache_control" not in json.dumps(second.body)  # reshaped: no cache write
    assert validate(h.conversation.messages) == []


def test_history_estimated_over_the_window_is_shortened_before_sending(
    harness: Harness,
) -> None:
    h = harness
    busy_history(h, turns=4)
    h.add(user("continue"))
    max_summary = min(h.settings.summary_max_tokens, h.settings.reserve)
    while h.tokens <= h.settings.window - max_summary:  # past where any summary fits
        h.add(*shell(f"cat more-{len(h.conversation)}.log", log_lines("more", 60)))
    result = h.run(h.compact("prompt-too-long"))
    [sent] = h.summary_requests()
    assert sent.status == 200  # no round trip wasted on a request known to be too long
    assert sent.conversation is not None
    assert "left out of this request" in sent.conversation.messages[0].text
    assert result.escalations and result.tokens_after < h.settings.effective_window // 2


def test_summary_request_too_long_every_time_fails_cleanly(harness: Harness) -> None:
    h = harness
    busy_history(h, turns=6, reads_per_turn=2)
    h.add(user("continue"))
    before = h.snapshot()
    h.sim.inject(Fault("prompt_too_long", times=10))
    with pytest.raises(CompactionError, match="too long"):
        h.run(h.compact())
    assert len(h.summary_requests()) <= h.settings.summary_retry_limit + 1
    assert h.snapshot() == before


# ---- headroom, re-attached files, mid-turn --------------------------------------------


def test_compaction_leaves_real_headroom(harness: Harness) -> None:
    h = harness
    busy_history(h)
    h.add(user("continue"))
    fill_to_threshold(h)
    result = h.run(h.compact())
    target = h.compactor.limits().target_tokens
    assert result.tokens_after <= target < result.tokens_before
    assert result.tokens_after == h.tokens
    assert not h.compactor.should_auto_compact(h.conversation)
    assert_accepted_by_the_server(h)


def test_recent_files_come_back_fresh_from_disk(harness: Harness) -> None:
    h = harness
    root = h.ctx.root
    (root / "app.py").write_text("PORT = 8443  # edited after it was read\n")
    (root / "util.py").write_text("def helper():\n    return 1\n")
    h.add(user("read the code"), *read("util.py", "old util"), *read("app.py", "PORT = 80"),
          reply("read both"))
    busy_history(h, turns=2)
    h.add(user("now change the port"))
    result = h.run(h.compact())
    assert result.files_reattached == ["app.py", "util.py"]
    boundary_text = "\n".join(b.text for b in h.conversation.messages[0].blocks
                              if isinstance(b, TextBlock))
    assert "PORT = 8443  # edited after it was read" in boundary_text
    assert_accepted_by_the_server(h)


def test_mid_turn_compaction_keeps_the_request_and_the_newest_exchanges(
    harness: Harness,
) -> None:
    h = harness
    h.add(user("an old request"), reply("handled"))
    h.add(user("review every log file"))
    n = 0
    while not h.compactor.needs_mid_turn_compaction(h.conversation):
        h.add(*read(f"logs/{n}.log", log_lines(f"f{n}", 40)))
        n += 1
    last_exchange = [message_to_dict(m) for m in h.conversation.messages[-2:]]
    result = h.run(h.compact("mid-turn"))
    messages = h.conversation.messages
    assert messages[1].role == "assistant" and messages[1].text != ACK_TEXT  # no ack mid-turn
    kept = [b.text for b in messages[0].blocks if isinstance(b, TextBlock)
            and b.text.startswith(USER_TEXT_LABEL)]
    assert any(t.endswith("review every log file") for t in kept)
    assert [message_to_dict(m) for m in messages[-2:]] == last_exchange
    assert validate(messages) == []
    assert result.tokens_after <= h.settings.effective_window // 2
    assert not h.compactor.needs_mid_turn_compaction(h.conversation)
    assert_accepted_by_the_server(h)


def test_a_mid_turn_compaction_keeps_a_big_result_the_model_has_not_read_whole(
    harness: Harness,
) -> None:
    """The result that pushed the history over the threshold came back after the last model
    call: the summary replaces what came before it, and the model reads the result whole."""
    h = harness
    h.add(user("an old request"), reply("handled"))
    h.add(user("review the logs, then the big one"))
    for n in range(6):
        h.add(*read(f"logs/{n}.log", log_lines(f"f{n}", 40)))
    target = h.compactor.limits().target_tokens
    big = log_lines("big", 10)
    while h.meter.estimate(Conversation([Message("user", [TextBlock(big)])])) < target:
        big += "\n" + log_lines("big", 10)
    h.add(*read("logs/big.log", big))
    result = h.run(h.compact("mid-turn"))
    last = h.conversation.messages[-1].blocks[0]
    assert isinstance(last, ToolResultBlock) and last.content == big
    assert result.tokens_after > target  # over the target, taken for the result's sake
    assert validate(h.conversation.messages) == []
    assert_accepted_by_the_server(h)


def test_a_second_compaction_carries_the_first_forward(harness: Harness) -> None:
    h = harness
    busy_history(h)
    h.add(user("continue"))
    first = h.run(h.compact())
    h.add(reply("continuing"), user("and one more round"))
    for i in range(THRASH_MIN_NEW_WORK):
        h.add(*shell(f"make target{i}", log_lines(f"m{i}", 30)))
    h.add(reply("round done"), user("what next?"))
    second = h.run(h.compact())
    boundaries = [b for m in h.conversation.messages for b in m.blocks
                  if isinstance(b, SummaryBlock)]
    assert len(boundaries) == 1 and boundaries[0].summary == second.summary
    assert first.summary != second.summary
    for fact in FACTS:
        assert fact in second.summary  # read through the earlier summary in the request
    kept = [b.text for b in h.conversation.messages[0].blocks if isinstance(b, TextBlock)
            and b.text.startswith(USER_TEXT_LABEL)]
    assert any("turn 0: look through the service logs" in t for t in kept)
    assert any("and one more round" in t for t in kept)
    assert_accepted_by_the_server(h)


# ---- when to compact -----------------------------------------------------------------------


def test_never_automatically_on_the_turn_right_after_a_manual_compact(harness: Harness) -> None:
    h = harness
    busy_history(h)
    h.run(h.compact("manual"))
    h.compactor.note_turn_start()
    h.add(user("next turn"))
    fill_to_threshold(h)
    assert not h.compactor.should_auto_compact(h.conversation)
    assert h.compactor.needs_mid_turn_compaction(h.conversation)  # the safety net still works
    h.add(reply("done"))
    h.compactor.note_turn_start()
    h.add(user("the turn after"))
    assert h.compactor.should_auto_compact(h.conversation)


def test_auto_compaction_is_off_when_disabled(simulator: Simulator, isolated_home: Path,
                                             tmp_path: Path) -> None:
    h = Harness(simulator, "anthropic", isolated_home, tmp_path, auto_compact=False)
    busy_history(h)
    h.add(user("continue"))
    fill_to_threshold(h)
    assert not h.compactor.should_auto_compact(h.conversation)
    assert not h.compactor.needs_mid_turn_compaction(h.conversation)
    h.close()


def _refill_with_little_work(h: Harness) -> None:
    """Two big tool calls fill the room again: fewer than the few new steps that count as work."""
    n = 0
    while h.tokens <= h.settings.autocompact_tokens:
        h.add(*shell(f"cat huge-{n}.log", log_lines(f"huge{n}", 800)))
        n += 1
    assert n < THRASH_MIN_NEW_WORK


def test_back_to_back_compactions_stop_with_a_warning(harness: Harness) -> None:
    h = harness
    busy_history(h)
    h.add(user("continue"))
    fill_to_threshold(h)
    h.run(h.compact())
    _refill_with_little_work(h)
    assert h.compactor.should_auto_compact(h.conversation)  # one quick repeat is allowed
    h.run(h.compact())
    _refill_with_little_work(h)
    assert not h.compactor.should_auto_compact(h.conversation)
    assert h.compactor.thrash_warning and "/compact" in h.compactor.thrash_warning
    assert not h.compactor.needs_mid_turn_compaction(h.conversation)
    h.run(h.compact("manual"))  # the user takes over; the stop is lifted
    assert h.compactor.thrash_warning is None


def test_rereading_the_same_files_is_not_progress(harness: Harness) -> None:
    h = harness
    busy_history(h)
    h.add(user("continue"))
    fill_to_threshold(h)
    h.run(h.compact())
    for _ in range(2):
        h.add(reply("again"), user("keep going"))
        for i in range(THRASH_MIN_NEW_WORK + 2):
            h.add(*read(f"logs/0-{i % 4}.log", log_lines(f"again{i}", 40)))  # already known
        while h.tokens <= h.settings.autocompact_tokens:
            h.add(*read("logs/1-1.log", log_lines("filler", 40)))
        if h.compactor.should_auto_compact(h.conversation):
            h.run(h.compact())
    assert h.compactor.thrash_warning is not None


def test_new_work_between_compactions_is_not_thrash(harness: Harness) -> None:
    h = harness
    busy_history(h)
    h.add(user("continue"))
    fill_to_threshold(h)
    for round_ in range(3):
        assert h.compactor.should_auto_compact(h.conversation)
        h.run(h.compact())
        h.add(reply("next"), user(f"round {round_}"))
        for i in range(THRASH_MIN_NEW_WORK):
            h.add(*exchange(call("run_shell", command=f"make step{round_}-{i}"),
                            output=log_lines(f"s{round_}{i}", 40)))
        fill_to_threshold(h)
    assert h.compactor.thrash_warning is None


def test_nothing_to_compact_fails_without_a_request(harness: Harness) -> None:
    h = harness
    h.add(user("hello"))
    with pytest.raises(CompactionError, match="nothing to compact"):
        h.run(h.compact("manual"))
    assert h.sim.requests == []


# ---- what the client re-attaches -------------------------------------------------------------


class _Plan:
    """A source whose state changes between compactions, as a todo list does."""

    def __init__(self) -> None:
        self.items = ["1. [in progress] find the config loader"]

    def reattachments(self, history: Any) -> list[Reattachment]:
        return [Reattachment("plan", "the current plan", "\n".join(self.items))]


def test_reattached_blocks_survive_every_compaction_verbatim_and_are_not_nested(
    harness: Harness,
) -> None:
    h = harness
    plan = _Plan()
    h.compactor.add_reattach_source(plan)
    busy_history(h)
    h.add(user("continue"))
    for round_ in range(3):
        result = h.run(h.compact())
        boundary = h.conversation.messages[0]
        blocks = [b.text for b in boundary.blocks if is_reattachment(b)]
        assert blocks == [Reattachment("plan", "the current plan", "\n".join(plan.items)).text]
        assert [r.source for r in result.reattached] == ["plan"]
        assert_accepted_by_the_server(h)
        plan.items.append(f"{round_ + 2}. [pending] step {round_}")
        h.add(user(f"round {round_}"))
        for i in range(THRASH_MIN_NEW_WORK):
            h.add(*shell(f"make r{round_}-{i}", log_lines(f"r{round_}{i}", 30)))
        h.add(reply("done"), user("next"))
    boundary_texts = [b.text for b in h.conversation.messages[0].blocks
                      if isinstance(b, TextBlock)]
    assert sum("the current plan" in t for t in boundary_texts) == 1  # never nested
