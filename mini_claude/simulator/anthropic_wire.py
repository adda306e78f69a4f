"""The Anthropic Messages wire format: validation as strict as the real API, replies, SSE."""

from __future__ import annotations

import json
from typing import Any

from mini_claude.simulator.diagnostics import fingerprint, previous_id_of
from mini_claude.simulator.thinking import PrefixChain, check_thinking, thinking_mode
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

MAX_CACHE_BREAKPOINTS = 4
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
TOOL_CHOICES = ("auto", "any", "tool", "none")
OPAQUE_BLOCK_TYPES = {
    "image",
    "document",
    "thinking",
    "redacted_thinking",
    "search_result",
    "server_tool_use",
    "web_search_tool_result",
}
NON_EMPTY_CONTENT = (
    "all messages must have non-empty content except for the optional final assistant message"
)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise WireError(message)


def _ttl_of(where: str, holder: dict[str, Any]) -> float | None:
    control = holder.get("cache_control")
    if control is None:
        return None
    _require(
        isinstance(control, dict), f"{where}.cache_control: Input should be a valid dictionary"
    )
    _require(
        control.get("type") == "ephemeral",
        f"{where}.cache_control.type: Input should be 'ephemeral'",
    )
    ttl = control.get("ttl", "5m")
    _require(ttl in TTL_SECONDS, f"{where}.cache_control.ttl: Input should be '5m' or '1h'")
    return TTL_SECONDS[ttl]


