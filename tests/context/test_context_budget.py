"""Tier 1: long results shrink to head + tail at 50% and 70%, the full text kept on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_claude.context.budget import BudgetTier
from mini_claude.context.meter import shape_tokens
from mini_claude.conversation import ResultState, validate
from mini_claude.settings import Settings
from tests.support.context_builders import (
    Session,
    blocked_settings,
    numbered_lines,
    saved_files,
    store_for,
    tier_pass,
)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Any cut is worth a cache break here, whatever the threshold: these tests are about how
    one result is cut."""
    return settings.with_overrides(budget_min_free_pct=0.001, relief_max_tokens=10**9)


def _session_with(*sizes: int) -> tuple[Session, list[str]]:
    session = Session()
    texts = [numbered_lines(size // 26 + 1, prefix=f"r{i}")[:size] for i, size in enumerate(sizes)]
    for i, text in enumerate(texts):
        session.shell(f"cmd {i}", text)
    return session, texts


def _tier(settings: Settings, session: Session) -> BudgetTier:
    """A budget tier that has seen the session's results go out whole once."""
    tier = BudgetTier(settings, store_for(settings))
    assert tier.run(session.conversation, tier_pass(settings, 0.0)) is None
    return tier


def test_a_result_goes_out_whole_once_before_it_can_be_cut(settings: Settings) -> None:
    session, texts = _session_with(40_000)
    tier = BudgetTier(settings, store_for(settings))
    assert tier.run(session.conversation, tier_pass(settings, 0.9)) is None
    assert session.result(session.conversation.results[0]).content == texts[0]
    assert tier.run(session.conversation, tier_pass(settings, 0.9)) is not None


def test_on_a_small_window_the_limits_shrink_with_it(settings: Settings) -> None:
    small = settings.with_overrides(context_window=24_000)  # effective window 18,000 tokens
    tier = BudgetTier(small, store_for(small))
    assert tier.limit_for(0.5) == int(18_000 * small.budget_low_window_share * 4)
    assert tier.limit_for(0.7) == int(18_000 * small.budget_high_window_share * 4)
    assert BudgetTier(settings, store_for(settings)).limit_for(0.7) == settings.budget_high_chars


def test_on_a_small_window_a_cut_result_is_not_cut_again_at_seventy_percent(
    settings: Settings,
) -> None:
    """Both steps keep the same share of a small window: the text the first cut kept is what
    the next steps work on, and a second cut would send them to read it back."""
    small = settings.with_overrides(context_window=24_000)
    session, _ = _session_with(40_000)
    tier = _tier(small, session)
    assert tier.run(session.conversation, tier_pass(small, 0.55)) is not None
    kept = session.result(session.conversation.results[0]).content
    assert len(kept) <= int(18_000 * small.budget_low_window_share * 4)
    assert tier.run(session.conversation, tier_pass(small, 0.80)) is None
    assert session.result(session.conversation.results[0]).content == kept


def test_below_half_full_nothing_is_cut(settings: Settings) -> None:
    session, texts = _session_with(40_000)
    tier = _tier(settings, session)
    assert tier.run(session.conversation, tier_pass(settings, 0.49)) is None
    assert session.result(session.conversation.results[0]).content == texts[0]


def test_from_half_full_results_over_30k_are_cut(settings: Settings) -> None:
    session, texts = _session_with(40_000, 20_000)
    big, medium = session.conversation.results
    tier = _tier(settings, session)
    report = tier.run(session.conversation, tier_pass(settings, 0.50))
    assert report is not None and report.tier == "budget" and report.results_touched == 1
    cut = session.result(big)
    assert len(cut.content) <= 30_000 and cut.state == ResultState.BUDGETED
    assert session.result(medium).content == texts[1]
    assert report.chars_freed == len(texts[0]) - len(cut.content)
    # weighed by the shape of the text that went, not by characters at an average ratio
    assert report.tokens_freed == round(shape_tokens(texts[0]) - shape_tokens(cut.content))


def test_from_seventy_percent_the_limit_drops_to_20k(settings: Settings) -> None:
    session, _ = _session_with(25_000)
    tier = _tier(settings, session)
    assert tier.run(session.conversation, tier_pass(settings, 0.69)) is None
    report = tier.run(session.conversation, tier_pass(settings, 0.70))
    assert report is not None
    assert len(session.result(session.conversation.results[0]).content) <= 20_000


def test_the_marker_names_a_file_that_holds_the_original(settings: Settings) -> None:
    session, texts = _session_with(40_000)
    _tier(settings, session).run(session.conversation, tier_pass(settings, 0.6))
    cut = session.result(session.conversation.results[0])
    assert cut.saved_path is not None
    assert f"full text at {cut.saved_path}" in cut.content
    assert "[... budget: " in cut.content
    assert Path(cut.saved_path).read_text() == texts[0]
    assert texts[0].startswith(cut.content[:10_000]) and texts[0].endswith(cut.content[-10_000:])


def test_a_result_already_on_disk_is_not_written_again(settings: Settings) -> None:
    session = Session()
    ref = session.shell("make", "x" * 40_000, saved_path="/kept/elsewhere.txt")
    _tier(settings, session).run(session.conversation, tier_pass(settings, 0.6))
    assert "full text at /kept/elsewhere.txt" in session.result(ref).content
    assert saved_files(settings) == []


def test_rising_pressure_cuts_again_and_still_points_at_the_original(settings: Settings) -> None:
    session, texts = _session_with(40_000)
    ref = session.conversation.results[0]
    tier = _tier(settings, session)
    tier.run(session.conversation, tier_pass(settings, 0.55))
    first_path = session.result(ref).saved_path
    report = tier.run(session.conversation, tier_pass(settings, 0.75))
    again = session.result(ref)
    assert report is not None and len(again.content) <= 20_000
    assert again.saved_path == first_path and len(saved_files(settings)) == 1
    assert texts[0].startswith(again.content[:5_000]) and texts[0].endswith(again.content[-5_000:])


def test_a_second_pass_changes_nothing(settings: Settings) -> None:
    session, _ = _session_with(40_000, 35_000)
    tier = _tier(settings, session)
    assert tier.run(session.conversation, tier_pass(settings, 0.8)) is not None
    snapshot = [session.result(r) for r in session.conversation.results]
    version = session.conversation.version
    assert tier.run(session.conversation, tier_pass(settings, 0.8)) is None
    assert [session.result(r) for r in session.conversation.results] == snapshot
    assert session.conversation.version == version


def test_when_the_disk_refuses_nothing_is_cut(settings: Settings, tmp_path: Path) -> None:
    blocked = blocked_settings(settings, tmp_path)
    session, texts = _session_with(40_000)
    tier = BudgetTier(blocked, store_for(blocked))
    tier.run(session.conversation, tier_pass(settings, 0.0))
    assert tier.run(session.conversation, tier_pass(settings, 0.9)) is None
    assert session.result(session.conversation.results[0]).content == texts[0]


def test_tool_uses_stay_and_the_history_stays_valid(settings: Settings) -> None:
    session, _ = _session_with(40_000, 50_000, 10)
    uses_before = [session.use(r) for r in session.conversation.results]
    _tier(settings, session).run(session.conversation, tier_pass(settings, 0.9))
    assert [session.use(r) for r in session.conversation.results] == uses_before
    assert validate(session.conversation.messages) == []


def test_results_appended_later_are_picked_up(settings: Settings) -> None:
    session, _ = _session_with(100)
    tier = _tier(settings, session)
    assert tier.run(session.conversation, tier_pass(settings, 0.6)) is None
    ref = session.shell("cat big", "y" * 45_000)
    assert tier.run(session.conversation, tier_pass(settings, 0.6)) is None  # first sight
    assert tier.run(session.conversation, tier_pass(settings, 0.6)) is not None
    assert len(session.result(ref).content) <= 30_000


def test_a_rebuilt_history_is_indexed_afresh(settings: Settings) -> None:
    session, _ = _session_with(100, 100, 100)
    tier = BudgetTier(settings, store_for(settings))
    tier.run(session.conversation, tier_pass(settings, 0.6))
    fresh = Session()
    fresh.shell("cat big", "z" * 45_000)
    session.conversation.replace_all(fresh.conversation.messages)
    assert tier.run(session.conversation, tier_pass(settings, 0.6)) is None  # first sight
    report = tier.run(session.conversation, tier_pass(settings, 0.6))
    assert report is not None and report.results_touched == 1


def test_cuts_wait_until_together_they_free_enough_then_go_in_one_batch(
    settings: Settings,
) -> None:
    """Each cut rewrites the prompt cache from that result on: one small cut per call would
    break it every call, so cuts wait for a batch worth ``budget_min_free_pct``."""
    batching = settings.with_overrides(budget_min_free_pct=0.04)  # 12,800 chars at 80K
    session, texts = _session_with(40_000)  # 36,936 chars: 6,936 over the 30,000 limit
    tier = _tier(batching, session)
    assert tier.run(session.conversation, tier_pass(batching, 0.55)) is None
    assert session.result(session.conversation.results[0]).content == texts[0]
    session.shell("cmd 1", numbered_lines(40_000 // 26 + 1, prefix="r1")[:40_000])
    assert tier.run(session.conversation, tier_pass(batching, 0.55)) is None  # not read yet
    report = tier.run(session.conversation, tier_pass(batching, 0.55))
    assert report is not None and report.results_touched == 2
    states = [session.result(r).state for r in session.conversation.results]
    assert states == [ResultState.BUDGETED, ResultState.BUDGETED]


def test_a_request_that_would_not_fit_cuts_at_once(settings: Settings) -> None:
    batching = settings.with_overrides(budget_min_free_pct=0.5)
    session, _ = _session_with(40_000)
    tier = _tier(batching, session)
    assert tier.run(session.conversation, tier_pass(batching, 0.9)) is None
    assert tier.run(session.conversation, tier_pass(batching, 1.0)) is not None
    assert session.result(session.conversation.results[0]).state == ResultState.BUDGETED


def test_above_the_clearing_limit_results_are_cut_only_when_the_request_would_not_fit(
    settings: Settings,
) -> None:
    """A summary threshold a user raised above the clearing limit (60K on a 100K window): a cut
    there would rewrite the cache for a compaction put off, so results stay whole until they do
    not fit."""
    large = settings.with_overrides(relief_max_tokens=32_000, autocompact_max_tokens=60_000)
    assert large.autocompact_tokens > large.relief_max_tokens
    session, texts = _session_with(40_000, 40_000)
    tier = _tier(large, session)
    assert tier.run(session.conversation, tier_pass(large, 0.9)) is None
    assert [session.result(r).content for r in session.conversation.results] == texts
    report = tier.run(session.conversation, tier_pass(large, 1.0))
    assert report is not None and report.results_touched == 2
    small = large.with_overrides(context_window=32_000)
    assert small.autocompact_tokens <= small.relief_max_tokens and small.clearing_pays
