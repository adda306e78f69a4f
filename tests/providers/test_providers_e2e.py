"""Both adapters over real HTTP, with the real SDK clients, against the simulator."""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import pytest

from mini_claude.conversation import (
    Message,
    SummaryBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    user_text,
)
from mini_claude.protocol import (
    RAW_ARGUMENTS_KEY,
    AuthenticationFailed,
    ConnectionLost,
    ModelRequest,
    ModelTextDelta,
    Overloaded,
    PromptTooLong,
    Provider,
    ProviderError,
    RateLimited,
    RequestTimeout,
    ResponseComplete,
    ServerError,
    StreamEvent,
    StreamRestarted,
    ToolSpec,
    ToolUseStarted,
)
from mini_claude.providers import create_provider
from mini_claude.providers.anthropic import AnthropicProvider
from mini_claude.providers.openai import OpenAIProvider
from mini_claude.providers.retry import RetryingProvider
from mini_claude.settings import Settings
from mini_claude.simulator import Fault, FaultKind, Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.simulator.types import RecordedRequest

Protocol = Literal["anthropic", "openai"]
PROTOCOLS: list[Protocol] = ["anthropic", "openai"]
KEY = "sk-e2e-Zq8Yx7Wv6Ut5Sr4Qp3On2Ml1"
READ = ToolSpec(
    "read_file",
    "Read a file from the project.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
GREP = ToolSpec(
    "grep_search",
    "Search file contents.",
    {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]},
)
LONG_TEXT = "I will read the file now and then tell you what it contains in some detail."


@pytest.fixture(autouse=True)
def private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINI_CLAUDE_HOME", str(tmp_path / "home"))


def adapter(
    sim: Simulator, protocol: Protocol, *, key: str = KEY, timeout: float = 20.0
) -> AnthropicProvider | OpenAIProvider:
    if protocol == "anthropic":
        return AnthropicProvider(
            api_key=key, base_url=sim.anthropic_base_url, timeout_seconds=timeout
        )
    return OpenAIProvider(api_key=key, base_url=sim.openai_base_url, timeout_seconds=timeout)


def request(messages: list[Message] | None = None, **changes: Any) -> ModelRequest:
    values: dict[str, Any] = {
        "model": "sim-model",
        "system": "You are a careful coding agent.",
        "messages": messages or [user_text("What is in a.py?")],
        "tools": [READ, GREP],
        "max_tokens": 512,
    }
    values.update(changes)
    return ModelRequest(**values)


@dataclass
class Outcome:
    events: list[StreamEvent] = field(default_factory=list)
    error: ProviderError | None = None

    @property
    def text(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, ModelTextDelta))

    @property
    def complete(self) -> ResponseComplete:
        last = self.events[-1]
        assert isinstance(last, ResponseComplete), self.error
        return last


def run(provider: Provider, *requests: ModelRequest) -> list[Outcome]:
    """Stream each request in turn on one event loop; collect events and the error."""

    async def go() -> list[Outcome]:
        outcomes: list[Outcome] = []
        try:
            for req in requests:
                outcome = Outcome()
                try:
                    async for event in provider.stream(req):
                        outcome.events.append(event)
                except ProviderError as error:
                    outcome.error = error
                outcomes.append(outcome)
        finally:
            await provider.close()
        return outcomes

    return asyncio.run(go())


def run_one(provider: Provider, req: ModelRequest | None = None) -> Outcome:
    return run(provider, req or request())[0]


@dataclass
class RecordingSleep:
    delays: list[float] = field(default_factory=list)

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def reading_reply(**changes: Any) -> Reply:
    values: dict[str, Any] = {
        "text": LONG_TEXT,
        "tool_calls": [ToolCall("read_file", {"path": "src/a.py"})],
    }
    values.update(changes)
    return Reply(**values)