def _strip_control(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


def _result_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for item in content:
        if isinstance(item, dict) and item.get("type") == "text":
            parts.append(str(item.get("text", "")))
        else:
            parts.append(canonical_json(item))
    return "\n".join(parts)


def _check_text(text: Any, where: str) -> None:
    _require(isinstance(text, str), f"{where}.text: Input should be a valid string")
    _require(text != "", "messages: text content blocks must be non-empty")
    _require(text.strip() != "", "messages: text content blocks must contain non-whitespace text")


def _check_block(block: Any, where: str) -> None:
    _require(isinstance(block, dict), f"{where}: Input should be a valid dictionary")
    kind = block.get("type")
    if kind == "text":
        _check_text(block.get("text"), where)
    elif kind == "tool_use":
        _require(isinstance(block.get("id"), str), f"{where}.id: Field required")
        _require(isinstance(block.get("name"), str), f"{where}.name: Field required")
        _require(
            isinstance(block.get("input"), dict),
            f"{where}.input: Input should be a valid dictionary",
        )
    elif kind == "tool_result":
        _require(isinstance(block.get("tool_use_id"), str), f"{where}.tool_use_id: Field required")
        content = block.get("content")
        _require(
            content is None or isinstance(content, str | list),
            f"{where}.content: Input should be a valid string or list",
        )
        if isinstance(content, list):
            for index, item in enumerate(content):
                _require(
                    isinstance(item, dict),
                    f"{where}.content.{index}: Input should be a valid dictionary",
                )
                if item.get("type") == "text":
                    _check_text(item.get("text"), f"{where}.content.{index}")
    elif kind not in OPAQUE_BLOCK_TYPES:
        raise WireError(
            f"{where}: Input tag '{kind}' found using 'type' does not match any of the "
            "expected tags"
        )


def _normalize_messages(raw: Any) -> list[dict[str, Any]]:
    """Check each message and return them with content as a list of blocks."""
    _require(raw is not None, "messages: Field required")
    _require(isinstance(raw, list), "messages: Input should be a valid list")
    _require(len(raw) > 0, "messages: at least one message is required")
    normalized: list[dict[str, Any]] = []
    last = len(raw) - 1
    for index, message in enumerate(raw):
        where = f"messages.{index}"
        _require(isinstance(message, dict), f"{where}: Input should be a valid dictionary")
        role = message.get("role")
        _require(
            role in ("user", "assistant"), f"{where}.role: Input should be 'user' or 'assistant'"
        )
        content = message.get("content")
        _require(content is not None, f"{where}.content: Field required")
        if isinstance(content, str):
            final_assistant = index == last and role == "assistant"
            _require(content != "" or final_assistant, f"{where}: {NON_EMPTY_CONTENT}")
            blocks = [{"type": "text", "text": content}] if content else []
            if content:
                _check_text(content, where)
        else:
            _require(isinstance(content, list), f"{where}.content: Input should be a valid list")
            final_assistant = index == last and role == "assistant"
            _require(bool(content) or final_assistant, f"{where}: {NON_EMPTY_CONTENT}")
            for block_index, block in enumerate(content):
                _check_block(block, f"{where}.content.{block_index}")
            blocks = list(content)
        normalized.append({"role": role, "content": blocks})
    return normalized


def _merge(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    merged: list[dict[str, Any]] = []
    for message in messages:
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1] = {
                "role": message["role"],
                "content": merged[-1]["content"] + message["content"],
            }
        else:
            merged.append(message)
    return merged


def _tool_use_ids(message: dict[str, Any] | None) -> list[str]:
    if message is None or message["role"] != "assistant":
        return []
    return [b["id"] for b in message["content"] if b.get("type") == "tool_use"]


def _check_results_answer(messages: list[dict[str, Any]], index: int) -> None:
    """Every tool_result answers a tool_use of the message just before."""
    asked = set(_tool_use_ids(messages[index - 1] if index > 0 else None))
    for block_index, block in enumerate(messages[index]["content"]):
        if block.get("type") == "tool_result" and block["tool_use_id"] not in asked:
            raise WireError(
                f"messages.{index}.content.{block_index}: unexpected `tool_use_id` found in "
                f"`tool_result` blocks: {block['tool_use_id']}. Each `tool_result` block must "
                "have a corresponding `tool_use` block in the previous message."
            )


def _check_uses_answered(messages: list[dict[str, Any]], index: int, seen: set[str]) -> None:
    """Tool_use ids are unique, and each is answered in the very next message."""
    for block_index, block in enumerate(messages[index]["content"]):
        if block.get("type") == "tool_use":
            if block["id"] in seen:
                raise WireError(
                    f"messages.{index}.content.{block_index}: `tool_use` ids must be unique"
                )
            seen.add(block["id"])
    following = messages[index + 1] if index + 1 < len(messages) else None
    answered = (
        {b["tool_use_id"] for b in following["content"] if b.get("type") == "tool_result"}
        if following is not None
        else set()
    )
    missing = [u for u in _tool_use_ids(messages[index]) if u not in answered]
    if missing:
        raise WireError(
            f"messages.{index}: `tool_use` ids were found without `tool_result` blocks "
            f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
            "corresponding `tool_result` block in the next message."
        )


def _check_tool_pairing(messages: list[dict[str, Any]], has_tools: bool) -> None:
    seen_ids: set[str] = set()
    for index, message in enumerate(messages):
        kinds = {b.get("type") for b in message["content"]}
        if kinds & {"tool_use", "tool_result"} and not has_tools:
            raise WireError(
                "Requests which include `tool_use` or `tool_result` blocks must define tools."
            )
        if message["role"] == "user":
            _check_results_answer(messages, index)
        else:
            _check_uses_answered(messages, index, seen_ids)


def _system_blocks(system: Any) -> list[dict[str, Any]]:
    if system is None:
        return []
    if isinstance(system, str):
        return [{"type": "text", "text": system}] if system else []
    _require(isinstance(system, list), "system: Input should be a valid string or list")
    for index, block in enumerate(system):
        _require(
            isinstance(block, dict) and block.get("type") == "text",
            f"system.{index}: Input should be a text block",
        )
        _check_text(block.get("text"), f"system.{index}")
    return list(system)


def _check_tools(tools: Any) -> list[dict[str, Any]]:
    if tools is None:
        return []
    _require(isinstance(tools, list), "tools: Input should be a valid list")
    for index, tool in enumerate(tools):
        _require(isinstance(tool, dict), f"tools.{index}: Input should be a valid dictionary")
        if tool.get("type") not in (None, "custom"):
            continue  # a server tool: opaque here
        name = tool.get("name")
        _require(isinstance(name, str) and bool(name), f"tools.{index}.name: Field required")
        _require(
            isinstance(tool.get("input_schema"), dict),
            f"tools.{index}.input_schema: Field required",
        )
    return list(tools)


def _check_tool_choice(choice: Any) -> bool:
    """Validate ``tool_choice``; True when it forbids tool use."""
    if choice is None:
        return False
    _require(isinstance(choice, dict), "tool_choice: Input should be a valid dictionary")
    kind = choice.get("type")
    if kind not in TOOL_CHOICES:
        raise WireError(
            f"tool_choice: Input tag '{kind}' found using 'type' does not match any of the "
            "expected tags: 'auto', 'any', 'tool', 'none'"
        )
    if kind == "tool":
        _require(isinstance(choice.get("name"), str), "tool_choice.tool.name: Field required")
    return bool(kind == "none")


def _count_breakpoints(
    tools: list[dict[str, Any]], system: list[dict[str, Any]], messages: list[dict[str, Any]]
) -> int:
    count = sum(1 for t in tools if "cache_control" in t)
    count += sum(1 for b in system if "cache_control" in b)
    for message in messages:
        for block in message["content"]:
            if "cache_control" in block:
                count += 1
            inner = block.get("content")
            if isinstance(inner, list):
                count += sum(1 for i in inner if isinstance(i, dict) and "cache_control" in i)
    return count


def _block_text(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block["text"])
    if kind == "tool_use":
        return f"{block['name']} {canonical_json(block['input'])}"
    if kind == "tool_result":
        return _result_text(block.get("content"))
    return canonical_json(_strip_control(block))


def _units(
    counter: TokenCounter,
    tools: list[dict[str, Any]],
    system: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    top_level_ttl: float | None,
) -> UnitBuilder:
    builder = UnitBuilder(counter)
    for index, tool in enumerate(tools):
        piece = _strip_control(tool)
        ttl = _ttl_of(f"tools.{index}", tool)
        builder.add(piece, canonical_json(piece), label="tool", overhead=TOOL_OVERHEAD, ttl=ttl)
    for index, block in enumerate(system):
        builder.add(
            block["text"], block["text"], label="system", ttl=_ttl_of(f"system.{index}", block)
        )
    for m_index, message in enumerate(messages):
        for b_index, block in enumerate(message["content"]):
            ttl = _ttl_of(f"messages.{m_index}.content.{b_index}", block)
            nested = block.get("content")
            if isinstance(nested, list) and ttl is None:
                ttls = [_ttl_of("content", i) for i in nested if isinstance(i, dict)]
                ttl = next((t for t in ttls if t is not None), None)
            piece = _strip_control(block)
            builder.add_message_block(message["role"], b_index == 0, piece, _block_text(block), ttl)
        if not message["content"]:
            builder.add_message_block(message["role"], True, "", "")
    if top_level_ttl is not None and builder.units:
        last = builder.units[-1]
        builder.units[-1] = type(last)(last.key, last.tokens, top_level_ttl)
    return builder


def _to_sim_blocks(blocks: list[dict[str, Any]]) -> list[SimBlock]:
    parts: list[SimBlock] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            parts.append(TextPart(block["text"]))
        elif kind == "tool_use":
            parts.append(ToolUsePart(block["id"], block["name"], dict(block["input"])))
        elif kind == "tool_result":
            parts.append(
                ToolResultPart(
                    block["tool_use_id"],
                    _result_text(block.get("content")),
                    bool(block.get("is_error", False)),
                )
            )
    return parts


def parse_request(body: Any, counter: TokenCounter) -> ParsedRequest:
    """Validate a Messages request and build what the policy and the accounting need."""
    _require(isinstance(body, dict), "Request body must be a JSON object")
    model = body.get("model")
    _require(model is not None, "model: Field required")
    _require(isinstance(model, str), "model: Input should be a valid string")
    max_tokens = body.get("max_tokens")
    _require(max_tokens is not None, "max_tokens: Field required")
    _require(
        isinstance(max_tokens, int) and not isinstance(max_tokens, bool),
        "max_tokens: Input should be a valid integer",
    )
    _require(max_tokens >= 1, "max_tokens: Input should be greater than or equal to 1")
    messages = _normalize_messages(body.get("messages"))
    system = _system_blocks(body.get("system"))
    tools = _check_tools(body.get("tools"))
    choice_none = _check_tool_choice(body.get("tool_choice"))
    top_level = body.get("cache_control")
    top_level_ttl = _ttl_of("body", body) if top_level is not None else None
    found = _count_breakpoints(tools, system, messages) + (1 if top_level is not None else 0)
    if found > MAX_CACHE_BREAKPOINTS:
        raise WireError(
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {found}."
        )
    merged = _merge(messages)
    _check_tool_pairing(merged, has_tools=bool(tools))
    stream = body.get("stream", False)
    _require(isinstance(stream, bool), "stream: Input should be a valid boolean")
    builder = _units(counter, tools, system, merged, top_level_ttl)
    sim_messages = merge_same_role(
        [SimMessage(m["role"], _to_sim_blocks(m["content"])) for m in merged]
    )
    custom_tools = [t for t in tools if t.get("type") in (None, "custom")]
    conversation = SimConversation(
        protocol="anthropic",
        model=model,
        system="\n\n".join(b["text"] for b in system),
        messages=sim_messages,
        tool_names=[t["name"] for t in custom_tools],
        tool_schemas={t["name"]: dict(t["input_schema"]) for t in custom_tools},
        tool_choice_none=choice_none,
        max_tokens=max_tokens,
    )
    previous_id_of(body)  # a malformed ``diagnostics`` is a 400, as on the real API
    prefix = fingerprint(body, tools, system, merged, builder.units)
    mode = thinking_mode(body)
    chain = PrefixChain(system, tools, merged)
    check_thinking(mode, chain, merged, body.get("tool_choice"))
    return ParsedRequest(
        conversation, builder.units, stream, prefix=prefix, thinking=mode,
        thinking_prefix=chain.before(len(merged), []),
    )


# ---- answers ---------------------------------------------------------------------------


def error_body(error_type: str, message: str, request_id: str) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": error_type, "message": message},
        "request_id": request_id,
    }


