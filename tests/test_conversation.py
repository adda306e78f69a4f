import pytest

from mini_claude.conversation import (
    Conversation,
    EditError,
    Message,
    ResultState,
    SummaryBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    message_from_dict,
    message_to_dict,
    user_text,
    validate,
)


def exchange(i: int, content: str = "x" * 10) -> list[Message]:
    use = ToolUseBlock(f"t{i}", "read_file", {"path": f"f{i}.py"})
    return [
        Message("assistant", [use]),
        Message("user", [ToolResultBlock(f"t{i}", content, tool_name="read_file")]),
    ]


def test_valid_history_has_no_problems() -> None:
    msgs = [user_text("hi"), *exchange(1), Message("assistant", [TextBlock("done")])]
    assert validate(msgs) == []


def test_missing_result_and_orphan_result_are_reported() -> None:
    a, r = exchange(1)
    assert any("without a result" in p for p in validate([user_text("hi"), a, user_text("x")]))
    assert any("no tool_use before" in p for p in validate([user_text("hi"), r]))


def test_empty_text_is_reported() -> None:
    assert validate([Message("user", [TextBlock("  ")])])


def test_replace_result_counts_chars_and_is_monotone() -> None:
    conv = Conversation([user_text("hi"), *exchange(1, "y" * 100)])
    before = conv.total_chars
    ref = conv.results[0]
    freed = conv.replace_result(ref, ToolResultBlock("t1", "cut", state=ResultState.CLEARED))
    assert freed == 97 and conv.total_chars == before - 97
    with pytest.raises(EditError):
        conv.replace_result(ref, ToolResultBlock("t1", "c", state=ResultState.BUDGETED))
    with pytest.raises(EditError):
        conv.replace_result(ref, ToolResultBlock("t1", "longer text", state=ResultState.CLEARED))


def test_close_dangling_tool_uses_answers_every_call() -> None:
    conv = Conversation(
        [
            user_text("go"),
            Message(
                "assistant",
                [
                    ToolUseBlock("a", "run_shell", {"command": "sleep 9"}),
                    ToolUseBlock("b", "read_file", {"path": "x"}),
                ],
            ),
        ]
    )
    added = conv.close_dangling_tool_uses()
    assert added is not None and [r.tool_use_id for r in added.tool_results] == ["a", "b"]
    assert validate(conv.messages) == []
    assert conv.close_dangling_tool_uses() is None


def test_serialization_round_trip() -> None:
    m = Message(
        "user",
        [
            SummaryBlock("s", "/t.jsonl", 4),
            TextBlock("t"),
            ToolResultBlock("x", "c", True, "grep_search", "foo", 9, 1, "/p", ResultState.BUDGETED),
        ],
    )
    assert message_from_dict(message_to_dict(m)) == m


def test_replace_all_bumps_epoch_and_rebuilds_index() -> None:
    conv = Conversation([user_text("a"), *exchange(1)])
    conv.replace_all([user_text("b")])
    assert conv.epoch == 1 and conv.results == [] and conv.total_chars == 1
