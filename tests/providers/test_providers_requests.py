"""Request building as pure functions: a neutral conversation in, the wire dict out."""

from __future__ import annotations

import json
from typing import Any

from mini_claude.conversation import (
    Message,
    SummaryBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    user_text,
)
from mini_claude.protocol import RAW_ARGUMENTS_KEY, ModelRequest, ToolSpec
from mini_claude.providers import anthropic as anthropic_wire
from mini_claude.providers import openai as openai_wire
from mini_claude.providers.arguments import parse_tool_input

READ = ToolSpec("read_file", "Read a file", {"type": "object", "properties": {"path": {}}})
GREP = ToolSpec("grep_search", "Search", {"type": "object", "properties": {"pattern": {}}})


def tool_turn(call_id: str, path: str, result: str) -> list[Message]:
    return [
        Message(
            "assistant", [TextBlock("Reading."), ToolUseBlock(call_id, "read_file", {"path": path})]
        ),
        Message("user", [ToolResultBlock(call_id, result, tool_name="read_file", target=path)]),
    ]


def request(messages: list[Message], **changes: Any) -> ModelRequest:
    values: dict[str, Any] = {
        "model": "sim-model",
        "system": "You are terse.",
        "messages": messages,
        "tools": [READ, GREP],
        "max_tokens": 1000,
    }
    values.update(changes)
    return ModelRequest(**values)


def cache_marked(body: dict[str, Any]) -> list[str]:
    """Where the breakpoints sit, named by place."""
    places: list[str] = []
    for tool in body.get("tools", []):
        if "cache_control" in tool:
            places.append(f"tool:{tool['name']}")
    for block in body.get("system", []):
        if "cache_control" in block:
            places.append("system")
    for mi, message in enumerate(body["messages"]):
        for bi, block in enumerate(message["content"]):
            if "cache_control" in block:
                places.append(f"message:{mi}:{bi}")
    return places


# ---- Anthropic ---------------------------------------------------------------------


def test_anthropic_blocks_system_and_tools_have_the_wire_shape() -> None:
    messages = [user_text("look at a.py"), *tool_turn("toolu_1", "a.py", "print(1)")]
    body = anthropic_wire.build_request(request(messages, cache=False))

    assert body["system"] == [{"type": "text", "text": "You are terse."}]
    assert body["tools"][0] == {
        "name": "read_file",
        "description": "Read a file",
        "input_schema": READ.input_schema,
    }
    assert body["stream"] is True and body["max_tokens"] == 1000
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "look at a.py"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "read_file",
                    "input": {"path": "a.py"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "print(1)",
                    "is_error": False,
                }
            ],
        },
    ]
    assert "tool_choice" not in body
    assert cache_marked(body) == []


def test_anthropic_merges_consecutive_roles_with_tool_results_first() -> None:
    messages = [
        user_text("first"),
        Message("assistant", [ToolUseBlock("toolu_1", "read_file", {"path": "a"})]),
        Message("user", [ToolResultBlock("toolu_1", "A")]),
        user_text("and also this"),
        Message("user", [TextBlock("more"), ToolResultBlock("toolu_x", "late", is_error=True)]),
    ]
    body = anthropic_wire.build_request(request(messages, cache=False))

    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user"]
    merged = body["messages"][2]["content"]
    assert [b["type"] for b in merged] == ["tool_result", "tool_result", "text", "text"]
    assert merged[1]["is_error"] is True
    assert [b.get("text") for b in merged[2:]] == ["and also this", "more"]


def test_anthropic_summary_block_is_sent_as_its_rendered_text() -> None:
    summary = SummaryBlock("We fixed the parser.", transcript_path="/t/s.jsonl")
    body = anthropic_wire.build_request(request([Message("user", [summary])], cache=False))

    block = body["messages"][0]["content"][0]
    assert block == {"type": "text", "text": summary.render()}
    assert "/t/s.jsonl" in block["text"]


def test_anthropic_drops_blank_text_beside_other_blocks() -> None:
    messages = [
        user_text("go"),
        Message("assistant", [TextBlock("  \n"), ToolUseBlock("toolu_1", "read_file", {})]),
        Message("user", [ToolResultBlock("toolu_1", "ok")]),
    ]
    body = anthropic_wire.build_request(request(messages, cache=False))

    assert [b["type"] for b in body["messages"][1]["content"]] == ["tool_use"]


def test_anthropic_cache_breakpoints_on_tools_system_tail_and_previous_tail() -> None:
    messages = [
        user_text("start"),
        *tool_turn("toolu_1", "a.py", "A"),
        *tool_turn("toolu_2", "b.py", "B"),
    ]
    body = anthropic_wire.build_request(request(messages))

    # Messages: 0 user, 1 assistant, 2 results(toolu_1), 3 assistant, 4 results(toolu_2).
    assert cache_marked(body) == ["tool:grep_search", "system", "message:2:0", "message:4:0"]
    assert body["messages"][4]["content"][0]["cache_control"] == {"type": "ephemeral"}


