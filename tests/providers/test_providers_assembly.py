"""Reply assembly from real SDK event objects (parsed from wire JSON, not mocked).

Covers server behaviours the simulator does not produce: thinking blocks,
tool-call deltas that repeat their id and name, calls without ids.
"""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import RawMessageStreamEvent
from openai.types.chat import ChatCompletionChunk
from pydantic import TypeAdapter

from mini_claude.conversation import TextBlock, ThinkingBlock, ToolUseBlock
from mini_claude.protocol import (
    RAW_ARGUMENTS_KEY,
    ConnectionLost,
    ModelTextDelta,
    ModelThinking,
    ResponseComplete,
    StreamEvent,
    ToolUseStarted,
    Usage,
)
from mini_claude.providers.anthropic import ReplyAssembler
from mini_claude.providers.openai import ChunkAssembler

ANTHROPIC_EVENT: TypeAdapter[RawMessageStreamEvent] = TypeAdapter(RawMessageStreamEvent)


def anthropic_events(*raw: dict[str, Any]) -> tuple[list[StreamEvent], ReplyAssembler]:
    reply = ReplyAssembler()
    out: list[StreamEvent] = []
    for data in raw:
        out.extend(reply.feed(ANTHROPIC_EVENT.validate_python(data)))
    return out, reply


def message_start(**usage: int) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0, **usage},
        },
    }


def block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, body: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": body}


def stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_delta(reason: str, **usage: int) -> dict[str, Any]:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": reason, "stop_sequence": None},
        "usage": {"output_tokens": 0, **usage},
    }


MESSAGE_STOP = {"type": "message_stop"}


def test_anthropic_thinking_is_kept_exactly_and_usage_is_merged() -> None:
    out, reply = anthropic_events(
        message_start(
            input_tokens=12,
            cache_read_input_tokens=100,
            cache_creation_input_tokens=7,
            output_tokens=1,
        ),
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, {"type": "thinking_delta", "thinking": "let me think"}),
        delta(0, {"type": "signature_delta", "signature": "sig"}),
        stop(0),
        block_start(1, {"type": "text", "text": ""}),
        delta(1, {"type": "text_delta", "text": "Answer"}),
        stop(1),
        message_delta("end_turn", output_tokens=42),
        MESSAGE_STOP,
    )
    done = reply.complete()

    thought = "let me think"
    assert out == [ModelThinking(len(thought), text=thought), ModelTextDelta("Answer")]
    assert done.message.blocks == [ThinkingBlock("let me think", "sig"), TextBlock("Answer")]
    assert done.stop_reason == "end_turn"
    assert done.usage == Usage(
        input_tokens=12, cache_read_tokens=100, cache_write_tokens=7, output_tokens=42
    )


def test_anthropic_tool_input_parsed_at_block_stop_and_kept_raw_when_invalid() -> None:
    out, reply = anthropic_events(
        message_start(input_tokens=5),
        block_start(0, {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {}}),
        delta(0, {"type": "input_json_delta", "partial_json": '{"path": "a'}),
        delta(0, {"type": "input_json_delta", "partial_json": '.py"}'}),
        stop(0),
        block_start(1, {"type": "tool_use", "id": "toolu_b", "name": "grep_search", "input": {}}),
        delta(1, {"type": "input_json_delta", "partial_json": '{"pattern": '}),
        stop(1),
        block_start(2, {"type": "tool_use", "id": "toolu_c", "name": "list_files", "input": {}}),
        stop(2),
        message_delta("tool_use", output_tokens=9),
        MESSAGE_STOP,
    )
    done = reply.complete()

    assert out == [
        ToolUseStarted("toolu_a", "read_file"),
        ToolUseStarted("toolu_b", "grep_search"),
        ToolUseStarted("toolu_c", "list_files"),
    ]
    assert done.message.blocks == [
        ToolUseBlock("toolu_a", "read_file", {"path": "a.py"}),
        ToolUseBlock("toolu_b", "grep_search", {RAW_ARGUMENTS_KEY: '{"pattern": '}),
        ToolUseBlock("toolu_c", "list_files", {}),
    ]
    assert done.stop_reason == "tool_use"


def test_anthropic_stream_without_message_stop_is_a_lost_connection() -> None:
    _, reply = anthropic_events(
        message_start(input_tokens=5),
        block_start(0, {"type": "text", "text": ""}),
        delta(0, {"type": "text_delta", "text": "half"}),
    )
    with pytest.raises(ConnectionLost):
        reply.complete()


