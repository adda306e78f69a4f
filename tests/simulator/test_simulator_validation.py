"""Requests the real APIs refuse are refused with the real status, shape and message."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import anthropic
import openai
import pytest

from mini_claude.simulator import Reply, ScriptedPolicy, Simulator

MODEL = "sim-claude"
TOOLS: list[Any] = [
    {"name": "read_file", "description": "Read.", "input_schema": {"type": "object"}}
]
OPENAI_TOOLS: list[Any] = [
    {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}
]


def use(tool_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": "read_file", "input": {"path": "a"}}


def result(tool_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": "text"}


@pytest.fixture
def sim() -> Any:
    with Simulator() as running:
        yield running


@lru_cache(maxsize=4)
def _claude(url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test-key", base_url=url, max_retries=0)


@lru_cache(maxsize=4)
def _gpt(url: str) -> openai.OpenAI:
    return openai.OpenAI(api_key="test-key", base_url=url, max_retries=0)


def send(sim: Simulator, **kwargs: Any) -> Any:
    client = _claude(sim.url)
    params: dict[str, Any] = {"model": MODEL, "max_tokens": 16, "tools": TOOLS}
    params.update(kwargs)
    return client.messages.create(**params)


def refused(sim: Simulator, **kwargs: Any) -> str:
    """Send, expect a 400, check the body's shape, return the message."""
    with pytest.raises(anthropic.BadRequestError) as caught:
        send(sim, **kwargs)
    body = caught.value.body
    assert isinstance(body, dict) and body["type"] == "error"
    assert body["error"]["type"] == "invalid_request_error"
    assert body["request_id"].startswith("req_")
    assert sim.requests[-1].status == 400 and sim.requests[-1].error == body["error"]["message"]
    return str(body["error"]["message"])


# ---- Anthropic ---------------------------------------------------------------------------


def test_max_tokens_below_one_is_refused(sim: Simulator) -> None:
    message = refused(sim, max_tokens=0, messages=[{"role": "user", "content": "hi"}])
    assert "max_tokens" in message


def test_empty_messages_are_refused(sim: Simulator) -> None:
    assert "at least one message" in refused(sim, messages=[])


def test_unknown_role_is_refused(sim: Simulator) -> None:
    message = refused(sim, messages=[{"role": "system", "content": "hi"}])
    assert message == "messages.0.role: Input should be 'user' or 'assistant'"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", "messages.0: all messages must have non-empty content"),
        ([{"type": "text", "text": ""}], "text content blocks must be non-empty"),
        (
            [{"type": "text", "text": "  \n "}],
            "text content blocks must contain non-whitespace text",
        ),
        ([], "messages.0: all messages must have non-empty content"),
    ],
)
def test_empty_content_is_refused(sim: Simulator, content: Any, expected: str) -> None:
    assert expected in refused(sim, messages=[{"role": "user", "content": content}])


def test_consecutive_same_role_messages_are_merged_not_refused(sim: Simulator) -> None:
    send(
        sim,
        messages=[
            {"role": "user", "content": "first"},
            {"role": "user", "content": [{"type": "text", "text": "second"}]},
        ],
    )
    conv = sim.requests[-1].conversation
    assert sim.requests[-1].status == 200 and conv is not None
    assert len(conv.messages) == 1 and conv.messages[0].text == "firstsecond"


def test_system_as_list_of_text_blocks_is_accepted_and_other_blocks_are_not(
    sim: Simulator,
) -> None:
    send(
        sim,
        system=[{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        messages=[{"role": "user", "content": "hi"}],
    )
    conv = sim.requests[-1].conversation
    assert conv is not None and conv.system == "a\n\nb"
    message = refused(
        sim, system=[{"type": "image", "source": {}}], messages=[{"role": "user", "content": "x"}]
    )
    assert message.startswith("system.0")


def test_more_than_four_cache_breakpoints_are_refused(sim: Simulator) -> None:
    marked = {"type": "ephemeral"}
    blocks = [{"type": "text", "text": f"part {i}", "cache_control": marked} for i in range(4)]
    message = refused(
        sim,
        system=[{"type": "text", "text": "sys", "cache_control": marked}],
        messages=[{"role": "user", "content": blocks}],
    )
    assert message == "A maximum of 4 blocks with cache_control may be provided. Found 5."


def test_four_cache_breakpoints_are_fine(sim: Simulator) -> None:
    marked = {"type": "ephemeral"}
    tools = [{**TOOLS[0], "cache_control": marked}]
    blocks = [{"type": "text", "text": f"part {i}", "cache_control": marked} for i in range(3)]
    send(sim, tools=tools, messages=[{"role": "user", "content": blocks}])
    assert sim.requests[-1].status == 200


def test_tool_blocks_without_tools_are_refused(sim: Simulator) -> None:
    message = refused(
        sim,
        tools=[],
        messages=[
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [use("t1")]},
            {"role": "user", "content": [result("t1")]},
        ],
    )
    assert message == "Requests which include `tool_use` or `tool_result` blocks must define tools."


def test_tool_use_without_result_in_the_next_message_is_refused(sim: Simulator) -> None:
    message = refused(
        sim,
        messages=[
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [use("toolu_A"), use("toolu_B")]},
            {"role": "user", "content": [result("toolu_A"), {"type": "text", "text": "hm"}]},
        ],
    )
    assert message == (
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_B. Each `tool_use` block must have a corresponding `tool_result` block in the "
        "next message."
    )


def test_tool_use_as_the_last_message_is_refused(sim: Simulator) -> None:
    message = refused(
        sim,
        messages=[{"role": "user", "content": "go"}, {"role": "assistant", "content": [use("t9")]}],
    )
    assert message.startswith("messages.1: `tool_use` ids were found without")


