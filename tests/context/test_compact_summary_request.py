"""The summary call's pure parts: the instruction, the reply parsing, shortening an input."""

from __future__ import annotations

from mini_claude.context.rebuild import assemble, boundary_message
from mini_claude.context.summary_request import (
    cut_results,
    drop_oldest,
    extract_summary,
    summary_instruction,
    tokens_to_drop,
    unsent_suffix_start,
)
from mini_claude.conversation import Message, SummaryBlock, message_chars, validate
from mini_claude.prompts import SUMMARY_HEADING
from tests.support.compact import call, read, reply, user


def size(message: Message) -> int:
    return message_chars(message) // 4 + 4


def test_instruction_starts_with_the_heading_and_ends_with_the_focus() -> None:
    text = summary_instruction("the database schema")
    assert text.startswith(SUMMARY_HEADING + "\n")
    assert text.endswith("\n\nFocus: the database schema")
    for part in ("<analysis>", "<summary>", "Pending tasks", "Next step", "User messages",
                 "Errors and fixes", "Files"):
        assert part in text
    assert "Focus:" not in summary_instruction(None).splitlines()[-1]
    assert summary_instruction("   ") == summary_instruction(None)


def test_summary_is_the_tagged_part_without_the_scratchpad() -> None:
    reply_text = (
        "<analysis>I might write <summary>draft</summary> here</analysis>\n"
        "<summary>\n1. Requests: fix bug\n</summary>\ntrailing words"
    )
    assert extract_summary(reply_text) == "1. Requests: fix bug"


def test_untagged_reply_is_kept_whole_minus_analysis() -> None:
    assert extract_summary("Plain summary text.") == "Plain summary text."
    assert extract_summary("<analysis>notes</analysis>\nThe gist.") == "The gist."


def test_reply_cut_off_while_thinking_gives_an_empty_summary() -> None:
    assert extract_summary("<analysis>still going and going") == ""
    assert extract_summary("<analysis>a</analysis><summary>   </summary>") == ""


def test_reply_cut_off_inside_the_summary_keeps_what_arrived() -> None:
    assert extract_summary("<analysis>a</analysis><summary>1. Requests: x") == "1. Requests: x"


def test_unsent_suffix_excludes_running_calls_and_the_new_request() -> None:
    history = [user("a"), *read("x.py"), reply("done"), user("b"), user("c")]
    assert unsent_suffix_start(history) == 4
    running = [user("a"), *read("x.py"), Message("assistant", [call("read_file", path="y")])]
    assert unsent_suffix_start(running) == 3
    mid_turn = [user("a"), *read("x.py")]
    assert unsent_suffix_start(mid_turn) == 3


def test_drop_prefers_whole_turns_and_notes_what_was_left_out() -> None:
    history = [user("t1"), *read("a", "x" * 4_000), reply("r1"),
               user("t2"), *read("b", "y" * 4_000), reply("r2"),
               user("t3"), *read("c", "z" * 400)]
    shaped = drop_oldest(history, 500, size)
    assert shaped is not None
    assert shaped.dropped == 4
    assert shaped.messages[1].text == "t2"
    assert "4 earlier messages" in shaped.messages[0].text
    assert validate(shaped.messages) == []


def test_drop_inside_one_long_turn_keeps_pairs_whole() -> None:
    history = [user("review everything")]
    for i in range(6):
        history += read(f"f{i}", "x" * 4_000)
    shaped = drop_oldest(history, 2_500, size)
    assert shaped is not None
    assert shaped.messages[1].role == "assistant"
    assert validate(shaped.messages) == []
    assert sum(size(m) for m in history[: shaped.dropped]) >= 2_500


def test_drop_keeps_an_earlier_summary_at_the_start() -> None:
    history = assemble(boundary_message("earlier work", "", 10, [], []),
                       [user("t1"), *read("a", "x" * 8_000), reply("r1"), user("t2"),
                        reply("r2")])
    shaped = drop_oldest(history, 1_000, size)
    assert shaped is not None
    head = shaped.messages[0]
    assert isinstance(head.blocks[0], SummaryBlock) and head.blocks[0].summary == "earlier work"
    assert shaped.messages[1].text == "t2"


def test_drop_gives_up_when_nothing_would_be_left() -> None:
    history = [user("only"), *read("a", "x" * 100)]
    assert drop_oldest(history, 10_000, size) is None


def test_one_turn_too_long_to_drop_from_has_its_largest_results_cut() -> None:
    big = "".join(f"line {i}\n" for i in range(3_000))  # ~26,000 chars
    history = [user("only"), *read("small", "x" * 300), *read("big", big)]
    assert drop_oldest(history[:3], 4_000, size) is None
    shaped = cut_results(history, 4_000, size)
    assert shaped is not None and shaped.cut == 1 and shaped.dropped == 0 and shaped.reshaped
    assert sum(map(size, history)) - sum(map(size, shaped.messages)) >= 4_000
    text = shaped.messages[-1].tool_results[0].content
    assert text.startswith("line 0\n") and text.rstrip().endswith("line 2999")
    assert "chars left out of this summary request; the transcript has them" in text
    assert shaped.messages[2].tool_results[0].content == "x" * 300  # small ones stay
    assert history[-1].tool_results[0].content == big  # the history itself is untouched
    assert validate(shaped.messages) == []
    assert cut_results(history, 100_000, size) is None


def test_drop_share_follows_the_server_numbers() -> None:
    assert tokens_to_drop(1_000, server_tokens=250_000, server_maximum=200_000) == 250
    assert tokens_to_drop(1_000) == 200
    assert tokens_to_drop(1_000, server_tokens=100, server_maximum=200) == 200
