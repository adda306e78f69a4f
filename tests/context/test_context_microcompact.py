"""Tier 3: after an idle gap (cold cache) all results but the newest three become placeholders."""

from __future__ import annotations

from pathlib import Path

from mini_claude.context.microcompact import MicrocompactTier
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

LAST_CALL = 10_000.0


def _session(count: int = 6, size: int = 3_000) -> tuple[Session, list[ResultRef], list[str]]:
    session = Session()
    texts = [numbered_lines(size // 26 + 1, prefix=f"r{i}")[:size] for i in range(count)]
    refs = [session.read(f"f{i}.py", text) for i, text in enumerate(texts)]
    return session, refs, texts


def _run(tier: MicrocompactTier, session: Session, idle: float) -> TierReport | None:
    return tier.run(
        session.conversation,
        tier_pass(tier.settings, now=LAST_CALL + idle, last_call_at=LAST_CALL),
    )


def test_nothing_happens_until_more_than_the_idle_limit_passed(settings: Settings) -> None:
    session, refs, _ = _session()
    tier = MicrocompactTier(settings, store_for(settings))
    assert _run(tier, session, 300.0) is None
    assert tier.run(session.conversation, tier_pass(settings, now=1e9)) is None
    assert all(session.result(r).state == ResultState.FULL for r in refs)
    report = _run(tier, session, 300.5)
    assert report is not None and report.tier == "microcompact"


def test_everything_but_the_three_newest_is_cleared_and_saved(settings: Settings) -> None:
    session, refs, texts = _session()
    uses = [session.use(r) for r in refs]
    report = _run(MicrocompactTier(settings, store_for(settings)), session, 600)
    assert report is not None and report.results_touched == 3
    for ref, text in zip(refs[:3], texts[:3], strict=True):
        block = session.result(ref)
        assert block.state == ResultState.CLEARED
        assert block.content.startswith("[cleared: read_file ")
        assert block.saved_path is not None and block.saved_path in block.content
        assert Path(block.saved_path).read_text() == text
    for ref, text in zip(refs[3:], texts[3:], strict=True):
        assert session.result(ref).content == text
    assert [session.use(r) for r in refs] == uses
    assert validate(session.conversation.messages) == []
    assert report.chars_freed == sum(len(t) for t in texts[:3]) - sum(
        len(session.result(r).content) for r in refs[:3]
    )


def test_short_results_are_left_alone_and_never_written_to_disk(settings: Settings) -> None:
    session = Session()
    short = [session.call("edit_file", f"edited f{i}.py", path=f"f{i}.py") for i in range(5)]
    assert _run(MicrocompactTier(settings, store_for(settings)), session, 600) is None
    assert all(session.result(r).state == ResultState.FULL for r in short)
    assert saved_files(settings) == []


def test_a_copy_already_on_disk_is_named_instead_of_writing_another(settings: Settings) -> None:
    session = Session()
    preview = "[Output too large for the context ...]\n" + "p" * 2_000
    persisted = session.shell("cat big.log", preview, saved_path="/earlier/copy.txt")
    for i in range(3):
        session.read(f"n{i}.py", "x" * 1_000)
    _run(MicrocompactTier(settings, store_for(settings)), session, 600)
    assert "full text at /earlier/copy.txt" in session.result(persisted).content
    assert saved_files(settings) == []


def test_a_later_gap_only_visits_results_that_arrived_since(settings: Settings) -> None:
    session, refs, _ = _session()
    tier = MicrocompactTier(settings, store_for(settings))
    _run(tier, session, 600)
    more = [session.read(f"g{i}.py", "y" * 3_000) for i in range(2)]
    report = _run(tier, session, 600)
    assert report is not None and report.results_touched == 2  # refs[3] and refs[4]
    assert session.result(refs[5]).state == ResultState.FULL
    assert all(session.result(r).state == ResultState.FULL for r in more)
    version = session.conversation.version
    assert _run(tier, session, 600) is None
    assert session.conversation.version == version


def test_when_the_disk_refuses_nothing_is_cleared_until_it_recovers(
    settings: Settings, tmp_path: Path
) -> None:
    blocked = blocked_settings(settings, tmp_path)
    session, refs, texts = _session()
    tier = MicrocompactTier(blocked, store_for(blocked))
    assert _run(tier, session, 600) is None
    assert [session.result(r).content for r in refs] == texts

    (tmp_path / "not-a-folder").unlink()
    report = _run(tier, session, 600)
    assert report is not None and report.results_touched == 3


def test_a_rebuilt_history_starts_over(settings: Settings) -> None:
    session, _, _ = _session()
    tier = MicrocompactTier(settings, store_for(settings))
    _run(tier, session, 600)
    fresh, fresh_refs, _ = _session(count=5)
    session.conversation.replace_all(fresh.conversation.messages)
    report = _run(tier, session, 600)
    assert report is not None and report.results_touched == 2
    assert session.conversation.result_at(fresh_refs[0]).state == ResultState.CLEARED