def test_result_for_an_unknown_tool_use_is_refused(sim: Simulator) -> None:
    message = refused(
        sim,
        messages=[
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [use("t1")]},
            {"role": "user", "content": [result("t1"), result("t2")]},
        ],
    )
    assert message == (
        "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: t2. "
        "Each `tool_result` block must have a corresponding `tool_use` block in the previous "
        "message."
    )


def test_duplicate_tool_use_ids_are_refused(sim: Simulator) -> None:
    message = refused(
        sim,
        messages=[
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [use("t1")]},
            {"role": "user", "content": [result("t1")]},
            {"role": "assistant", "content": [use("t1")]},
            {"role": "user", "content": [result("t1")]},
        ],
    )
    assert message == "messages.3.content.0: `tool_use` ids must be unique"


def test_tool_choice_types(sim: Simulator) -> None:
    hi = [{"role": "user", "content": "hi"}]
    for choice in (
        {"type": "auto"},
        {"type": "any"},
        {"type": "none"},
        {"type": "tool", "name": "read_file"},
    ):
        send(sim, tool_choice=choice, messages=hi)
    assert [r.status for r in sim.requests] == [200] * 4
    assert "tool_choice" in refused(sim, tool_choice={"type": "sometimes"}, messages=hi)


def test_prompt_over_the_window_gets_the_real_message() -> None:
    with Simulator(context_window=40) as small, pytest.raises(anthropic.BadRequestError) as caught:
        send(small, messages=[{"role": "user", "content": "word " * 100}])
    body = caught.value.body
    assert isinstance(body, dict)
    match = re.fullmatch(r"prompt is too long: (\d+) tokens > 40 maximum", body["error"]["message"])
    assert match is not None
    assert int(match.group(1)) == small.requests[0].prompt_tokens > 40


def test_a_valid_tool_exchange_passes(sim: Simulator) -> None:
    send(
        sim,
        messages=[
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}, use("t1")]},
            {"role": "user", "content": [result("t1"), {"type": "text", "text": "and?"}]},
        ],
    )
    assert sim.requests[-1].status == 200 and sim.requests[-1].error is None


# ---- OpenAI -------------------------------------------------------------------------------


def chat(sim: Simulator, **kwargs: Any) -> Any:
    client = _gpt(sim.openai_base_url)
    params: dict[str, Any] = {"model": "gpt-4.1", "tools": OPENAI_TOOLS}
    params.update(kwargs)
    return client.chat.completions.create(**params)


def chat_refused(sim: Simulator, **kwargs: Any) -> openai.BadRequestError:
    with pytest.raises(openai.BadRequestError) as caught:
        chat(sim, **kwargs)
    body = caught.value.body
    assert isinstance(body, dict) and set(body) == {"message", "type", "param", "code"}
    assert body["type"] == "invalid_request_error"
    return caught.value


def call(tool_id: str) -> dict[str, Any]:
    return {"id": tool_id, "type": "function", "function": {"name": "read_file", "arguments": "{}"}}


def test_tool_message_without_preceding_tool_calls_is_refused(sim: Simulator) -> None:
    error = chat_refused(
        sim,
        messages=[
            {"role": "user", "content": "go"},
            {"role": "tool", "tool_call_id": "call_1", "content": "x"},
        ],
    )
    body = error.body
    assert isinstance(body, dict) and body["message"] == (
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
        "with 'tool_calls'."
    )
    assert body["param"] == "messages.[1].role"


def test_tool_calls_without_every_response_are_refused(sim: Simulator) -> None:
    error = chat_refused(
        sim,
        messages=[
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call("call_1"), call("call_2")]},
            {"role": "tool", "tool_call_id": "call_1", "content": "x"},
            {"role": "user", "content": "next"},
        ],
    )
    body = error.body
    assert isinstance(body, dict)
    assert body["message"] == (
        "An assistant message with 'tool_calls' must be followed by tool messages responding to "
        "each 'tool_call_id'. The following tool_call_ids did not have response messages: call_2"
    )


def test_empty_messages_are_refused_by_openai(sim: Simulator) -> None:
    assert chat_refused(sim, messages=[]).code == "empty_array"


def test_context_length_exceeded_has_the_real_code_and_message() -> None:
    with Simulator(context_window=30) as small:
        error = chat_refused(small, messages=[{"role": "user", "content": "token " * 80}])
    tokens = small.requests[0].prompt_tokens
    assert error.code == "context_length_exceeded"
    body = error.body
    assert isinstance(body, dict) and body["message"] == (
        f"This model's maximum context length is 30 tokens. However, your messages resulted in "
        f"{tokens} tokens. Please reduce the length of the messages."
    )


def test_token_limits_and_tool_choices(sim: Simulator) -> None:
    hi = [{"role": "user", "content": "hi"}]
    chat(sim, messages=hi, max_tokens=5)
    chat(sim, messages=hi, max_completion_tokens=5)
    for choice in ("none", "auto", "required"):
        chat(sim, messages=hi, tool_choice=choice)
    assert [r.status for r in sim.requests] == [200] * 5
    assert chat_refused(sim, messages=hi, max_tokens=0).param == "max_tokens"
    assert chat_refused(sim, messages=hi, tool_choice="sometimes").param == "tool_choice"


def test_openai_assistant_with_null_content_and_answered_calls_passes() -> None:
    with Simulator(ScriptedPolicy([Reply("fine")])) as sim:
        answer = chat(
            sim,
            messages=[
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2")]},
                {"role": "tool", "tool_call_id": "c2", "content": "two"},
                {"role": "tool", "tool_call_id": "c1", "content": "one"},
            ],
        )
    assert answer.choices[0].message.content == "fine"
    conv = sim.requests[0].conversation
    assert conv is not None and [r.content for r in conv.last_tool_results()] == ["two", "one"]
