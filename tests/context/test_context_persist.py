"""Tier 0: large results go to disk with a preview; truncation only when the disk refuses."""

from __future__ import annotations

from pathlib import Path

from mini_claude.context.persist import admit_result
from mini_claude.conversation import ResultState, ToolUseBlock
from mini_claude.protocol import ToolOutput
from mini_claude.settings import Settings
from tests.support.context_builders import (
    blocked_settings,
    numbered_lines,
    saved_files,
    store_for,
)

THRESHOLD = 30 * 1024


def _use(name: str = "run_shell", **tool_input: object) -> ToolUseBlock:
    return ToolUseBlock("toolu_9", name, tool_input or {"command": "make test"})


def test_a_small_result_enters_whole_with_its_metadata(settings: Settings) -> None:
    output = ToolOutput("3 passed\nall good\n", is_error=True)
    block, report = admit_result(output, _use(), store_for(settings), settings)
    assert report is None
    assert block.content == output.content
    assert block.tool_use_id == "toolu_9"
    assert (block.tool_name, block.target) == ("run_shell", "make test")
    assert (block.original_chars, block.original_lines) == (len(output.content), 2)
    assert block.is_error and block.saved_path is None and block.state == ResultState.FULL
    assert saved_files(settings) == []


def test_a_large_result_is_saved_whole_and_previewed(settings: Settings) -> None:
    text = numbered_lines(3_000)  # 78,000 chars
    block, report = admit_result(
        ToolOutput(text), _use("run_shell", command="cat big.log"), store_for(settings), settings
    )
    assert block.saved_path is not None
    assert Path(block.saved_path).read_text() == text
    assert block.saved_path in block.content
    assert "3,000 lines" in block.content and "run_shell" in block.content
    assert "76.2 KB" in block.content
    preview = block.content.split("\n\n", 1)[1].split("\n", 1)[1]
    assert text.startswith(preview)
    assert preview.count("\n") <= 200 and len(preview.encode()) <= 2_048
    assert block.original_chars == len(text) and block.original_lines == 3_000
    assert report is not None and report.tier == "persist"
    assert report.chars_freed == len(text) - len(block.content)
    assert report.results_touched == 1


def test_a_read_is_never_saved_since_the_file_is_its_own_copy(settings: Settings) -> None:
    text = numbered_lines(3_000)
    use = _use("read_file", path="big.log")
    block, _ = admit_result(ToolOutput(text), use, store_for(settings), settings)
    assert block.saved_path is None and saved_files(settings) == []
    unbounded = settings.with_overrides(read_page_window_share=0.0)
    block, report = admit_result(ToolOutput(text), use, store_for(unbounded), unbounded)
    assert block.saved_path is not None and report is not None and report.tier == "persist"


def test_the_threshold_counts_utf8_bytes(settings: Settings) -> None:
    exactly = "a" * THRESHOLD
    block, report = admit_result(ToolOutput(exactly), _use(), store_for(settings), settings)
    assert report is None and block.content == exactly
    one_more = "a" * (THRESHOLD + 1)
    block, report = admit_result(ToolOutput(one_more), _use(), store_for(settings), settings)
    assert report is not None and report.tier == "persist"
    wide = "é" * (THRESHOLD // 2 + 1)  # fewer chars than the threshold, more bytes
    block, report = admit_result(ToolOutput(wide), _use(), store_for(settings), settings)
    assert report is not None and block.saved_path is not None


def test_without_a_disk_an_over_long_result_is_cut_and_says_so(
    settings: Settings, tmp_path: Path
) -> None:
    blocked = blocked_settings(settings, tmp_path)
    text = numbered_lines(4_000)  # 104,000 chars
    block, report = admit_result(ToolOutput(text), _use(), store_for(blocked), blocked)
    assert len(block.content) <= 50_000
    assert text.startswith(block.content[:20_000]) and text.endswith(block.content[-20_000:])
    assert "chars cut" in block.content and "saving the full output to disk failed" in block.content
    assert block.saved_path is None and block.state == ResultState.BUDGETED
    assert block.original_chars == len(text)
    assert report is not None and report.tier == "truncate" and "disk write failed" in report.detail


def test_without_a_disk_a_result_under_the_cut_stays_whole(
    settings: Settings, tmp_path: Path
) -> None:
    blocked = blocked_settings(settings, tmp_path)
    text = "b" * 40_000  # over 30 KB, under 50,000 chars
    block, report = admit_result(ToolOutput(text), _use(), store_for(blocked), blocked)
    assert report is None and block.content == text and block.saved_path is None


def test_a_raised_persist_threshold_leaves_truncation_as_the_guard(settings: Settings) -> None:
    loose = settings.with_overrides(persist_threshold_bytes=10**9)
    text = "c" * 80_000
    block, report = admit_result(ToolOutput(text), _use(), store_for(loose), loose)
    assert report is not None and report.tier == "truncate"
    assert "failed" not in block.content
    assert saved_files(loose) == []
