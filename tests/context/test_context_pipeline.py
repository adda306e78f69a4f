"""The pipeline: tier order, utilization recomputed between tiers, reports, incremental cost."""

from __future__ import annotations

import pytest

from mini_claude.context.meter import MESSAGE_OVERHEAD_TOKENS, TokenMeter
from mini_claude.context.pipeline import ContextPipeline
from mini_claude.conversation import (
    Conversation,
    Message,
    ResultState,
    ToolResultBlock,
    ToolUseBlock,
    validate,
)
from mini_claude.settings import Settings
from tests.support.context_builders import (
    CountingList,
    Session,
    count_reads,
    numbered_lines,
    store_for,
)

NOW = 50_000.0
BUSY = NOW - 1.0  # the last call was a second ago: the cache is warm
IDLE = NOW - 600.0


def _anchor_at(meter: TokenMeter, conversation: Conversation, utilization: float) -> None:
    """Report a usage that puts the conversation at ``utilization`` with 4 chars per token."""
    tokens = round(utilization * meter.settings.effective_window)
    content_tokens = tokens - MESSAGE_OVERHEAD_TOKENS * len(conversation)
    meter.fixed_chars = 4 * content_tokens - conversation.total_chars
    assert meter.fixed_chars > 0
    meter.observe(tokens, conversation)
    assert meter.chars_per_token == pytest.approx(4.0)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """These tests size their results for 5% minimums (16,000 chars of the 80K window), and
    cut at any threshold."""
    return settings.with_overrides(snip_min_free_pct=0.05, budget_min_free_pct=0.05,
                                   relief_max_tokens=10**9)


def _pipeline(settings: Settings) -> ContextPipeline:
    return ContextPipeline(settings, store_for(settings), TokenMeter(settings, 0))


def _sent_once(pipeline: ContextPipeline, session: Session) -> None:
    """A quiet pass, as before the request that showed the model every result whole."""
    assert pipeline.meter.utilization(session.conversation) < 0.5
    assert pipeline.run(session.conversation, now=NOW, last_call_at=BUSY) == []