# ---- streaming ---------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_text_and_tool_call_stream_into_one_message(protocol: Protocol) -> None:
    with Simulator(ScriptedPolicy([reading_reply()])) as sim:
        outcome = run_one(adapter(sim, protocol))
        record = sim.requests[-1]

    assert outcome.error is None
    assert outcome.text == LONG_TEXT
    assert sum(isinstance(e, ModelTextDelta) for e in outcome.events) > 1  # really streamed
    started = [e for e in outcome.events if isinstance(e, ToolUseStarted)]
    assert [s.name for s in started] == ["read_file"]
    first_tool_event = outcome.events.index(started[0])
    assert all(isinstance(e, ModelTextDelta) for e in outcome.events[:first_tool_event])

    done = outcome.complete
    assert done.message.role == "assistant"
    assert done.message.blocks == [
        TextBlock(LONG_TEXT),
        ToolUseBlock(started[0].id, "read_file", {"path": "src/a.py"}),
    ]
    assert done.stop_reason == "tool_use"
    assert done.usage is not None
    assert done.usage.prompt_tokens == record.prompt_tokens > 0
    assert done.usage.output_tokens > 0
    assert record.headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_plain_answer_ends_the_turn(protocol: Protocol) -> None:
    with Simulator(ScriptedPolicy([Reply("All done here.")])) as sim:
        outcome = run_one(adapter(sim, protocol))

    assert outcome.complete.message.blocks == [TextBlock("All done here.")]
    assert outcome.complete.stop_reason == "end_turn"
    assert not any(isinstance(e, ToolUseStarted) for e in outcome.events)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_history_with_tool_round_trip_and_split_user_messages(protocol: Protocol) -> None:
    history = [
        user_text("Look at a.py"),
        Message(
            "assistant",
            [TextBlock("Reading."), ToolUseBlock("toolu_01a", "read_file", {"path": "a.py"})],
        ),
        Message("user", [ToolResultBlock("toolu_01a", "print('hi')", tool_name="read_file")]),
        user_text("Also, keep it short."),
    ]
    with Simulator(ScriptedPolicy([Reply("It prints hi.")])) as sim:
        outcome = run_one(adapter(sim, protocol), request(history))
        record = sim.requests[-1]

    assert outcome.error is None, outcome.error
    conv = record.conversation
    assert conv is not None
    assert [m.role for m in conv.messages] == ["user", "assistant", "user"]
    assert conv.messages[2].tool_results[0].content == "print('hi')"
    assert conv.messages[2].text == "Also, keep it short."
    if protocol == "anthropic":
        assert [m["role"] for m in record.body["messages"]] == ["user", "assistant", "user"]
        assert [b["type"] for b in record.body["messages"][2]["content"]] == ["tool_result", "text"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_tool_use_disabled_keeps_tools_and_gets_text(protocol: Protocol) -> None:
    with Simulator(ScriptedPolicy([reading_reply()])) as sim:
        outcome = run_one(adapter(sim, protocol), request(allow_tool_use=False))
        record = sim.requests[-1]

    assert len(record.body["tools"]) == 2
    assert record.conversation is not None and record.conversation.tool_choice_none
    assert outcome.complete.message.tool_uses == []


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_malformed_tool_arguments_reach_the_registry_raw(protocol: Protocol) -> None:
    broken = '{"path": "a.py", '
    reply = reading_reply(raw_arguments={0: broken})
    with Simulator(ScriptedPolicy([reply])) as sim:
        outcome = run_one(adapter(sim, protocol))

    [use] = outcome.complete.message.tool_uses
    assert use.input == {RAW_ARGUMENTS_KEY: broken}


def test_openai_server_without_usage_gives_none() -> None:
    with Simulator(ScriptedPolicy([Reply("hello")]), report_usage=False) as sim:
        outcome = run_one(adapter(sim, "openai"))

    assert outcome.complete.usage is None
    assert outcome.complete.message.text == "hello"


# ---- prompt caching ----------------------------------------------------------------


def cached_history(turns: int) -> list[Message]:
    messages = [user_text("Please review the project.")]
    for n in range(turns):
        call_id = f"toolu_{n:04d}"
        messages.append(
            Message("assistant", [ToolUseBlock(call_id, "read_file", {"path": f"f{n}.py"})])
        )
        messages.append(Message("user", [ToolResultBlock(call_id, f"contents of f{n} " * 40)]))
    return messages


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_cache_fields_are_mapped_from_the_server_usage(protocol: Protocol) -> None:
    system = "Rules of the house. " * 400  # well above the minimum cacheable prefix
    first = request(cached_history(2), system=system)
    second = request(cached_history(3), system=system)
    with Simulator(ScriptedPolicy([Reply("one"), Reply("two")])) as sim:
        outcomes = run(adapter(sim, protocol), first, second)
        records = sim.requests

    usages = [o.complete.usage for o in outcomes if o.complete.usage is not None]
    assert len(usages) == 2
    for usage, record in zip(usages, records, strict=True):
        assert usage.cache_read_tokens == record.cache_read_tokens
        assert usage.cache_write_tokens == record.cache_write_tokens
        assert usage.prompt_tokens == record.prompt_tokens
    assert usages[1].cache_read_tokens > 0
    assert usages[1].input_tokens < records[1].prompt_tokens
    if protocol == "anthropic":
        assert usages[0].cache_write_tokens > 0


def test_anthropic_breakpoints_in_the_recorded_body() -> None:
    with Simulator(ScriptedPolicy([Reply("ok")])) as sim:
        run_one(adapter(sim, "anthropic"), request(cached_history(2)))
        body = sim.requests[-1].body

    assert "cache_control" in body["tools"][-1] and "cache_control" not in body["tools"][0]
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    messages = body["messages"]
    assert "cache_control" in messages[-1]["content"][-1]
    assert "cache_control" in messages[-3]["content"][-1]  # where the previous request ended
    marked = sum("cache_control" in b for m in messages for b in m["content"])
    assert marked == 2


def _cleared_after_a_summary(cleared: int) -> list[Message]:
    """A summary boundary, then results; the first ``cleared`` of them swapped for placeholders."""
    summary = SummaryBlock("Work so far: " + "the parser was rewritten. " * 200)
    messages = [Message("user", [summary]), *cached_history(4)[1:]]
    for index, message in enumerate(messages):
        if message.tool_results and index // 2 <= cleared:
            [result] = message.tool_results
            messages[index] = Message("user", [replace(result, content="[cleared]")])
    return messages


def _second_after_clearing(anchored: bool) -> tuple[RecordedRequest, RecordedRequest]:
    """Two requests: the history, then the same history with two results cleared."""
    system = "Rules of the house. " * 400

    def sent(messages: list[Message]) -> ModelRequest:
        anchor = messages[0].blocks[-1] if anchored else None
        return request(messages, system=system, cache_anchor=anchor)

    with Simulator(ScriptedPolicy([Reply("one"), Reply("two")])) as sim:
        run(adapter(sim, "anthropic"), sent(_cleared_after_a_summary(0)),
            sent(_cleared_after_a_summary(2)))
        first, second = sim.requests
    return first, second


def test_a_request_after_clearing_reads_the_summary_from_the_cache() -> None:
    """With the anchor on the summary, clearing results after it leaves the summary in the
    cache; without it only the tools and system prompt are read, and the summary is
    written again."""
    _, plain = _second_after_clearing(anchored=False)
    first, anchored = _second_after_clearing(anchored=True)

    assert first.cache_write_tokens == first.prompt_tokens
    assert anchored.prompt_tokens == plain.prompt_tokens
    summary_tokens = 900  # 200 sentences of about five tokens
    assert anchored.cache_read_tokens >= plain.cache_read_tokens + summary_tokens
    assert anchored.cache_write_tokens <= plain.cache_write_tokens - summary_tokens
    assert "cache_control" in anchored.body["messages"][0]["content"][-1]
    assert "cache_control" not in anchored.body["tools"][-1]  # the system's mark covers them


def test_no_cache_means_no_breakpoints() -> None:
    with Simulator(ScriptedPolicy([Reply("ok")])) as sim:
        run_one(adapter(sim, "anthropic"), request(cached_history(1), cache=False))
        assert "cache_control" not in json.dumps(sim.requests[-1].body)


# ---- errors ------------------------------------------------------------------------

ERROR_CASES: list[tuple[FaultKind, type[ProviderError]]] = [
    ("rate_limit", RateLimited),
    ("overloaded", Overloaded),
    ("server_error", ServerError),
    ("unavailable", ServerError),
    ("stream_error", Overloaded),
    ("drop_after_text", ConnectionLost),
    ("drop_in_tool_call", ConnectionLost),
    ("drop_before", ConnectionLost),
]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(("kind", "expected"), ERROR_CASES)
def test_faults_map_to_our_error_types(
    protocol: Protocol, kind: FaultKind, expected: type[ProviderError]
) -> None:
    with Simulator(ScriptedPolicy([reading_reply()])) as sim:
        sim.inject(Fault(kind, retry_after_ms=40))
        outcome = run_one(adapter(sim, protocol))

    error = outcome.error
    assert type(error) is expected, error
    assert error.retryable
    assert "\n" not in error.message and KEY not in error.message and KEY not in str(error)
    assert not any(isinstance(e, ResponseComplete) for e in outcome.events)
    if kind in ("rate_limit", "overloaded", "server_error", "unavailable"):
        assert error.retry_after == pytest.approx(0.04)
    if kind == "drop_after_text":
        assert outcome.text and outcome.text != LONG_TEXT
    if kind == "drop_in_tool_call":
        assert any(isinstance(e, ToolUseStarted) for e in outcome.events)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_prompt_too_long_carries_the_servers_numbers(protocol: Protocol) -> None:
    with Simulator(ScriptedPolicy([Reply("never")]), context_window=50) as sim:
        outcome = run_one(adapter(sim, protocol))
        record = sim.requests[-1]

    error = outcome.error
    assert isinstance(error, PromptTooLong)
    assert (error.tokens, error.maximum) == (record.prompt_tokens, 50)
    assert error.message == f"prompt is too long: {record.prompt_tokens} tokens > 50 maximum"
    assert not error.retryable


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_rejected_key_names_the_variable_and_is_not_echoed(protocol: Protocol) -> None:
    with Simulator(ScriptedPolicy([Reply("never")])) as sim:
        outcome = run_one(adapter(sim, protocol, key="bad-key"))

    error = outcome.error
    assert isinstance(error, AuthenticationFailed)
    assert error.status == 401
    variable = "ANTHROPIC_API_KEY" if protocol == "anthropic" else "OPENAI_API_KEY"
    assert variable in error.message
    assert "bad-key" not in error.message and "bad-key" not in str(error)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_hanging_server_times_out(protocol: Protocol) -> None:
    with Simulator(ScriptedPolicy([Reply("late")])) as sim:
        sim.inject(Fault("hang"))
        outcome = run_one(adapter(sim, protocol, timeout=0.3))

    assert isinstance(outcome.error, RequestTimeout)
    assert outcome.error.retryable


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_nothing_listening_is_a_lost_connection(protocol: Protocol) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}" + ("/v1" if protocol == "openai" else "")
    provider: Provider
    if protocol == "anthropic":
        provider = AnthropicProvider(api_key=KEY, base_url=url, timeout_seconds=5)
    else:
        provider = OpenAIProvider(api_key=KEY, base_url=url, timeout_seconds=5)
    outcome = run_one(provider)

    assert isinstance(outcome.error, ConnectionLost)
    assert str(port) in outcome.error.message


