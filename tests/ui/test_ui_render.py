"""Streaming Markdown split into blocks, tool lines and collapsed results, coloured diffs."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console, RenderableType

from mini_claude.conversation import ToolResultBlock
from mini_claude.events import ToolFinished
from mini_claude.protocol import TierReport
from mini_claude.ui.render import (
    MarkdownStream,
    diff_view,
    hanging_note,
    main_argument,
    markdown,
    tier_summary,
    tool_call_line,
    tool_result_view,
)

ANSWER = (
    "Intro paragraph\ncontinues here.\n\n"
    "- first\n- second\n\n- third after a blank\n\n  indented continuation\n\n"
    "After the list.\n"
    "```python\nx = 1\n\n\ny = 2\n```\n"
    "Closing words"
)
EXPECTED_BLOCKS = [
    "Intro paragraph\ncontinues here.",
    "- first\n- second\n\n- third after a blank\n\n  indented continuation",
    "After the list.",
    "```python\nx = 1\n\n\ny = 2\n```",
    "Closing words",
]


def stream_all(chunks: list[str]) -> list[str]:
    stream = MarkdownStream()
    blocks: list[str] = []
    for chunk in chunks:
        blocks += stream.feed(chunk)
    last = stream.flush()
    return blocks + ([last] if last else [])


def render(renderable: RenderableType, width: int = 80) -> str:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(renderable)
    return out.getvalue()


def test_blocks_finish_at_paragraph_list_and_fence_boundaries() -> None:
    assert stream_all([ANSWER]) == EXPECTED_BLOCKS


def test_character_by_character_streaming_gives_the_same_blocks() -> None:
    assert stream_all(list(ANSWER)) == EXPECTED_BLOCKS


def test_a_paragraph_stays_live_until_the_next_line_shows_it_is_over() -> None:
    stream = MarkdownStream()
    assert stream.feed("First para.\n\n") == []
    assert stream.tail == "First para.\n"
    assert stream.feed("Sec") == []
    assert stream.feed("ond\n") == ["First para."]
    assert stream.tail == "Second\n"


def test_a_code_block_is_finished_only_by_its_closing_fence() -> None:
    stream = MarkdownStream()
    assert stream.feed("```\ncode\n\nmore code\n") == []
    assert "more code" in stream.tail
    assert stream.feed("```\n") == ["```\ncode\n\nmore code\n```"]
    assert stream.tail == ""


def test_a_longer_fence_is_not_closed_by_a_shorter_one() -> None:
    blocks = stream_all(["````md\n```\ninner\n```\n````\nafter"])
    assert blocks == ["````md\n```\ninner\n```\n````", "after"]


def test_reset_drops_the_unfinished_tail_after_a_restart() -> None:
    stream = MarkdownStream()
    stream.feed("half a sent")
    stream.reset()
    assert stream.tail == ""
    assert stream.feed("fresh\n\nnext\n") == ["fresh"]


@given(st.lists(st.integers(min_value=1, max_value=len(ANSWER)), max_size=12))
def test_any_chunking_gives_the_same_blocks(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    chunks = [ANSWER[a:b] for a, b in zip([0, *points], [*points, len(ANSWER)], strict=True)]
    assert stream_all(chunks) == EXPECTED_BLOCKS


@given(st.text(alphabet="ab `-\n#1.", max_size=200))
def test_no_text_is_lost_or_invented(text: str) -> None:
    """Every non-blank line streamed appears, in order, in the blocks."""
    blocks = stream_all([text])
    lines_in = [line for line in text.split("\n") if line.strip()]
    lines_out = [line for block in blocks for line in block.split("\n") if line.strip()]
    assert lines_out == lines_in


def test_tool_line_names_the_tool_and_its_main_argument() -> None:
    assert tool_call_line("run_shell", {"command": "pytest -q", "timeout": 30}).plain == (
        "● run_shell(pytest -q)"
    )
    assert tool_call_line("read_file", {"path": "src/app.py", "offset": 10}).plain == (
        "● read_file(src/app.py)"
    )
    assert main_argument({"command": "echo a\necho b"}) == "echo a echo b"
    assert main_argument({}) == ""
    assert main_argument({"n": 3}) == '{"n": 3}'


def finished(content: str, *, is_error: bool = False, display: str | None = None,
             kind: str = "text") -> ToolFinished:
    block = ToolResultBlock("t1", content, is_error, "run_shell", "cmd")
    return ToolFinished("t1", "run_shell", block, display, kind)


def test_long_results_collapse_to_their_first_lines_and_a_count() -> None:
    content = "\n".join(f"line {i}" for i in range(1, 31))
    shown = render(tool_result_view(finished(content)))
    assert "line 1" in shown and "line 4" in shown
    assert "line 5" not in shown
    assert "… +26 lines (30 lines" in shown
    assert shown.startswith("  ⎿  line 1")


def test_short_results_are_shown_whole_and_empty_ones_say_so() -> None:
    assert render(tool_result_view(finished("ok\n"))).strip() == "⎿  ok"
    assert "(no output)" in render(tool_result_view(finished("")))


def test_errors_are_red() -> None:
    out = io.StringIO()
    Console(file=out, width=80, force_terminal=True, color_system="standard").print(
        tool_result_view(finished("boom", is_error=True)))
    assert "\x1b[31m" in out.getvalue()  # red foreground


def test_diffs_are_coloured_by_line_kind_and_capped() -> None:
    diff = "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-old\n+new\n context\n"
    text = diff_view(diff)
    styles = {text.plain[span.start:span.end].strip(): str(span.style) for span in text.spans}
    assert styles["-old"] == "red"
    assert styles["+new"] == "green"
    assert styles["@@ -1,2 +1,2 @@"] == "cyan"
    long_diff = "@@ -1 +1 @@\n" + "".join(f"+line {i}\n" for i in range(100))
    assert "… +61 lines" in diff_view(long_diff, 40).plain


def test_a_tool_display_is_preferred_to_the_model_facing_content() -> None:
    event = finished("Edited a.py", display="@@ -1 +1 @@\n-a\n+b\n", kind="diff")
    shown = render(tool_result_view(event))
    assert "+b" in shown and "Edited a.py" not in shown


# ---- what wraps where, and blank lines -------------------------------------------------


def _narrow(*renderables: RenderableType, width: int = 40) -> list[str]:
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None)
    for renderable in renderables:
        console.print(renderable)
    return out.getvalue().splitlines()


SAVED = ("persist: 1 result saved, 3.1k tokens freed (saved to /home/someone/.mini-claude/"
         "tool-results/20261126-0530-abcdef/run_shell-0001.txt)")


def test_long_notes_and_saved_paths_never_wrap_to_column_zero() -> None:
    lines = _narrow(hanging_note(SAVED))
    assert len(lines) > 2
    assert lines[0].startswith("  · persist")
    assert all(line.startswith("    ") for line in lines[1:])
    result = ToolFinished("t1", "run_shell", ToolResultBlock("t1", "[Output saved to " + SAVED
                                                              + "]\nsecond line"))
    lines = _narrow(tool_result_view(result))
    assert lines[0].startswith("  ⎿  ")
    assert all(line.startswith("     ") for line in lines[1:])


def test_code_blocks_and_tables_bring_no_extra_blank_lines() -> None:
    text = "\n".join(_narrow(markdown("```python\nprint(1)\n```"), markdown("| a | b |\n|---|"
                                                                             "---|\n| 1 | 2 |")))
    assert not text.startswith("\n") and "\n\n" not in text.strip("\n")
    assert "print(1)" in text and "1  2" in text


def test_one_line_sums_up_what_the_tiers_did_before_a_call() -> None:
    line = tier_summary([TierReport("persist", 1, 9_000, 2_000),
                         TierReport("budget", 2, 4_000, 1_000, "at 118% of the window"),
                         TierReport("budget", 1, 1_000, 300)])
    assert line == "context: persist saved 1 result, budget trimmed 3 results; 3.3k tokens freed"
    folded = tier_summary([TierReport("microcompact", 4, 9_000, 2_000),
                           TierReport("fold", 12, 3_000, 700)])
    assert folded == ("context: microcompact cleared 4 results, fold folded 12 old calls; "
                      "2.7k tokens freed")


def test_a_search_is_shown_by_its_pattern() -> None:
    assert main_argument({"pattern": "TODO", "path": "src"}) == "TODO"
