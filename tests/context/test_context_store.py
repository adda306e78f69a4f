"""The result store: private files, unique names, failure without raising, retention."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from mini_claude.context.store import (
    DiskResultStore,
    cleanup_old_results,
    ensure_saved,
)
from mini_claude.conversation import ToolResultBlock
from mini_claude.settings import Settings
from tests.support.context_builders import blocked_settings, saved_files

DAY = 86_400.0
NOW = 1_700_000_000.0


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_saved_result_holds_the_exact_text_in_a_private_file(settings: Settings) -> None:
    text = "first line\nsecond — ünïcode ✓\n" * 100
    store = DiskResultStore(settings, "abc123", clock=lambda: NOW)
    saved = store.save("read_file", text)
    assert saved is not None
    path = Path(saved)
    assert path.read_text(encoding="utf-8") == text
    assert path.parent == settings.tool_results_dir / "abc123"
    assert re.fullmatch(r"1700000000000-\d+-read_file\.txt", path.name)
    assert _mode(path) == 0o600
    for folder in (path.parent, settings.tool_results_dir, settings.home):
        assert _mode(folder) == 0o700


def test_names_are_unique_within_one_millisecond(settings: Settings) -> None:
    store = DiskResultStore(settings, "s", clock=lambda: NOW)
    paths = {store.save("grep_search", f"result {i}") for i in range(50)}
    assert None not in paths and len(paths) == 50


def test_two_stores_of_one_session_never_overwrite_each_other(settings: Settings) -> None:
    first = DiskResultStore(settings, "s", clock=lambda: NOW)
    second = DiskResultStore(settings, "s", clock=lambda: NOW)
    a, b = first.save("run_shell", "from the first"), second.save("run_shell", "from the second")
    assert a is not None and b is not None and a != b
    assert Path(a).read_text() == "from the first"
    assert Path(b).read_text() == "from the second"


def test_odd_tool_and_session_names_stay_inside_the_results_folder(settings: Settings) -> None:
    store = DiskResultStore(settings, "../../escape", clock=lambda: NOW)
    saved = store.save("mcp/../weird tool", "x")
    assert saved is not None
    assert Path(saved).resolve().is_relative_to(settings.tool_results_dir.resolve())
    assert "/" not in Path(saved).name


def test_a_refused_write_returns_none_instead_of_raising(
    settings: Settings, tmp_path: Path
) -> None:
    store = DiskResultStore(blocked_settings(settings, tmp_path), "s", clock=lambda: NOW)
    assert store.save("read_file", "text") is None


def test_a_link_planted_at_the_next_name_is_never_written_through(
    settings: Settings, tmp_path: Path
) -> None:
    store = DiskResultStore(settings, "s", clock=lambda: NOW)
    assert store.save("read_file", "warm-up") is not None  # the folder exists now
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    os.symlink(victim, store.folder / f"{int(NOW * 1000)}-2-read_file.txt")
    saved = store.save("read_file", "secret output")
    assert saved is not None and Path(saved).read_text() == "secret output"
    assert victim.read_text() == "untouched"


def test_ensure_saved_reuses_an_existing_copy(settings: Settings) -> None:
    store = DiskResultStore(settings, "s", clock=lambda: NOW)
    block = ToolResultBlock("t1", "content", tool_name="read_file", saved_path="/already/there")
    assert ensure_saved(block, store) == "/already/there"
    assert saved_files(settings) == []
    fresh = ToolResultBlock("t2", "new content", tool_name="read_file")
    saved = ensure_saved(fresh, store)
    assert saved is not None and Path(saved).read_text() == "new content"


def _age(path: Path, days: float) -> None:
    stamp = NOW - days * DAY
    os.utime(path, (stamp, stamp))


def test_cleanup_removes_only_expired_results_and_emptied_folders(settings: Settings) -> None:
    old_session = DiskResultStore(settings, "old", clock=lambda: NOW)
    mixed_session = DiskResultStore(settings, "mixed", clock=lambda: NOW)
    old_paths = [Path(p) for p in (old_session.save("a", "1"), old_session.save("b", "2")) if p]
    expired = Path(mixed_session.save("c", "3") or "")
    kept = Path(mixed_session.save("d", "4") or "")
    for path in [*old_paths, expired]:
        _age(path, 31)
    _age(kept, 29)

    assert cleanup_old_results(settings, NOW) == 3
    assert not (settings.tool_results_dir / "old").exists()
    assert not expired.exists()
    assert kept.read_text() == "4"


def test_cleanup_with_no_retention_or_no_folder_does_nothing(settings: Settings) -> None:
    assert cleanup_old_results(settings, NOW) == 0  # nothing saved yet
    store = DiskResultStore(settings, "s", clock=lambda: NOW)
    path = Path(store.save("a", "1") or "")
    _age(path, 400)
    forever = settings.with_overrides(result_retention_days=0)
    assert cleanup_old_results(forever, NOW) == 0
    assert path.exists()