# ---- retries over the wire ---------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_rate_limit_is_retried_after_the_servers_pause(protocol: Protocol) -> None:
    sleep = RecordingSleep()
    with Simulator(ScriptedPolicy([reading_reply()])) as sim:
        sim.inject(Fault("rate_limit", retry_after_ms=25))
        provider = RetryingProvider(adapter(sim, protocol), max_retries=3, sleep=sleep)
        outcome = run_one(provider)
        statuses = [r.status for r in sim.requests]

    assert outcome.error is None
    assert statuses == [429, 200]
    assert sleep.delays == [0.025]
    restarted = outcome.events[0]
    assert isinstance(restarted, StreamRestarted)
    assert restarted.attempt == 1 and restarted.delay_seconds == 0.025
    assert "rate limited" in restarted.error
    assert outcome.complete.message.tool_uses[0].input == {"path": "src/a.py"}


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("kind", ["drop_after_text", "drop_in_tool_call", "stream_error"])
def test_interrupted_stream_is_restarted_and_completes(protocol: Protocol, kind: FaultKind) -> None:
    sleep = RecordingSleep()
    with Simulator(ScriptedPolicy([reading_reply()])) as sim:
        sim.inject(Fault(kind))
        outcome = run_one(RetryingProvider(adapter(sim, protocol), max_retries=2, sleep=sleep))
        requests = len(sim.requests)

    assert outcome.error is None
    assert requests == 2 and sleep.delays == [0.5]
    restart = next(i for i, e in enumerate(outcome.events) if isinstance(e, StreamRestarted))
    after = Outcome(outcome.events[restart + 1 :])
    assert after.text == LONG_TEXT  # the retry streams the whole reply again
    assert outcome.complete.message.blocks[0] == TextBlock(LONG_TEXT)
    assert outcome.complete.message.tool_uses[0].input == {"path": "src/a.py"}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_retries_exhausted_raise_the_last_error(protocol: Protocol) -> None:
    sleep = RecordingSleep()
    with Simulator(ScriptedPolicy([Reply("never")])) as sim:
        sim.inject(Fault("server_error", times=3))
        outcome = run_one(RetryingProvider(adapter(sim, protocol), max_retries=2, sleep=sleep))
        statuses = [r.status for r in sim.requests]

    assert statuses == [500, 500, 500]
    assert isinstance(outcome.error, ServerError)
    assert "gave up after 3 attempts" in outcome.error.message
    assert sleep.delays == [0.5, 1.0]
    assert sum(isinstance(e, StreamRestarted) for e in outcome.events) == 2


