"""Tier 2: stale results become placeholders, in one batch, only when it is worth a cache break."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from mini_claude.context.snip import SnipTier
from mini_claude.conversation import ResultRef, ResultState, validate
from mini_claude.protocol import TierReport
from mini_claude.settings import Settings
from tests.support.context_builders import (
    Session,
    blocked_settings,
    numbered_lines,
    saved_files,
    store_for,
    tier_pass,
)

BIG = 20_000  # one stale result of this size is worth a cache break (minimum 16,000 chars)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """These tests size their results for a 5% minimum (16,000 chars of the 80K window), and
    snip at any threshold."""
    return settings.with_overrides(snip_min_free_pct=0.05, relief_max_tokens=10**9)


def _text(tag: str, size: int = BIG) -> str:
    return numbered_lines(size // 26 + 1, prefix=tag)[:size]


def _pad(session: Session, count: int = 3) -> None:
    """Newer results that protect nothing themselves and are never stale."""
    for i in range(count):
        session.call("write_file", f"wrote file {i}", path=f"out{i}.txt")


def _snip(tier: SnipTier, session: Session, utilization: float = 0.65) -> TierReport | None:
    return tier.run(session.conversation, tier_pass(tier.settings, utilization))


def _state(session: Session, ref: ResultRef) -> ResultState:
    return session.result(ref).state


def test_below_sixty_percent_stale_results_stay(settings: Settings) -> None:
    session = Session()
    old = session.read("src/app.py", _text("v1"))
    session.read("src/app.py", _text("v2"))
    _pad(session)
    tier = SnipTier(settings, store_for(settings))
    assert _snip(tier, session, 0.59) is None
    assert _state(session, old) == ResultState.FULL
    report = _snip(tier, session, 0.60)
    assert report is not None
    assert _state(session, old) == ResultState.CLEARED


def test_an_older_read_of_the_same_file_is_snipped_and_recoverable(settings: Settings) -> None:
    session = Session()
    original = _text("v1")
    old = session.read("./src/app.py", original)
    new = session.read("src/app.py", _text("v2"))
    _pad(session)
    _snip(SnipTier(settings, store_for(settings)), session)
    cleared = session.result(old)
    assert cleared.state == ResultState.CLEARED
    assert cleared.content.startswith("[snipped: read_file ./src/app.py, ")
    assert "read again later" in cleared.content
    assert cleared.saved_path is not None and cleared.saved_path in cleared.content
    assert Path(cleared.saved_path).read_text() == original
    assert _state(session, new) == ResultState.FULL


def test_a_different_view_of_the_file_is_not_a_reread(settings: Settings) -> None:
    session = Session()
    first_page = session.read("src/app.py", _text("p1"))
    session.read("src/app.py", _text("p2"), offset=500, limit=500)
    other = session.read("src/other.py", _text("o1"))
    session.read("src/app.py", _text("p3"), offset=500)
    _pad(session)
    tier = SnipTier(settings, store_for(settings))
    report = _snip(tier, session)
    assert report is not None and report.results_touched == 1  # only the first offset=500 read
    assert _state(session, first_page) == ResultState.FULL
    assert _state(session, other) == ResultState.FULL


def test_paths_resolve_against_the_project_root(settings: Settings, tmp_path: Path) -> None:
    session = Session()
    old = session.read(str(tmp_path / "src" / "app.py"), _text("abs"))
    session.read("src/../src/app.py", _text("rel"))
    _pad(session)
    _snip(SnipTier(settings, store_for(settings), root=tmp_path), session)
    assert _state(session, old) == ResultState.CLEARED


def test_searches_beyond_the_three_newest_of_their_tool_are_snipped(settings: Settings) -> None:
    session = Session()
    greps = [session.grep(f"pattern{i}", _text(f"g{i}", 9_000)) for i in range(5)]
    listings = [session.call("list_files", _text(f"l{i}", 9_000), path=f"d{i}") for i in range(3)]
    _pad(session)
    report = _snip(SnipTier(settings, store_for(settings)), session)
    assert report is not None and report.results_touched == 2
    assert [_state(session, r) for r in greps] == [ResultState.CLEARED] * 2 + [ResultState.FULL] * 3
    assert all(_state(session, r) == ResultState.FULL for r in listings)


def test_an_identical_command_run_again_supersedes_the_older_output(settings: Settings) -> None:
    session = Session()
    old = session.shell("pytest -q", _text("run1"))
    different = session.shell("pytest -q tests/unit", _text("unit"))
    session.shell("pytest -q", _text("run2"))
    _pad(session)
    report = _snip(SnipTier(settings, store_for(settings)), session)
    assert report is not None and "re-run" in report.detail
    assert _state(session, old) == ResultState.CLEARED
    assert "the same command ran again later" in session.result(old).content
    assert _state(session, different) == ResultState.FULL


def test_the_three_newest_results_are_never_touched(settings: Settings) -> None:
    session = Session()
    session.read("a.py", _text("a1"))
    protected = session.read("a.py", _text("a2"))
    session.read("a.py", _text("a3"))
    newest = session.read("a.py", _text("a4"))
    report = _snip(SnipTier(settings, store_for(settings)), session)
    assert report is not None and report.results_touched == 1
    assert _state(session, protected) == ResultState.FULL
    assert _state(session, newest) == ResultState.FULL


def test_errors_outlive_scratch_output_unless_superseded(settings: Settings) -> None:
    session = Session()
    failed_grep = session.grep("needle", _text("err", 9_000), is_error=True)
    for i in range(4):
        session.grep(f"p{i}", _text(f"g{i}", 9_000))
    failed_read = session.read("gone.py", _text("trace"), is_error=True)
    session.read("gone.py", _text("now-it-exists"))
    _pad(session)
    _snip(SnipTier(settings, store_for(settings)), session)
    assert _state(session, failed_grep) == ResultState.FULL
    assert _state(session, failed_read) == ResultState.CLEARED
    assert "(an error)" in session.result(failed_read).content


def test_a_failed_reread_does_not_hide_the_last_good_copy(settings: Settings) -> None:
    session = Session()
    good = session.read("a.py", _text("good"))
    session.read("a.py", "Error: permission denied\n" * 800, is_error=True)
    _pad(session)
    assert _snip(SnipTier(settings, store_for(settings)), session) is None
    assert _state(session, good) == ResultState.FULL


def test_below_the_minimum_nothing_happens_above_it_everything_goes_at_once(
    settings: Settings,
) -> None:
    session = Session()
    tier = SnipTier(settings, store_for(settings))
    small_stale = [session.shell("ls -la", _text(f"ls{i}", 5_000)) for i in range(3)]
    _pad(session)
    version = session.conversation.version
    assert _snip(tier, session) is None  # two stale results, about 9,000 chars: not worth it
    assert session.conversation.version == version
    assert saved_files(settings) == []
    more = [session.shell("git status", _text(f"gs{i}", 5_000)) for i in range(3)]
    _pad(session)
    report = _snip(tier, session)
    assert report is not None and report.results_touched == 4
    assert [_state(session, r) for r in small_stale[:2] + more[:2]] == [ResultState.CLEARED] * 4
    assert _state(session, small_stale[2]) == ResultState.FULL
    assert _state(session, more[2]) == ResultState.FULL


def test_a_second_pass_changes_nothing_and_cleared_stays_cleared(settings: Settings) -> None:
    session = Session()
    old = session.read("a.py", _text("v1"))
    session.read("a.py", _text("v2"))
    _pad(session)
    tier = SnipTier(settings, store_for(settings))
    assert _snip(tier, session) is not None
    placeholder = session.result(old)
    version = session.conversation.version
    assert _snip(tier, session, 0.95) is None
    assert session.conversation.version == version
    session.read("a.py", _text("v3"))
    _pad(session)
    _snip(tier, session, 0.95)
    assert session.result(old) == placeholder


def test_tool_uses_stay_and_the_history_stays_valid(settings: Settings) -> None:
    session = Session()
    for i in range(6):
        session.grep("same", _text(f"g{i}", 9_000))
    uses = [session.use(r) for r in session.conversation.results]
    _snip(SnipTier(settings, store_for(settings)), session)
    assert [session.use(r) for r in session.conversation.results] == uses
    assert validate(session.conversation.messages) == []


def test_when_the_disk_refuses_nothing_is_cleared_until_it_recovers(
    settings: Settings, tmp_path: Path
) -> None:
    blocked = blocked_settings(settings, tmp_path)
    session = Session()
    original = _text("v1")
    old = session.read("a.py", original)
    session.read("a.py", _text("v2"))
    _pad(session)
    tier = SnipTier(blocked, store_for(blocked))
    assert _snip(tier, session) is None
    assert session.result(old).content == original

    (tmp_path / "not-a-folder").unlink()  # the disk is writable again
    report = _snip(tier, session)
    assert report is not None
    saved = session.result(old).saved_path
    assert saved is not None and Path(saved).read_text() == original


def test_a_result_trimmed_after_it_went_stale_is_weighed_at_its_new_size(
    settings: Settings,
) -> None:
    session = Session()
    old = session.read("a.py", _text("v1"))
    session.read("a.py", _text("v2"))
    _pad(session)
    tier = SnipTier(settings, store_for(settings))
    assert _snip(tier, session, 0.5) is None  # indexed as stale, below the threshold
    block = session.result(old)
    session.conversation.replace_result(
        old, replace(block, content=block.content[:2_000], state=ResultState.BUDGETED)
    )
    assert _snip(tier, session) is None  # 2,000 chars are not worth a cache break
    assert _state(session, old) == ResultState.BUDGETED


def test_a_rebuilt_history_is_indexed_afresh(settings: Settings) -> None:
    session = Session()
    session.read("a.py", _text("v1"))
    _pad(session)
    tier = SnipTier(settings, store_for(settings))
    _snip(tier, session, 0.1)
    fresh = Session()
    old = fresh.read("a.py", _text("w1"))
    fresh.read("a.py", _text("w2"))
    _pad(fresh)
    session.conversation.replace_all(fresh.conversation.messages)
    assert _snip(tier, session) is not None
    assert session.conversation.result_at(old).state == ResultState.CLEARED


def test_above_the_clearing_limit_stale_results_stay_until_the_request_would_not_fit(
    settings: Settings,
) -> None:
    """Snipping only puts a compaction off; above the clearing limit the cache it breaks costs
    more, so a stale read stays whole unless the request would not fit."""
    large = settings.with_overrides(relief_max_tokens=32_000, autocompact_max_tokens=60_000)
    session = Session()
    old = session.read("a.py", _text("v1"))
    session.read("a.py", _text("v2"))
    _pad(session)
    tier = SnipTier(large, store_for(large))
    assert _snip(tier, session, 0.9) is None
    assert _state(session, old) == ResultState.FULL
    assert _snip(tier, session, 1.0) is not None
    assert _state(session, old) == ResultState.CLEARED