def _usage(completion: Completion) -> dict[str, int]:
    usage = completion.usage
    if usage is None:
        return {"input_tokens": 0, "output_tokens": 0}
    return {
        "input_tokens": usage.uncached_input,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "output_tokens": usage.output_tokens,
    }


def _content(completion: Completion, raw_inputs: bool) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    if completion.thinking is not None:
        content.append(dict(completion.thinking))
    if completion.text or completion.empty_text_block:
        content.append({"type": "text", "text": completion.text})
    for call in completion.calls:
        tool_input: Any = call.input
        if raw_inputs:
            try:
                tool_input = json.loads(call.arguments)
            except (ValueError, RecursionError):  # nested past Python's stack
                tool_input = call.arguments
        content.append({"type": "tool_use", "id": call.id, "name": call.name, "input": tool_input})
    return content


def message_json(completion: Completion) -> dict[str, Any]:
    body = {
        "id": completion.message_id,
        "type": "message",
        "role": "assistant",
        "model": completion.model,
        "content": _content(completion, raw_inputs=True),
        "stop_reason": completion.stop_reason,
        "stop_sequence": None,
        "usage": _usage(completion),
    }
    if completion.diagnostics is not None:
        body["diagnostics"] = completion.diagnostics
    return body


def sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {wire_json(data)}\n\n".encode()