# ---- the factory against the simulator ---------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_factory_provider_streams_from_settings(protocol: Protocol, tmp_path: Path) -> None:
    with Simulator(ScriptedPolicy([Reply("from the factory")])) as sim:
        settings = Settings(
            provider=protocol,
            model="sim-model",
            home=tmp_path,
            api_keys={"anthropic": KEY, "openai": KEY},
            base_urls={"anthropic": sim.anthropic_base_url, "openai": sim.openai_base_url},
        )
        outcome = run_one(create_provider(settings))

    assert outcome.complete.message.text == "from the factory"


def test_local_openai_server_gets_a_placeholder_key(tmp_path: Path) -> None:
    with Simulator(ScriptedPolicy([Reply("local")])) as sim:
        settings = Settings(
            provider="openai", model="sim-model", home=tmp_path,
            base_urls={"openai": sim.openai_base_url},
        )
        outcome = run_one(create_provider(settings))
        header = sim.requests[-1].headers["authorization"]

    assert outcome.complete.message.text == "local"
    assert header == "Bearer not-needed"


# ---- a compatible server that only knows max_tokens --------------------------------


class _LegacyFront(ThreadingHTTPServer):
    """Rejects ``max_completion_tokens`` like older compatible servers; forwards the rest."""

    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        self.upstream = urlsplit(upstream)
        self.bodies: list[dict[str, Any]] = []
        super().__init__(("127.0.0.1", 0), _LegacyHandler)


