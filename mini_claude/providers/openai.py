"""The Chat Completions adapter, for OpenAI and every server that copies its API.

Compatible servers (Ollama, llama.cpp, vLLM, LM Studio, DeepSeek) differ in
small ways: no usage in the stream, no cached-token count, ``max_tokens``
instead of ``max_completion_tokens``, a tool call sent whole in one delta.
The adapter degrades gracefully on each.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mini_claude.conversation import (
    ImageBlock,
    Message,
    SummaryBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from mini_claude.model_facts import (
    LOOKUP_TIMEOUT_SECONDS,
    ModelFacts,
    facts_from_openai_list,
)
from mini_claude.models import provider_row, wire_model
from mini_claude.protocol import (
    BadRequest,
    ConnectionLost,
    MalformedResponse,
    ModelRequest,
    ModelTextDelta,
    ProviderError,
    ResponseComplete,
    StreamEvent,
    ToolSpec,
    ToolUseStarted,
    Usage,
)
from mini_claude.providers import PLACEHOLDER_KEY
from mini_claude.providers.arguments import parse_tool_input
from mini_claude.providers.errors import (
    ErrorContext,
    Failure,
    classify,
    connection_lost,
    timed_out,
    transport_failure,
)
from mini_claude.providers.redact import clean_message

if TYPE_CHECKING:
    from openai import APIError, AsyncOpenAI
    from openai.types import CompletionUsage
    from openai.types.chat import ChatCompletionChunk

    from mini_claude.settings import Settings

STOP_REASONS: dict[str, str] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}


# ---- request building (pure) -------------------------------------------------------


def build_request(request: ModelRequest, *, legacy_max_tokens: bool = False) -> dict[str, Any]:
    """The ``chat.completions.create`` keyword arguments for a neutral request."""
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for message in request.messages:
        messages.extend(wire_messages(message))
    body: dict[str, Any] = {
        "model": wire_model(request.model),
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
        ("max_tokens" if legacy_max_tokens else "max_completion_tokens"): request.max_tokens,
    }
    if request.tools:
        body["tools"] = [wire_tool(t) for t in request.tools]
        if not request.allow_tool_use:
            body["tool_choice"] = "none"
    if request.thinking is not None and request.thinking.effort:
        body["reasoning_effort"] = request.thinking.effort  # reasoning models; no temperature
    return body


def wire_messages(message: Message) -> list[dict[str, Any]]:
    """One neutral message becomes one or more chat messages.

    A user message that carries tool results becomes one ``tool`` message per
    result (they must follow the assistant's calls directly), then a user
    message for any text beside them.
    """
    if message.role == "assistant":
        return [_assistant_message(message)]
    wire: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": b.tool_use_id, "content": b.content}
        for b in message.blocks
        if isinstance(b, ToolResultBlock)
    ]
    text = _joined_text(message)
    images = [b for b in message.blocks if isinstance(b, ImageBlock)]
    if images:
        # Tool messages carry text only: a tool's images follow in a user message.
        parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        parts.extend(image_part(image) for image in images)
        wire.append({"role": "user", "content": parts})
    elif text or not wire:
        wire.append({"role": "user", "content": text})
    return wire


def image_part(image: ImageBlock) -> dict[str, Any]:
    """An image as a data URL (the Chat Completions ``image_url`` part)."""
    url = f"data:{image.media_type};base64,{image.data}"
    return {"type": "image_url", "image_url": {"url": url}}


def _assistant_message(message: Message) -> dict[str, Any]:
    text = _joined_text(message)
    wire: dict[str, Any] = {"role": "assistant", "content": text or None}
    calls = [
        {
            "id": use.id,
            "type": "function",
            "function": {"name": use.name, "arguments": json.dumps(use.input, ensure_ascii=False)},
        }
        for use in message.blocks
        if isinstance(use, ToolUseBlock)
    ]
    if calls:
        wire["tool_calls"] = calls
    return wire


def _joined_text(message: Message) -> str:
    parts: list[str] = []
    for block in message.blocks:
        if isinstance(block, TextBlock) and block.text.strip():
            parts.append(block.text)
        elif isinstance(block, SummaryBlock):
            parts.append(block.render())
    return "\n\n".join(parts)


def wire_tool(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.input_schema,
        },
    }


# ---- reply assembly ----------------------------------------------------------------


@dataclass
class _CallInProgress:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    announced: bool = False


@dataclass
class ChunkAssembler:
    """Folds chunks into deltas for the UI and the final message.

    Tool-call deltas are keyed by ``index``; the id and name normally arrive
    only in a call's first delta, but some servers repeat them, so a repeated
    value is not appended again.
    """

    text: list[str] = field(default_factory=list)
    calls: dict[int, _CallInProgress] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage | None = None

    def feed(self, chunk: ChatCompletionChunk) -> Iterator[StreamEvent]:
        if chunk.usage is not None:
            self.usage = usage_of(chunk.usage)
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            delta = choice.delta
            if delta.content:
                self.text.append(delta.content)
                yield ModelTextDelta(delta.content)
            for call_delta in delta.tool_calls or ():
                call = self.calls.setdefault(call_delta.index, _CallInProgress())
                if call_delta.id and not call.id:
                    call.id = call_delta.id
                function = call_delta.function
                if function is not None:
                    if function.name and function.name != call.name:
                        call.name += function.name
                    if function.arguments:
                        call.arguments.append(function.arguments)
                if call.name and not call.announced:
                    call.id = call.id or _fresh_call_id()
                    call.announced = True
                    yield ToolUseStarted(call.id, call.name)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason

    def complete(self) -> ResponseComplete:
        if self.finish_reason is None:
            raise ConnectionLost("the reply stream ended before the message was complete")
        blocks: list[TextBlock | ToolUseBlock] = []
        text = "".join(self.text)
        if text.strip() or (text and not self.calls):
            blocks.append(TextBlock(text))
        for index in sorted(self.calls):
            call = self.calls[index]
            if not call.name:
                continue
            blocks.append(
                ToolUseBlock(
                    call.id or _fresh_call_id(), call.name, parse_tool_input(call.arguments)
                )
            )
        message = Message("assistant", list(blocks))
        stop = STOP_REASONS.get(self.finish_reason, self.finish_reason)
        if stop == "end_turn" and message.tool_uses:
            stop = "tool_use"  # some servers say "stop" after a tool call
        return ResponseComplete(message, stop, self.usage)


def usage_of(usage: CompletionUsage) -> Usage:
    """``prompt_tokens`` includes the cached part; split it out."""
    details = usage.prompt_tokens_details
    cached = (details.cached_tokens or 0) if details is not None else 0
    written = (details.cache_write_tokens or 0) if details is not None else 0
    output = usage.completion_tokens_details
    reasoning = (output.reasoning_tokens or 0) if output is not None else 0
    return Usage(
        input_tokens=max(0, usage.prompt_tokens - cached - written),
        cache_read_tokens=cached,
        cache_write_tokens=written,
        output_tokens=usage.completion_tokens,  # reasoning tokens included, billed as output
        thinking_tokens=reasoning,
    )


def _fresh_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


# ---- the adapter -------------------------------------------------------------------


class OpenAIProvider:
    """Streams Chat Completions replies through ``openai.AsyncOpenAI``."""

    name = "openai"

    def __init__(self, *, api_key: str, base_url: str | None, timeout_seconds: float,
                 key_variable: str = "OPENAI_API_KEY",
                 base_url_variable: str = "OPENAI_BASE_URL") -> None:
        self._api_key = api_key
        self._base_url = base_url
        self._timeout_seconds = timeout_seconds
        self._sdk_client: AsyncOpenAI | None = None
        # Learned from a 400: this server wants the older ``max_tokens``.
        self.legacy_max_tokens = False
        self._errors = ErrorContext(
            key_variable=key_variable,
            base_url_variable=base_url_variable,
            secrets=(api_key,) if api_key != PLACEHOLDER_KEY else (),
            base_url=base_url,
            timeout_seconds=timeout_seconds,
        )

    def _client(self) -> AsyncOpenAI:
        if self._sdk_client is None:
            import openai

            self._sdk_client = openai.AsyncOpenAI(
                api_key=self._api_key,
                base_url=self._base_url,
                max_retries=0,
                timeout=self._timeout_seconds,
            )
        return self._sdk_client

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        reply = ChunkAssembler()
        try:
            chunks = await self._open(request)
            async with chunks:
                async for chunk in chunks:
                    for out in reply.feed(chunk):
                        yield out
        except ProviderError:
            raise
        except Exception as exc:
            raise self.map_error(exc) from None
        yield reply.complete()

    async def _open(self, request: ModelRequest) -> Any:
        """Start the stream, switching to ``max_tokens`` once if the server asks for it."""
        body = build_request(request, legacy_max_tokens=self.legacy_max_tokens)
        try:
            return await self._client().chat.completions.create(**body)
        except Exception as exc:
            error = self.map_error(exc)
            if self.legacy_max_tokens or not _rejects_max_completion_tokens(error):
                raise error from None
        self.legacy_max_tokens = True
        body = build_request(request, legacy_max_tokens=True)
        try:
            return await self._client().chat.completions.create(**body)
        except Exception as exc:
            raise self.map_error(exc) from None

    def map_error(self, exc: Exception) -> ProviderError:
        """One of our error types for any failure the SDK or the transport raised."""
        import openai

        if isinstance(exc, openai.APITimeoutError):
            return timed_out(self._errors)
        if isinstance(exc, openai.APIConnectionError):
            return connection_lost(exc, self._errors)
        if isinstance(exc, openai.APIResponseValidationError):
            detail = clean_message(str(exc), self._errors.secrets)
            return MalformedResponse(f"the API sent a reply we could not read: {detail}")
        if isinstance(exc, openai.APIError):
            return classify(_failure_of(exc), self._errors)
        transport = transport_failure(exc, self._errors)
        if transport is not None:
            return transport
        if isinstance(exc, ValueError):
            detail = clean_message(str(exc), self._errors.secrets)
            return MalformedResponse(f"the API sent a reply we could not read: {detail}")
        detail = clean_message(f"{type(exc).__name__}: {exc}", self._errors.secrets)
        return ProviderError(f"the API call failed: {detail}")

    async def close(self) -> None:
        if self._sdk_client is not None:
            await self._sdk_client.close()
            self._sdk_client = None


def _failure_of(exc: APIError) -> Failure:
    """Facts from an ``APIError``; one without a response was an error inside the stream."""
    import openai

    body = exc.body if isinstance(exc.body, dict) else {}
    message = body.get("message")
    kinds = tuple(k for k in (exc.type, exc.code) if k)
    text = message if isinstance(message, str) else exc.message
    if isinstance(exc, openai.APIStatusError):
        return Failure(exc.status_code, kinds, text, exc.response.headers)
    return Failure(None, kinds, text)


def _rejects_max_completion_tokens(error: ProviderError) -> bool:
    return isinstance(error, BadRequest) and "max_completion_tokens" in error.message


def from_settings(settings: Settings, api_key: str, timeout_seconds: float) -> OpenAIProvider:
    """The factory its row in ``models.PROVIDERS`` names; an error names the variables of
    the provider chosen (any OpenAI-compatible one's row may name this factory)."""
    row = provider_row(settings.provider)
    return OpenAIProvider(api_key=api_key, base_url=settings.base_url,
                          timeout_seconds=timeout_seconds, key_variable=row.key_variable,
                          base_url_variable=row.base_url_variable)


def model_facts(settings: Settings, api_key: str, now: float) -> ModelFacts | None:
    """``GET /v1/models``: the configured model's entry, with a window when the server
    reports one (vLLM, llama.cpp)."""
    import openai

    client = openai.OpenAI(api_key=api_key, base_url=settings.base_url, max_retries=0,
                           timeout=LOOKUP_TIMEOUT_SECONDS)
    with client:
        entries = [m.model_dump(mode="json") for m in client.models.list().data]
    return facts_from_openai_list(entries, settings.model, now)
