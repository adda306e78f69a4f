"""The OpenAI Chat Completions wire format: validation with the real messages, replies, SSE."""

from __future__ import annotations

import json
import time
from typing import Any

from mini_claude.simulator.tokens import TOOL_OVERHEAD, TokenCounter, canonical_json
from mini_claude.simulator.types import (
    SimBlock,
    SimConversation,
    SimMessage,
    TextPart,
    ToolResultPart,
    ToolUsePart,
    WireError,
)
from mini_claude.simulator.wire import (
    Completion,
    FramePlan,
    ParsedRequest,
    UnitBuilder,
    merge_same_role,
    split_arguments,
    split_text,
    wire_json,
)

ROLES = ("system", "developer", "user", "assistant", "tool", "function")
TOOL_CHOICES = ("none", "auto", "required")
FINISH_REASONS = {
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "stop_sequence": "stop",
}
RAW_ARGUMENTS_KEY = "_raw_arguments"

REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")


def _fail(message: str, *, param: str | None = None, code: str | None = None) -> WireError:
    return WireError(message, param=param, code=code)


def _content_text(content: Any, where: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise _fail(
            f"Invalid type for '{where}': expected one of a string or array of objects, "
            f"but got {type(content).__name__} instead.",
            param=where,
            code="invalid_type",
        )
    texts: list[str] = []
    for index, part in enumerate(content):
        if not isinstance(part, dict) or "type" not in part:
            raise _fail(
                f"Missing required parameter: '{where}[{index}].type'.",
                param=f"{where}[{index}].type",
                code="missing_required_parameter",
            )
        if part["type"] == "text":
            texts.append(str(part.get("text", "")))
        else:
            texts.append(canonical_json(part))
    return "\n".join(texts)


def _check_message(message: Any, index: int) -> None:
    where = f"messages.[{index}]"
    if not isinstance(message, dict):
        raise _fail(
            f"Invalid type for '{where}': expected an object.", param=where, code="invalid_type"
        )
    role = message.get("role")
    if role is None:
        raise _fail(
            f"Missing required parameter: '{where}.role'.",
            param=f"{where}.role",
            code="missing_required_parameter",
        )
    if role not in ROLES:
        raise _fail(
            f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', "
            "'function', 'tool', and 'developer'.",
            param=f"{where}.role",
            code="invalid_value",
        )
    content = message.get("content")
    if role in ("system", "developer", "user", "tool") and content is None:
        raise _fail(
            "Invalid value for 'content': expected a string, got null.",
            param=f"{where}.content",
        )
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise _fail(
            f"Missing required parameter: '{where}.tool_call_id'.",
            param=f"{where}.tool_call_id",
            code="missing_required_parameter",
        )
    calls = message.get("tool_calls")
    if role == "assistant" and calls is not None:
        if not isinstance(calls, list):
            raise _fail(f"Invalid type for '{where}.tool_calls'.", param=f"{where}.tool_calls")
        for c_index, call in enumerate(calls):
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(call, dict) or not isinstance(call.get("id"), str):
                raise _fail(
                    f"Missing required parameter: '{where}.tool_calls[{c_index}].id'.",
                    param=f"{where}.tool_calls[{c_index}].id",
                    code="missing_required_parameter",
                )
            if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                raise _fail(
                    f"Missing required parameter: '{where}.tool_calls[{c_index}].function'.",
                    param=f"{where}.tool_calls[{c_index}].function",
                    code="missing_required_parameter",
                )
    _content_text(content, f"{where}.content")


def _check_tool_pairing(messages: list[dict[str, Any]]) -> None:
    pending: set[str] = set()  # ids asked by the last assistant and not yet answered
    answering = False  # inside the run of tool messages that follows an assistant with calls
    for index, message in enumerate(messages):
        role = message["role"]
        if role == "tool":
            if not answering or message["tool_call_id"] not in pending:
                raise _fail(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    param=f"messages.[{index}].role",
                )
            pending.discard(message["tool_call_id"])
            continue
        if pending:
            raise _missing_responses(pending, index - 1)
        answering = False
        calls = message.get("tool_calls") if role == "assistant" else None
        if calls:
            pending = {c["id"] for c in calls}
            answering = True
    if pending:
        raise _missing_responses(pending, len(messages) - 1)


def _missing_responses(pending: set[str], index: int) -> WireError:
    return _fail(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to "
        "each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(sorted(pending)),
        param=f"messages.[{index}].role",
    )


def _check_limits(body: dict[str, Any]) -> int | None:
    limit: int | None = None
    for name in ("max_tokens", "max_completion_tokens"):
        value = body.get(name)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            raise _fail(
                f"Invalid type for '{name}': expected an integer, but got {type(value).__name__} "
                "instead.",
                param=name,
                code="invalid_type",
            )
        if value < 1:
            raise _fail(
                f"Invalid '{name}': integer below minimum value. Expected a value >= 1, but got "
                f"{value} instead.",
                param=name,
                code="integer_below_min_value",
            )
        limit = value
    return limit


def _check_tools(tools: Any) -> list[dict[str, Any]]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise _fail(
            "Invalid type for 'tools': expected an array.", param="tools", code="invalid_type"
        )
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise _fail(
                f"Missing required parameter: 'tools[{index}].function.name'.",
                param=f"tools[{index}].function.name",
                code="missing_required_parameter",
            )
    return list(tools)


def _check_tool_choice(choice: Any, has_tools: bool) -> bool:
    if choice is None:
        return False
    if not has_tools:
        raise _fail(
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
            "specified.",
            param="tool_choice",
        )
    if isinstance(choice, str):
        if choice not in TOOL_CHOICES:
            raise _fail(
                f"Invalid value: '{choice}'. Supported values are: 'none', 'auto', and 'required'.",
                param="tool_choice",
                code="invalid_value",
            )
        return choice == "none"
    function = choice.get("function") if isinstance(choice, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise _fail(
            "Missing required parameter: 'tool_choice.function.name'.",
            param="tool_choice.function.name",
            code="missing_required_parameter",
        )
    return False


def _parse_arguments(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments) if isinstance(arguments, str) else None
    except (ValueError, RecursionError):  # nested past Python's stack
        value = None
    return value if isinstance(value, dict) else {RAW_ARGUMENTS_KEY: str(arguments)}


def _sim_message(message: dict[str, Any]) -> SimMessage | None:
    role = message["role"]
    text = _content_text(message.get("content"), "content")
    if role == "tool":
        return SimMessage("user", [ToolResultPart(message["tool_call_id"], text)])
    if role == "user":
        return SimMessage("user", [TextPart(text)] if text else [])
    if role != "assistant":
        return None
    blocks: list[SimBlock] = [TextPart(text)] if text else []
    for call in message.get("tool_calls") or []:
        function = call["function"]
        blocks.append(
            ToolUsePart(call["id"], function["name"], _parse_arguments(function.get("arguments")))
        )
    return SimMessage("assistant", blocks)


def _units(
    counter: TokenCounter, tools: list[dict[str, Any]], messages: list[dict[str, Any]]
) -> UnitBuilder:
    builder = UnitBuilder(counter)
    for tool in tools:
        builder.add(tool, canonical_json(tool), label="tool", overhead=TOOL_OVERHEAD)
    for message in messages:
        role = message["role"]
        text = _content_text(message.get("content"), "content")
        pieces: list[tuple[Any, str]] = []
        if text or not message.get("tool_calls"):
            pieces.append(
                ({"content": message.get("content"), "id": message.get("tool_call_id")}, text)
            )
        for call in message.get("tool_calls") or []:
            function = call["function"]
            arguments = function.get("arguments")
            arguments_text = arguments if isinstance(arguments, str) else canonical_json(arguments)
            pieces.append((call, f"{function['name']} {arguments_text}"))
        for index, (piece, piece_text) in enumerate(pieces):
            builder.add_message_block(role, index == 0, piece, piece_text)
    return builder


def parse_request(body: Any, counter: TokenCounter) -> ParsedRequest:
    """Validate a Chat Completions request and build what the policy and the accounting need."""
    if not isinstance(body, dict):
        raise _fail("We could not parse the JSON body of your request.")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _fail("you must provide a model parameter")
    messages = body.get("messages")
    if messages is None:
        raise _fail(
            "Missing required parameter: 'messages'.",
            param="messages",
            code="missing_required_parameter",
        )
    if not isinstance(messages, list) or not messages:
        raise _fail(
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an "
            "empty array instead.",
            param="messages",
            code="empty_array",
        )
    for index, message in enumerate(messages):
        _check_message(message, index)
    _check_tool_pairing(messages)
    limit = _check_limits(body)
    tools = _check_tools(body.get("tools"))
    choice_none = _check_tool_choice(body.get("tool_choice"), has_tools=bool(tools))
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise _fail(
            "Invalid type for 'stream': expected a boolean.", param="stream", code="invalid_type"
        )
    options = body.get("stream_options")
    if options is not None and not stream:
        raise _fail(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            param="stream_options",
        )
    include_usage = bool(options.get("include_usage")) if isinstance(options, dict) else False
    builder = _units(counter, tools, messages)
    system = "\n\n".join(
        _content_text(m.get("content"), "content")
        for m in messages
        if m["role"] in ("system", "developer")
    )
    converted = [_sim_message(m) for m in messages]
    sim_messages = merge_same_role([m for m in converted if m is not None and m.blocks])
    functions = [t["function"] for t in tools]
    conversation = SimConversation(
        protocol="openai",
        model=model,
        system=system,
        messages=sim_messages,
        tool_names=[f["name"] for f in functions],
        tool_schemas={f["name"]: dict(f.get("parameters") or {}) for f in functions},
        tool_choice_none=choice_none,
        max_tokens=limit,
    )
    effort = body.get("reasoning_effort")
    if effort is not None and effort not in REASONING_EFFORTS:
        raise _fail(
            f"Invalid value: '{effort}'. Supported values are: "
            + ", ".join(f"'{e}'" for e in REASONING_EFFORTS) + ".",
            param="reasoning_effort",
            code="invalid_value",
        )
    return ParsedRequest(
        conversation, builder.units, stream, include_usage=include_usage, reasoning_effort=effort
    )


# ---- answers ---------------------------------------------------------------------------


def error_body(
    message: str, error_type: str, *, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}


def finish_reason(stop_reason: str) -> str:
    return FINISH_REASONS.get(stop_reason, stop_reason)


def _usage(completion: Completion) -> dict[str, Any] | None:
    usage = completion.usage
    if usage is None:
        return None
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.prompt_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": completion.reasoning_tokens, "audio_tokens": 0
        },
    }