def stream_error_frame(error_type: str, message: str, request_id: str) -> bytes:
    return sse("error", error_body(error_type, message, request_id))


def stream_plan(completion: Completion) -> FramePlan:
    start_usage = dict(_usage(completion))
    start_usage["output_tokens"] = 1
    start = {
        "type": "message_start",
        "message": {
            "id": completion.message_id,
            "type": "message",
            "role": "assistant",
            "model": completion.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": start_usage,
        },
    }
    if completion.diagnostics is not None:
        start["message"]["diagnostics"] = completion.diagnostics  # type: ignore[index]
    frames = [sse("message_start", start), sse("ping", {"type": "ping"})]
    after_some_text = len(frames)
    inside_tool_call: int | None = None
    index = 0
    if completion.thinking is not None:
        frames.extend(_thinking_frames(index, completion.thinking))
        after_some_text = len(frames)
        index += 1
    if completion.text or completion.empty_text_block:
        frames.append(_block_start(index, {"type": "text", "text": ""}))
        deltas = split_text(completion.text)
        for n, piece in enumerate(deltas):
            frames.append(_delta(index, {"type": "text_delta", "text": piece}))
            if n == max(0, len(deltas) // 2 - 1):
                after_some_text = len(frames)
        frames.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    for call in completion.calls:
        frames.append(
            _block_start(index, {"type": "tool_use", "id": call.id, "name": call.name, "input": {}})
        )
        for piece in split_arguments(call.arguments):
            frames.append(_delta(index, {"type": "input_json_delta", "partial_json": piece}))
            if inside_tool_call is None:
                inside_tool_call = len(frames)
        frames.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    frames.append(
        sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": completion.stop_reason, "stop_sequence": None},
                "usage": _usage(completion),
            },
        )
    )
    frames.append(sse("message_stop", {"type": "message_stop"}))
    return FramePlan(frames, after_some_text, inside_tool_call)


def _thinking_frames(index: int, block: dict[str, Any]) -> list[bytes]:
    """A thinking block streams its text, then its signature just before it stops."""
    stop = sse("content_block_stop", {"type": "content_block_stop", "index": index})
    if block["type"] == "redacted_thinking":
        return [_block_start(index, block), stop]
    frames = [_block_start(index, {"type": "thinking", "thinking": "", "signature": ""})]
    for piece in split_text(block["thinking"]):
        frames.append(_delta(index, {"type": "thinking_delta", "thinking": piece}))
    frames.append(_delta(index, {"type": "signature_delta", "signature": block["signature"]}))
    frames.append(stop)
    return frames


def _block_start(index: int, block: dict[str, Any]) -> bytes:
    return sse(
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": block},
    )


def _delta(index: int, delta: dict[str, Any]) -> bytes:
    return sse(
        "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    )
