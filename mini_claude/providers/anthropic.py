"""The Anthropic Messages adapter: neutral conversation in, stream events out.

The SDK is imported on first use (it costs over a second), and every SDK or
transport failure leaves as one of the error types in ``protocol.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mini_claude.conversation import (
    Block,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from mini_claude.model_facts import (
    LOOKUP_TIMEOUT_SECONDS,
    ModelFacts,
    facts_from_anthropic,
)
from mini_claude.models import provider_row, wire_model
from mini_claude.protocol import (
    CacheMiss,
    ConnectionLost,
    MalformedResponse,
    ModelRequest,
    ModelTextDelta,
    ModelThinking,
    ProviderError,
    ResponseComplete,
    StreamEvent,
    ToolSpec,
    ToolUseStarted,
    Usage,
)
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
    from anthropic import APIStatusError, AsyncAnthropic
    from anthropic.types import Diagnostics, RawMessageStreamEvent
    from anthropic.types.raw_content_block_start_event import ContentBlock

    from mini_claude.settings import Settings

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4


# ---- request building (pure) -------------------------------------------------------


def build_request(request: ModelRequest) -> dict[str, Any]:
    """The ``messages.create`` keyword arguments for a neutral request."""
    anchor: dict[str, Any] | None = None
    messages: list[dict[str, Any]] = []
    for role, blocks in merge_roles(request.messages):
        content = [wire_block(b) for b in blocks]
        for block, wired in zip(blocks, content, strict=True):
            if block is request.cache_anchor:
                anchor = wired
        messages.append({"role": role, "content": content})
    body: dict[str, Any] = {
        "model": wire_model(request.model),
        "max_tokens": request.max_tokens,
        "messages": messages,
        "stream": True,
    }
    if request.system:
        body["system"] = [{"type": "text", "text": request.system}]
    if request.tools:
        body["tools"] = [wire_tool(t) for t in request.tools]
        if not request.allow_tool_use:
            # Tools stay defined so the cached prefix is byte-identical.
            body["tool_choice"] = {"type": "none"}
    if request.thinking is not None:
        thinking = request.thinking
        if thinking.adaptive:
            body["thinking"] = {"type": "adaptive"}
        elif thinking.budget_tokens:
            body["thinking"] = {"type": "enabled", "budget_tokens": thinking.budget_tokens}
        if thinking.effort:
            body["output_config"] = {"effort": thinking.effort}
    if request.cache:
        place_cache_breakpoints(body, anchor)
    return body


def merge_roles(messages: Sequence[Message]) -> list[tuple[Role, list[Block]]]:
    """Join consecutive same-role messages; the API wants roles to alternate.

    Inside a merged message tool results go first, as the API requires them
    to open the message that answers a tool_use.
    """
    merged: list[tuple[Role, list[Block]]] = []
    for message in messages:
        if merged and merged[-1][0] == message.role:
            merged[-1][1].extend(message.blocks)
        else:
            merged.append((message.role, list(message.blocks)))
    return [(role, _results_first(_drop_blank_text(blocks))) for role, blocks in merged]


def _results_first(blocks: list[Block]) -> list[Block]:
    results = [b for b in blocks if isinstance(b, ToolResultBlock)]
    others = [b for b in blocks if not isinstance(b, ToolResultBlock)]
    return results + others


def _drop_blank_text(blocks: list[Block]) -> list[Block]:
    """The API rejects whitespace-only text blocks; keep one only if nothing else is left."""
    kept = [b for b in blocks if not (isinstance(b, TextBlock) and not b.text.strip())]
    return kept or blocks


def wire_block(block: Block) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if isinstance(block, ToolResultBlock):
        return {
            "type": "tool_result",
            "tool_use_id": block.tool_use_id,
            "content": block.content,
            "is_error": block.is_error,
        }
    if isinstance(block, ThinkingBlock):
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if isinstance(block, RedactedThinkingBlock):
        return {"type": "redacted_thinking", "data": block.data}
    if isinstance(block, ImageBlock):
        source = {"type": "base64", "media_type": block.media_type, "data": block.data}
        return {"type": "image", "source": source}
    return {"type": "text", "text": block.render()}


def wire_tool(tool: ToolSpec) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}


def place_cache_breakpoints(body: dict[str, Any], anchor: dict[str, Any] | None = None) -> None:
    """Mark the prefix ends worth caching: system, the anchor, the previous tail, the tail.

    The breakpoint on the second-to-last user message sits where the previous
    request ended, so that request's cache write is read even when the newest
    messages differ. The anchor (the newest fold block or the summary) is the
    prefix a request after an edit of old results can still read. Past four
    marks the tools' own goes first: the system's covers them as long as the
    system prompt does not change.
    """
    messages: list[dict[str, Any]] = body["messages"]
    user_turns = [m for m in messages[:-1] if m["role"] == "user" and m["content"]]
    marks: list[dict[str, Any]] = []
    if body.get("tools"):
        marks.append(body["tools"][-1])
    if body.get("system"):
        marks.append(body["system"][-1])
    if anchor is not None:
        marks.append(anchor)
    if user_turns:
        marks.append(user_turns[-1]["content"][-1])
    if messages and messages[-1]["content"]:
        marks.append(messages[-1]["content"][-1])
    for block in _distinct(marks)[-MAX_BREAKPOINTS:]:
        block["cache_control"] = dict(EPHEMERAL)


def _distinct(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[int] = set()
    out: list[dict[str, Any]] = []
    for block in blocks:
        if id(block) not in seen:
            seen.add(id(block))
            out.append(block)
    return out


# ---- reply assembly ----------------------------------------------------------------


@dataclass
class _OpenBlock:
    """A content block still streaming: text, a tool call, or something we skip."""

    kind: str
    parts: list[str] = field(default_factory=list)
    id: str = ""
    name: str = ""
    signature: str = ""


@dataclass
class ReplyAssembler:
    """Folds raw stream events into deltas for the UI and the final message."""

    open_blocks: dict[int, _OpenBlock] = field(default_factory=dict)
    done: dict[int, Block] = field(default_factory=dict)
    usage: Usage | None = None
    stop_reason: str | None = None
    finished: bool = False
    message_id: str | None = None
    cache_miss: CacheMiss | None = None

    def feed(self, event: RawMessageStreamEvent) -> Iterator[StreamEvent]:
        if event.type == "message_start":
            self.message_id = event.message.id or None
            self.cache_miss = cache_miss_of(event.message.diagnostics)
            u = event.message.usage
            self.usage = Usage(
                input_tokens=u.input_tokens,
                cache_read_tokens=u.cache_read_input_tokens or 0,
                cache_write_tokens=u.cache_creation_input_tokens or 0,
                output_tokens=u.output_tokens,
            )
        elif event.type == "content_block_start":
            yield from self._start(event.index, event.content_block)
        elif event.type == "content_block_delta":
            block = self.open_blocks.get(event.index)
            delta = event.delta
            if block is not None and delta.type == "text_delta" and delta.text:
                block.parts.append(delta.text)
                yield ModelTextDelta(delta.text)
            elif block is not None and delta.type == "input_json_delta":
                block.parts.append(delta.partial_json)
            elif block is not None and delta.type == "thinking_delta":
                block.parts.append(delta.thinking)
            elif block is not None and delta.type == "signature_delta":
                block.signature = delta.signature
        elif event.type == "content_block_stop":
            thinking = self._stop(event.index)
            if thinking is not None:
                yield thinking
        elif event.type == "message_delta":
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            self._update_usage(
                event.usage.input_tokens,
                event.usage.cache_read_input_tokens,
                event.usage.cache_creation_input_tokens,
                event.usage.output_tokens,
            )
        elif event.type == "message_stop":
            self.finished = True

    def _start(self, index: int, content: ContentBlock) -> Iterator[StreamEvent]:
        if content.type == "text":
            block = _OpenBlock("text")
            if content.text:
                block.parts.append(content.text)
                yield ModelTextDelta(content.text)
            self.open_blocks[index] = block
        elif content.type == "tool_use":
            block = _OpenBlock("tool_use", id=content.id, name=content.name)
            self.open_blocks[index] = block
            yield ToolUseStarted(block.id, block.name)
        elif content.type == "thinking":
            block = _OpenBlock("thinking", signature=content.signature or "")
            if content.thinking:
                block.parts.append(content.thinking)
            self.open_blocks[index] = block
        elif content.type == "redacted_thinking":
            self.open_blocks[index] = _OpenBlock("redacted_thinking", parts=[content.data])
        else:
            self.open_blocks[index] = _OpenBlock("skip")  # thinking and server-side blocks

    def _stop(self, index: int) -> ModelThinking | None:
        """Close a block; a finished thinking block is announced (kept exactly as sent)."""
        block = self.open_blocks.pop(index, None)
        if block is None or block.kind == "skip":
            return None
        text = "".join(block.parts)
        if block.kind == "text":
            self.done[index] = TextBlock(text)
        elif block.kind == "thinking":
            self.done[index] = ThinkingBlock(text, block.signature)
            return ModelThinking(len(text), text=text)
        elif block.kind == "redacted_thinking":
            self.done[index] = RedactedThinkingBlock(text)
            return ModelThinking(0, redacted=True)
        else:
            self.done[index] = ToolUseBlock(block.id, block.name, parse_tool_input(block.parts))
        return None

    def _update_usage(
        self,
        input_tokens: int | None,
        cache_read: int | None,
        cache_write: int | None,
        output_tokens: int,
    ) -> None:
        """``message_delta`` usage is cumulative; fields it omits keep their start value."""
        base = self.usage or Usage()
        self.usage = Usage(
            input_tokens=base.input_tokens if input_tokens is None else input_tokens,
            cache_read_tokens=base.cache_read_tokens if cache_read is None else cache_read,
            cache_write_tokens=base.cache_write_tokens if cache_write is None else cache_write,
            output_tokens=output_tokens,
        )

    def complete(self) -> ResponseComplete:
        if not self.finished:
            raise ConnectionLost("the reply stream ended before the message was complete")
        message = Message("assistant", _drop_blank_text([self.done[i] for i in sorted(self.done)]))
        stop = self.stop_reason or ("tool_use" if message.tool_uses else "end_turn")
        return ResponseComplete(message, stop, self.usage, self.message_id, self.cache_miss)


def cache_miss_of(diagnostics: Diagnostics | None) -> CacheMiss | None:
    """The neutral form of ``message.diagnostics`` (None: not asked, no divergence, pending)."""
    reason = diagnostics.cache_miss_reason if diagnostics is not None else None
    if reason is None:
        return None
    return CacheMiss(reason.type, getattr(reason, "cache_missed_input_tokens", 0) or 0)


# ---- the adapter -------------------------------------------------------------------


class AnthropicProvider:
    """Streams Messages API replies through ``anthropic.AsyncAnthropic``."""

    name = "anthropic"

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None,
        timeout_seconds: float,
        cache_diagnostics: bool = True,
        key_variable: str = "ANTHROPIC_API_KEY",
        base_url_variable: str = "ANTHROPIC_BASE_URL",
    ) -> None:
        self._api_key = api_key
        self._base_url = base_url
        self._timeout_seconds = timeout_seconds
        self._sdk_client: AsyncAnthropic | None = None
        # Cache diagnostics: each request names the previous reply, so the server can
        # say why that request's cached prefix was not reused (None on the first one).
        self._cache_diagnostics = cache_diagnostics
        self._previous_message_id: str | None = None
        self._errors = ErrorContext(
            key_variable=key_variable,
            base_url_variable=base_url_variable,
            secrets=(api_key,),
            base_url=base_url,
            timeout_seconds=timeout_seconds,
        )

    def _client(self) -> AsyncAnthropic:
        if self._sdk_client is None:
            import anthropic

            self._sdk_client = anthropic.AsyncAnthropic(
                api_key=self._api_key,
                base_url=self._base_url,
                max_retries=0,
                timeout=self._timeout_seconds,
            )
        return self._sdk_client

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        body = build_request(request)
        if self._cache_diagnostics:
            body["diagnostics"] = {"previous_message_id": self._previous_message_id}
        reply = ReplyAssembler()
        try:
            events: Any = await self._client().messages.create(**body)
            async with events:
                async for event in events:
                    for out in reply.feed(event):
                        yield out
        except ProviderError:
            raise
        except Exception as exc:
            raise self.map_error(exc) from None
        complete = reply.complete()
        self._previous_message_id = complete.response_id or self._previous_message_id
        yield complete

    def map_error(self, exc: Exception) -> ProviderError:
        """One of our error types for any failure the SDK or the transport raised."""
        import anthropic

        if isinstance(exc, anthropic.APITimeoutError):
            return timed_out(self._errors)
        if isinstance(exc, anthropic.APIConnectionError):
            return connection_lost(exc, self._errors)
        if isinstance(exc, anthropic.APIStatusError):
            return classify(_failure_of(exc), self._errors)
        transport = transport_failure(exc, self._errors)
        if transport is not None:
            return transport
        if isinstance(exc, anthropic.APIResponseValidationError | ValueError):
            detail = clean_message(str(exc), self._errors.secrets)
            return MalformedResponse(f"the API sent a reply we could not read: {detail}")
        detail = clean_message(f"{type(exc).__name__}: {exc}", self._errors.secrets)
        return ProviderError(f"the API call failed: {detail}")

    async def close(self) -> None:
        if self._sdk_client is not None:
            await self._sdk_client.close()
            self._sdk_client = None


def _failure_of(exc: APIStatusError) -> Failure:
    """Facts from an ``APIStatusError`` (status 200 means an error event inside the stream)."""
    kind = exc.type if isinstance(exc.type, str) else None
    message = exc.api_message if isinstance(exc.api_message, str) else exc.message
    return Failure(
        status=exc.status_code,
        kinds=tuple(k for k in (kind, exc.error_code) if k),
        message=message,
        headers=exc.response.headers,
    )


def from_settings(settings: Settings, api_key: str, timeout_seconds: float) -> AnthropicProvider:
    """The factory its row in ``models.PROVIDERS`` names; an error names the variables of
    the provider chosen (any Anthropic-compatible one's row may name this factory)."""
    row = provider_row(settings.provider)
    return AnthropicProvider(
        api_key=api_key,
        base_url=settings.base_url,
        timeout_seconds=timeout_seconds,
        cache_diagnostics=settings.cache_diagnostics,
        key_variable=row.key_variable,
        base_url_variable=row.base_url_variable,
    )


def model_facts(settings: Settings, api_key: str, now: float) -> ModelFacts:
    """``GET /v1/models/{id}``: the window, the output limit and the thinking options."""
    import anthropic

    client = anthropic.Anthropic(api_key=api_key, base_url=settings.base_url,
                                 max_retries=0, timeout=LOOKUP_TIMEOUT_SECONDS)
    with client:
        info = client.models.retrieve(settings.model)
    return facts_from_anthropic(info.model_dump(mode="json"), now)