def completion_json(completion: Completion) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": completion.text or None,
        "refusal": None,
    }
    if completion.calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in completion.calls
        ]
    body: dict[str, Any] = {
        "id": completion.message_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": completion.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish_reason(completion.stop_reason),
            }
        ],
    }
    usage = _usage(completion)
    if usage is not None:
        body["usage"] = usage
    return body


def data_frame(data: dict[str, Any] | str) -> bytes:
    payload = data if isinstance(data, str) else wire_json(data)
    return f"data: {payload}\n\n".encode()


def stream_error_frame(error_type: str, message: str) -> bytes:
    return data_frame(error_body(message, error_type))


def stream_plan(completion: Completion, include_usage: bool) -> FramePlan:
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        frame: dict[str, Any] = {
            "id": completion.message_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": completion.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage and completion.usage is not None:
            frame["usage"] = None
        return data_frame(frame)

    frames = [chunk({"role": "assistant", "content": "", "refusal": None})]
    after_some_text = len(frames)
    inside_tool_call: int | None = None
    deltas = split_text(completion.text)
    for n, piece in enumerate(deltas):
        frames.append(chunk({"content": piece}))
        if n == max(0, len(deltas) // 2 - 1):
            after_some_text = len(frames)
    for index, call in enumerate(completion.calls):
        head = {"index": index, "id": call.id, "type": "function"}
        frames.append(
            chunk({"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]})
        )
        for piece in split_arguments(call.arguments):
            frames.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            )
            if inside_tool_call is None:
                inside_tool_call = len(frames)
    frames.append(chunk({}, finish_reason(completion.stop_reason)))
    usage = _usage(completion)
    if include_usage and usage is not None:
        frames.append(
            data_frame(
                {
                    "id": completion.message_id,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": completion.model,
                    "choices": [],
                    "usage": usage,
                }
            )
        )
    frames.append(data_frame("[DONE]"))
    return FramePlan(frames, after_some_text, inside_tool_call)