def _text(tag: str, size: int) -> str:
    return numbered_lines(size // 26 + 1, prefix=tag)[:size]


def _stale_reads(session: Session, size: int = 20_000) -> None:
    session.read("src/app.py", _text("v1", size))
    session.read("src/app.py", _text("v2", size))


def _pad(session: Session) -> None:
    for i in range(3):
        session.call("write_file", f"wrote {i}", path=f"o{i}.txt")


def test_a_quiet_pass_reports_nothing(settings: Settings) -> None:
    session = Session()
    _stale_reads(session)
    _pad(session)
    pipeline = _pipeline(settings)
    _anchor_at(pipeline.meter, session.conversation, 0.30)
    assert pipeline.run(session.conversation, now=NOW, last_call_at=BUSY) == []


def test_snip_sees_the_utilization_that_budget_left(settings: Settings) -> None:
    settings = settings.with_overrides(budget_min_free_pct=0.01)  # one cut is a batch
    session = Session()
    big = session.shell("cat data.csv", _text("csv", 40_000))
    _stale_reads(session)
    _pad(session)
    pipeline = _pipeline(settings)
    _sent_once(pipeline, session)
    _anchor_at(pipeline.meter, session.conversation, 0.62)
    reports = pipeline.run(session.conversation, now=NOW, last_call_at=BUSY)
    assert [r.tier for r in reports] == ["budget"]  # 2.5k tokens freed: now below 60%
    assert session.result(big).state == ResultState.BUDGETED
    assert pipeline.meter.utilization(session.conversation) < 0.60
    assert all(session.result(r).state != ResultState.CLEARED for r in session.conversation.results)


def test_without_a_long_result_snip_fires_at_the_same_pressure(settings: Settings) -> None:
    session = Session()
    session.shell("cat data.csv", _text("csv", 9_000))
    _stale_reads(session)
    _pad(session)
    pipeline = _pipeline(settings)
    _sent_once(pipeline, session)
    _anchor_at(pipeline.meter, session.conversation, 0.62)
    reports = pipeline.run(session.conversation, now=NOW, last_call_at=BUSY)
    assert [r.tier for r in reports] == ["snip"]


def test_all_three_tiers_fire_in_order_and_report_what_they_freed(settings: Settings) -> None:
    session = Session()
    session.shell("cat data.csv", _text("csv", 40_000))
    _stale_reads(session)
    session.read("src/app.py", _text("v3", 20_000))  # budget trims each read to 15,000 first
    session.grep("TODO", _text("grep", 5_000))
    _pad(session)
    pipeline = _pipeline(settings)
    _sent_once(pipeline, session)
    _anchor_at(pipeline.meter, session.conversation, 0.80)
    before = session.conversation.total_chars
    reports = pipeline.run(session.conversation, now=NOW, last_call_at=IDLE)
    assert [r.tier for r in reports] == ["budget", "snip", "microcompact"]
    assert sum(r.chars_freed for r in reports) == before - session.conversation.total_chars
    anchored = round(0.80 * settings.effective_window)
    after = pipeline.meter.estimate(session.conversation)
    assert after == pytest.approx(anchored - sum(r.tokens_freed for r in reports), abs=2)
    assert validate(session.conversation.messages) == []
    newest = session.conversation.results[-3:]
    assert all(session.result(r).state == ResultState.FULL for r in newest)


def _long_history(calls: int) -> Session:
    """A history of ``2 * calls + 1`` messages; every result already has a copy on disk."""
    session = Session()
    for i in range(calls):
        kind = i % 3
        body = _text(f"r{i}", 1_200)
        if kind == 0:
            session.read(f"src/mod_{i}.py", body, saved_path=f"/saved/{i}.txt")
        elif kind == 1:
            session.grep(f"pattern_{i}", body, saved_path=f"/saved/{i}.txt")
        else:
            session.shell(f"make target_{i}", body, saved_path=f"/saved/{i}.txt")
    return session


def _reads_for_one_more_call(settings: Settings, calls: int) -> int:
    session = _long_history(calls)
    pipeline = _pipeline(settings)
    _anchor_at(pipeline.meter, session.conversation, 0.65)
    pipeline.run(session.conversation, now=NOW, last_call_at=BUSY)  # indexes, and may clear
    _anchor_at(pipeline.meter, session.conversation, 0.65)
    session.grep("one more", _text("new", 1_200))  # two messages appended
    count_reads(session.conversation)
    pipeline.run(session.conversation, now=NOW, last_call_at=BUSY)
    return CountingList.reads


def test_a_pass_costs_what_was_appended_not_the_history(settings: Settings) -> None:
    roomy = settings.with_overrides(context_window=2_000_000)
    small = _reads_for_one_more_call(roomy, 50)  # 101 messages
    large = _reads_for_one_more_call(roomy, 2_500)  # 5,001 messages
    assert large == small
    assert large <= 20


def test_relief_inside_a_turn_clears_seen_results_when_the_newest_three_are_too_much(
    settings: Settings,
) -> None:
    session = Session()
    for i in range(2):
        session.read(f"src/old{i}.py", _text(f"o{i}", 5_000))
    for i in range(3):
        session.read(f"src/m{i}.py", _text(f"m{i}", 90_000))  # 22.5k tokens each
    pipeline = _pipeline(settings)
    _anchor_at(pipeline.meter, session.conversation, 0.97)
    report = pipeline.relieve_pressure(session.conversation)
    assert report is not None and report.tier == "microcompact"
    states = [session.result(r).state for r in session.conversation.results]
    # keeping the newest three would still be above the summary threshold: only the
    # newest (not yet read by the model) keeps its text
    assert states == [ResultState.CLEARED] * 4 + [ResultState.FULL]
    assert pipeline.meter.estimate(session.conversation) <= settings.autocompact_tokens


def test_relief_keeps_the_newest_result_whole(settings: Settings) -> None:
    session = Session()
    for i in range(6):
        session.read(f"src/m{i}.py", _text(f"m{i}", 20_000))
    pipeline = _pipeline(settings)
    _anchor_at(pipeline.meter, session.conversation, 0.90)
    assert pipeline.relieve_pressure(session.conversation) is not None
    states = [session.result(r).state for r in session.conversation.results]
    # Every result kept whole is written to the cache again at each clearing: one stays.
    assert states == [ResultState.CLEARED] * 5 + [ResultState.FULL]


def test_relief_never_clears_a_result_the_model_has_not_read(settings: Settings) -> None:
    """The newest message's results (parallel calls) all keep their text, whatever
    relief_keep_results says: the model has not seen them yet."""
    session = Session()
    for i in range(4):
        session.read(f"src/m{i}.py", _text(f"m{i}", 20_000))
    uses = [ToolUseBlock(f"toolu_p{i}", "read_file", {"path": f"src/p{i}.py"}) for i in range(3)]
    session.conversation.append(Message("assistant", [*uses]))
    session.conversation.append(Message("user", [
        ToolResultBlock(u.id, _text(f"p{i}", 20_000), tool_name="read_file",
                        target=f"src/p{i}.py") for i, u in enumerate(uses)
    ]))
    pipeline = _pipeline(settings)
    _anchor_at(pipeline.meter, session.conversation, 0.90)
    assert pipeline.relieve_pressure(session.conversation) is not None
    states = [session.result(r).state for r in session.conversation.results]
    assert states == [ResultState.CLEARED] * 4 + [ResultState.FULL] * 3
