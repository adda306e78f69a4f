"""What a resumed session redraws, and what Ctrl-O and /summary bring back."""

from __future__ import annotations

import io

from rich.console import Console

from mini_claude.conversation import (
    Message,
    SummaryBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    user_text,
)
from mini_claude.steering import steering_block
from mini_claude.ui.recall import Recall, recap


def shown(*renderables: object) -> str:
    out = io.StringIO()
    console = Console(file=out, width=100, color_system=None)
    for renderable in renderables:
        console.print(renderable)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines())


def test_a_compacted_session_shows_its_summary_then_the_last_exchanges() -> None:
    messages = [
        Message("user", [SummaryBlock("We fixed the parser.\nNext: the tests.", "/t.jsonl", 40)]),
        Message("assistant", [TextBlock("Understood.")]),
        user_text("first question"),
        Message("assistant", [TextBlock("Looking."), ToolUseBlock("t1", "read_file",
                                                                   {"path": "a.py"})]),
        Message("user", [ToolResultBlock("t1", "print('a')\nline two", tool_name="read_file")]),
        Message("assistant", [TextBlock("It prints a.")]),
        user_text("second question"),
        Message("assistant", [TextBlock("Second answer.")]),
        user_text("third question"),
        Message("assistant", [TextBlock("Third answer.")]),
        user_text("fourth question"),
        Message("assistant", [TextBlock("Fourth answer.")]),
    ]
    text = shown(*recap(messages))
    assert text.startswith("… 6 earlier messages")
    assert "summary: We fixed the parser." in text
    for n in ("second", "third", "fourth"):
        assert f"> {n} question" in text
    assert "first question" not in text and "print('a')" not in text
    assert text.index("Second answer.") < text.index("Fourth answer.")


def test_a_short_session_is_shown_whole_with_its_tool_calls() -> None:
    messages = [
        user_text("read it"),
        Message("assistant", [ToolUseBlock("t1", "read_file", {"path": "a.py"})]),
        Message("user", [ToolResultBlock("t1", "print('a')\nline two", tool_name="read_file")]),
        Message("assistant", [TextBlock("It prints a.")]),
    ]
    text = shown(*recap(messages))
    assert "earlier messages" not in text
    assert "> read it" in text and "● read_file(a.py)" in text and "⎿  print('a')" in text
    assert "line two" not in text


def test_a_resumed_session_shows_a_steering_message_where_it_went_in() -> None:
    messages = [
        user_text("read it"),
        Message("assistant", [ToolUseBlock("t1", "read_file", {"path": "a.py"})]),
        Message("user", [ToolResultBlock("t1", "print('a')", tool_name="read_file"),
                         steering_block("read b.py instead")]),
        Message("assistant", [TextBlock("Reading b.py.")]),
    ]
    text = shown(*recap(messages))
    assert "> read b.py instead  (steering this turn)" in text
    assert text.index("⎿  print('a')") < text.index("read b.py instead")
    assert "Sent by the user" not in text


def test_recall_says_when_there_is_nothing_to_show() -> None:
    recall = Recall()
    assert "no collapsed tool result yet" in shown(recall.full_result())
    assert "not been compacted yet" in shown(recall.full_summary())
    recall.keep_result("run_shell", "one\ntwo\nthree")
    assert "one\ntwo\nthree" in shown(recall.full_result())


def test_expand_n_shows_the_nth_latest_collapsed_result() -> None:
    recall = Recall()
    for n in range(1, 5):
        recall.keep_result("run_shell", f"output of command {n}")
    assert "output of command 4" in shown(recall.full_result())
    third = shown(recall.full_result(3))
    assert "output of command 2" in third and "3 back" in third
    assert "output of command 4" not in third
    assert "1 to 4" in shown(recall.full_result(9))