class _LegacyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _LegacyFront

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers["content-length"]))
        body = json.loads(raw)
        self.server.bodies.append(body)
        if "max_completion_tokens" in body:
            error = {
                "error": {
                    "message": "Unrecognized request argument supplied: max_completion_tokens",
                    "type": "invalid_request_error",
                    "param": "max_completion_tokens",
                    "code": None,
                }
            }
            self._send(400, "application/json", json.dumps(error).encode())
            return
        upstream = http.client.HTTPConnection(self.server.upstream.netloc, timeout=10)
        headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
        upstream.request("POST", self.path, raw, headers)
        answer = upstream.getresponse()
        self._send(answer.status, answer.getheader("content-type", ""), answer.read())
        upstream.close()

    def _send(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def legacy_front() -> Iterator[tuple[Simulator, _LegacyFront]]:
    with Simulator(ScriptedPolicy([Reply("first"), Reply("second")])) as sim:
        front = _LegacyFront(sim.url)
        thread = threading.Thread(
            target=front.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        thread.start()
        try:
            yield sim, front
        finally:
            front.shutdown()
            front.server_close()


def test_max_tokens_fallback_is_tried_once_and_remembered(
    legacy_front: tuple[Simulator, _LegacyFront],
) -> None:
    sim, front = legacy_front
    port = front.server_address[1]
    provider = OpenAIProvider(
        api_key=KEY, base_url=f"http://127.0.0.1:{port}/v1", timeout_seconds=10
    )
    outcomes = run(provider, request(), request())

    assert [o.complete.message.text for o in outcomes] == ["first", "second"]
    assert [("max_tokens" in b, "max_completion_tokens" in b) for b in front.bodies] == [
        (False, True),
        (True, False),
        (True, False),
    ]
    assert front.bodies[1]["max_tokens"] == 512
    assert provider.legacy_max_tokens
    assert len(sim.requests) == 2