def chunk(
    *,
    content: str | None = None,
    calls: list[dict[str, Any]] | None = None,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    choices: bool = True,
) -> ChatCompletionChunk:
    data: dict[str, Any] = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [],
    }
    if choices:
        body: dict[str, Any] = {}
        if content is not None:
            body["content"] = content
        if calls is not None:
            body["tool_calls"] = calls
        data["choices"] = [{"index": 0, "delta": body, "finish_reason": finish}]
    if usage is not None:
        data["usage"] = usage
    return ChatCompletionChunk.model_validate(data)


def assemble(*chunks: ChatCompletionChunk) -> tuple[list[StreamEvent], ResponseComplete]:
    reply = ChunkAssembler()
    out = [event for c in chunks for event in reply.feed(c)]
    return out, reply.complete()


def call(
    index: int, *, id: str | None = None, name: str | None = None, arguments: str | None = None
) -> dict[str, Any]:
    function = {k: v for k, v in (("name", name), ("arguments", arguments)) if v is not None}
    return {"index": index, **({"id": id} if id else {}), "type": "function", "function": function}


def test_openai_tool_calls_accumulate_by_index_even_interleaved() -> None:
    out, done = assemble(
        chunk(content="Two reads."),
        chunk(calls=[call(0, id="call_a", name="read_file", arguments='{"path"')]),
        chunk(calls=[call(1, id="call_b", name="read_file", arguments='{"path": "b"}')]),
        chunk(calls=[call(0, arguments=': "a"}')]),
        chunk(finish="tool_calls"),
        chunk(
            choices=False,
            usage={
                "prompt_tokens": 500,
                "completion_tokens": 20,
                "total_tokens": 520,
                "prompt_tokens_details": {"cached_tokens": 384},
            },
        ),
    )

    assert out == [
        ModelTextDelta("Two reads."),
        ToolUseStarted("call_a", "read_file"),
        ToolUseStarted("call_b", "read_file"),
    ]
    assert done.message.blocks == [
        TextBlock("Two reads."),
        ToolUseBlock("call_a", "read_file", {"path": "a"}),
        ToolUseBlock("call_b", "read_file", {"path": "b"}),
    ]
    assert done.stop_reason == "tool_use"
    assert done.usage == Usage(
        input_tokens=116, cache_read_tokens=384, cache_write_tokens=0, output_tokens=20
    )
    assert done.usage.prompt_tokens == 500


def test_openai_repeated_id_and_name_are_not_doubled() -> None:
    _, done = assemble(
        chunk(calls=[call(0, id="call_x", name="grep_search", arguments='{"pat')]),
        chunk(calls=[call(0, id="call_x", name="grep_search", arguments='tern": "f"}')]),
        chunk(finish="tool_calls"),
    )
    assert done.message.blocks == [ToolUseBlock("call_x", "grep_search", {"pattern": "f"})]


def test_openai_call_without_id_gets_one_and_stop_after_calls_means_tool_use() -> None:
    out, done = assemble(
        chunk(calls=[call(0, name="list_files", arguments="{}")]),
        chunk(finish="stop"),
    )
    [use] = done.message.tool_uses
    assert use.id.startswith("call_") and len(use.id) > 10
    assert out == [ToolUseStarted(use.id, "list_files")]
    assert done.stop_reason == "tool_use"
    assert done.usage is None  # the server sent none


@pytest.mark.parametrize(
    ("finish", "expected"),
    [("stop", "end_turn"), ("length", "max_tokens"), ("content_filter", "content_filter")],
)
def test_openai_finish_reasons_are_normalised(finish: str, expected: str) -> None:
    _, done = assemble(chunk(content="x"), chunk(finish=finish))
    assert done.stop_reason == expected


def test_openai_stream_without_finish_reason_is_a_lost_connection() -> None:
    reply = ChunkAssembler()
    list(reply.feed(chunk(content="half")))
    with pytest.raises(ConnectionLost):
        reply.complete()


def test_blank_text_beside_a_tool_call_is_dropped() -> None:
    _, reply = anthropic_events(
        message_start(input_tokens=5),
        block_start(0, {"type": "text", "text": ""}),
        delta(0, {"type": "text_delta", "text": "\n\n"}),
        stop(0),
        block_start(1, {"type": "tool_use", "id": "toolu_a", "name": "list_files", "input": {}}),
        stop(1),
        message_delta("tool_use"),
        MESSAGE_STOP,
    )
    assert reply.complete().message.blocks == [ToolUseBlock("toolu_a", "list_files", {})]

    _, done = assemble(
        chunk(content="\n"),
        chunk(calls=[call(0, id="call_a", name="list_files", arguments="{}")]),
        chunk(finish="tool_calls"),
    )
    assert done.message.blocks == [ToolUseBlock("call_a", "list_files", {})]
