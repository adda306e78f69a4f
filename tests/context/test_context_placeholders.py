"""Placeholders and markers: metadata kept, recovery path named, cuts within their limit."""

from __future__ import annotations

import re
from dataclasses import replace

from mini_claude.context.placeholders import (
    budget_marker,
    cleared_block,
    cleared_placeholder,
    count_lines,
    cut_to_head_and_tail,
    preview_of,
    truncation_marker,
)
from mini_claude.conversation import ResultState, ToolResultBlock
from mini_claude.project.instructions import BASE_PROMPT
from tests.support.context_builders import numbered_lines

PATH = "/home/u/.mini-claude/tool-results/s/1700000000000-1-read_file.txt"


def _block(content: str, **changes: object) -> ToolResultBlock:
    block = ToolResultBlock(
        "toolu_1",
        content,
        tool_name="read_file",
        target="src/app.py",
        original_chars=len(content),
        original_lines=count_lines(content),
    )
    return replace(block, **changes)  # type: ignore[arg-type]


def test_a_cleared_result_keeps_tool_target_size_and_where_to_find_it() -> None:
    block = _block(numbered_lines(245))
    text = cleared_placeholder(block, PATH, label="snipped", why="read again later")
    assert text.startswith("[snipped: read_file src/app.py, 245 lines, ")
    assert f"{len(block.content):,} chars" in text
    assert "read again later" in text
    assert text.endswith(f"full text at {PATH}]")


def test_how_to_get_a_cleared_text_back_is_said_once_in_the_system_prompt() -> None:
    shell = _block("out\n" * 10, tool_name="run_shell", target="pytest -q")
    text = cleared_placeholder(shell, PATH, label="cleared")
    assert text == f"[cleared: run_shell pytest -q, 10 lines, 40 chars — full text at {PATH}]"
    assert "[cleared: …]" in BASE_PROMPT and "re-run the command" in BASE_PROMPT
    assert "read that file with read_file (offset/limit" in BASE_PROMPT


def test_long_targets_are_shortened_to_one_line() -> None:
    command = "python -c '" + "x = 1; " * 40 + "'\nsecond line"
    text = cleared_placeholder(_block("o" * 5_000, target=command), PATH, label="cleared")
    assert "\n" not in text
    assert "…" in text


def test_error_results_say_so() -> None:
    block = _block("Traceback ...\n" * 50, is_error=True)
    assert "(an error)" in cleared_placeholder(block, PATH, label="cleared")


def test_clearing_a_short_result_would_grow_it_so_it_is_declined() -> None:
    assert cleared_block(_block("ok"), PATH, label="cleared") is None
    big = cleared_block(_block("z" * 5_000), PATH, label="cleared")
    assert big is not None
    assert big.state == ResultState.CLEARED and big.saved_path == PATH
    assert big.original_chars == 5_000


def _parts(cut: str) -> tuple[str, str, str]:
    """Head, marker and tail of a cut text (one blank line on each side of the marker)."""
    match = re.search(r"\n\[\.\.\. budget: [^\n]*\.\.\.\]\n\n", cut)
    assert match is not None
    return cut[: match.start()], match.group().strip("\n"), cut[match.end() :]


def test_head_and_tail_fit_the_limit_and_count_what_was_cut() -> None:
    original = numbered_lines(4_000)  # 104,000 chars
    block = _block(original)
    cut = cut_to_head_and_tail(block, 30_000, lambda n: budget_marker(n, PATH))
    assert len(cut) <= 30_000
    head, marker, tail = _parts(cut)
    assert original.startswith(head) and original.endswith(tail)
    assert head.endswith("\n") and tail.startswith("line ")  # cut at line breaks
    assert marker == budget_marker(len(original) - len(head) - len(tail), PATH)


def test_recutting_a_budgeted_result_counts_against_the_original() -> None:
    original = numbered_lines(4_000)
    first = cut_to_head_and_tail(_block(original), 30_000, lambda n: budget_marker(n, PATH))
    budgeted = replace(_block(original), content=first, state=ResultState.BUDGETED)
    second = cut_to_head_and_tail(budgeted, 15_000, lambda n: budget_marker(n, PATH))
    head, marker, tail = _parts(second)
    assert len(second) <= 15_000
    assert original.startswith(head) and original.endswith(tail)
    assert marker == budget_marker(len(original) - len(head) - len(tail), PATH)


def test_a_truncation_marker_tells_whether_the_rest_is_lost() -> None:
    assert "lost" in truncation_marker(10, save_failed=True)
    assert "lost" not in truncation_marker(10, save_failed=False)


def test_a_preview_respects_both_line_and_byte_limits() -> None:
    text = numbered_lines(1_000)
    preview, shown = preview_of(text, 200, 2_048)
    assert len(preview.encode()) <= 2_048
    assert shown == preview.count("\n") and text.startswith(preview)
    few, count = preview_of("a\nb\nc\n", 2, 2_048)
    assert (few, count) == ("a\nb\n", 2)


def test_a_preview_of_one_enormous_line_shows_its_start() -> None:
    preview, shown = preview_of("é" * 10_000, 200, 2_048)
    assert shown == 1
    assert preview == "é" * 1_024


def test_line_counting() -> None:
    assert count_lines("") == 0
    assert count_lines("a") == 1
    assert count_lines("a\n") == 1
    assert count_lines("a\nb") == 2