def test_anthropic_breakpoints_never_exceed_four_or_repeat_a_block() -> None:
    single = anthropic_wire.build_request(request([user_text("hi")]))
    assert cache_marked(single) == ["tool:grep_search", "system", "message:0:0"]

    bare = anthropic_wire.build_request(request([user_text("hi")], tools=[], system=""))
    assert cache_marked(bare) == ["message:0:0"]
    assert "system" not in bare and "tools" not in bare

    long_history = [user_text("start")]
    for i in range(10):
        long_history += tool_turn(f"toolu_{i}", f"f{i}.py", "x")
    assert len(cache_marked(anthropic_wire.build_request(request(long_history)))) == 4


def test_anthropic_cache_anchor_takes_the_tools_breakpoint() -> None:
    fold = TextBlock("[Earlier tool calls, folded to one line each]\n- read_file a.py")
    messages = [
        Message("user", [TextBlock("start"), fold]),
        *tool_turn("toolu_1", "a.py", "A"),
        *tool_turn("toolu_2", "b.py", "B"),
    ]
    body = anthropic_wire.build_request(request(messages, cache_anchor=fold))

    assert cache_marked(body) == ["system", "message:0:1", "message:2:0", "message:4:0"]
    # an anchor that is also the previous tail is marked once, and the tools keep theirs
    short = anthropic_wire.build_request(request(messages[:3], cache_anchor=fold))
    assert cache_marked(short) == ["tool:grep_search", "system", "message:0:1", "message:2:0"]
    # an anchor the request does not hold marks nothing
    stray = anthropic_wire.build_request(request(messages, cache_anchor=TextBlock("gone")))
    assert cache_marked(stray) == ["tool:grep_search", "system", "message:2:0", "message:4:0"]


def test_anthropic_tool_choice_none_keeps_tools_defined() -> None:
    body = anthropic_wire.build_request(request([user_text("summarise")], allow_tool_use=False))

    assert body["tool_choice"] == {"type": "none"}
    assert [t["name"] for t in body["tools"]] == ["read_file", "grep_search"]


def test_anthropic_request_does_not_change_the_conversation() -> None:
    messages = [user_text("start"), *tool_turn("toolu_1", "a.py", "A")]
    before = repr(messages)
    anthropic_wire.build_request(request(messages))
    assert repr(messages) == before


# ---- OpenAI ------------------------------------------------------------------------


def test_openai_messages_tools_and_token_limit() -> None:
    messages = [user_text("look at a.py"), *tool_turn("call_1", "a.py", "print(1)")]
    body = openai_wire.build_request(request(messages))

    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "look at a.py"},
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "print(1)"},
    ]
    assert body["tools"][1] == {
        "type": "function",
        "function": {
            "name": "grep_search",
            "description": "Search",
            "parameters": GREP.input_schema,
        },
    }
    assert body["max_completion_tokens"] == 1000 and "max_tokens" not in body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert "tool_choice" not in body


def test_openai_assistant_without_text_has_null_content_and_json_arguments() -> None:
    use = ToolUseBlock("call_9", "grep_search", {"pattern": "déjà vu", "n": [1, 2]})
    messages = [
        user_text("go"),
        Message("assistant", [use]),
        Message("user", [ToolResultBlock("call_9", "none")]),
    ]
    assistant = openai_wire.build_request(request(messages))["messages"][2]

    assert assistant["content"] is None
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == use.input


def test_openai_results_become_tool_messages_then_user_text() -> None:
    messages = [
        user_text("go"),
        Message(
            "assistant", [ToolUseBlock("c1", "read_file", {}), ToolUseBlock("c2", "read_file", {})]
        ),
        Message(
            "user",
            [
                TextBlock("note"),
                ToolResultBlock("c1", "one"),
                ToolResultBlock("c2", "two", is_error=True),
            ],
        ),
        Message("user", [SummaryBlock("earlier work")]),
    ]
    wire = openai_wire.build_request(request(messages, system=""))["messages"]

    assert [m["role"] for m in wire] == ["user", "assistant", "tool", "tool", "user", "user"]
    assert [m.get("tool_call_id") for m in wire[2:4]] == ["c1", "c2"]
    assert wire[4]["content"] == "note"
    assert wire[5]["content"] == SummaryBlock("earlier work").render()


def test_openai_tool_choice_none_only_when_tools_exist() -> None:
    with_tools = openai_wire.build_request(request([user_text("x")], allow_tool_use=False))
    without = openai_wire.build_request(request([user_text("x")], allow_tool_use=False, tools=[]))

    assert with_tools["tool_choice"] == "none"
    assert "tool_choice" not in without and "tools" not in without


def test_openai_legacy_token_limit_name() -> None:
    body = openai_wire.build_request(request([user_text("x")]), legacy_max_tokens=True)
    assert body["max_tokens"] == 1000 and "max_completion_tokens" not in body


# ---- tool arguments ----------------------------------------------------------------


def test_tool_arguments_parse_or_stay_raw() -> None:
    assert parse_tool_input(['{"pa', 'th": "a.py"}']) == {"path": "a.py"}
    assert parse_tool_input([]) == {}
    assert parse_tool_input(['{"path": "a.py"']) == {RAW_ARGUMENTS_KEY: '{"path": "a.py"'}
    assert parse_tool_input(["[1, 2]"]) == {RAW_ARGUMENTS_KEY: "[1, 2]"}
