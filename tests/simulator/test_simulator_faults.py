"""Injected faults reach the SDKs as the real failures do, and never eat a scripted step."""

from __future__ import annotations

import time
from functools import lru_cache
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from mini_claude.prompts import SUMMARY_HEADING
from mini_claude.simulator import Fault, Reply, ScriptedPolicy, Simulator, ToolCall

MODEL = "sim-claude"
TOOLS: list[Any] = [
    {"name": "read_file", "description": "Read.", "input_schema": {"type": "object"}}
]
OPENAI_TOOLS: list[Any] = [
    {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}
]
LONG_TEXT = "This answer is long enough to arrive in several streamed pieces of text. " * 3
HI: list[Any] = [{"role": "user", "content": "hi"}]


@lru_cache(maxsize=8)
def _claude(url: str, retries: int, timeout: float) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="test-key", base_url=url, max_retries=retries, timeout=timeout
    )


@lru_cache(maxsize=8)
def _gpt(url: str, retries: int, timeout: float) -> openai.OpenAI:
    return openai.OpenAI(api_key="test-key", base_url=url, max_retries=retries, timeout=timeout)


def claude(sim: Simulator, retries: int = 0, timeout: float = 10.0) -> anthropic.Anthropic:
    """One client per server and setting: building a client costs more than a request."""
    return _claude(sim.url, retries, timeout)


def gpt(sim: Simulator, retries: int = 0, timeout: float = 10.0) -> openai.OpenAI:
    return _gpt(sim.openai_base_url, retries, timeout)


def ask(sim: Simulator, messages: list[Any] = HI, **kwargs: Any) -> Any:
    return claude(sim, **kwargs).messages.create(
        model=MODEL, max_tokens=64, tools=TOOLS, messages=messages
    )


def text_of(message: Any) -> str:
    return "".join(b.text for b in message.content if b.type == "text")


# ---- status faults --------------------------------------------------------------------------


def test_rate_limit_sends_retry_headers_and_the_sdk_retries_through_it() -> None:
    with Simulator(ScriptedPolicy([Reply("after the wait")])) as sim:
        sim.inject(Fault("rate_limit", retry_after_ms=20, retry_after_s=1))
        with pytest.raises(anthropic.RateLimitError) as caught:
            ask(sim)
        assert caught.value.response.headers["retry-after-ms"] == "20"
        assert caught.value.response.headers["retry-after"] == "1"
        sim.inject(Fault("rate_limit", retry_after_ms=10))
        message = ask(sim, retries=1)
    assert text_of(message) == "after the wait"
    assert [r.status for r in sim.requests] == [429, 429, 200]
    assert sim.requests[0].fault == "rate_limit"


@pytest.mark.parametrize(
    ("kind", "status", "anthropic_class", "error_type"),
    [
        ("overloaded", 529, anthropic.OverloadedError, "overloaded_error"),
        ("server_error", 500, anthropic.InternalServerError, "api_error"),
        ("unavailable", 503, anthropic.ServiceUnavailableError, "api_error"),
    ],
)
def test_server_side_failures_map_to_the_sdk_classes(
    kind: Any, status: int, anthropic_class: type[Exception], error_type: str
) -> None:
    with Simulator() as sim:
        sim.inject(Fault(kind))
        with pytest.raises(anthropic_class) as caught:
            ask(sim)
        sim.inject(Fault(kind))
        with pytest.raises(openai.InternalServerError) as o_caught:
            gpt(sim).chat.completions.create(model="gpt-4.1", messages=HI)
    body = getattr(caught.value, "body", None)
    assert isinstance(body, dict) and body["error"]["type"] == error_type
    assert o_caught.value.status_code == status
    assert isinstance(o_caught.value.body, dict) and o_caught.value.body["message"]
    assert [r.status for r in sim.requests] == [status, status]


def test_on_request_when_and_times_choose_which_requests_fail() -> None:
    with Simulator() as sim:
        sim.inject(Fault("server_error", on_request=2))
        sim.inject(Fault("rate_limit", when=lambda c: "boom" in c.last_user_text, times=2))
        outcomes = []
        for text in ["a", "b", "boom", "boom", "boom"]:
            try:
                ask(sim, messages=[{"role": "user", "content": text}])
                outcomes.append(200)
            except anthropic.APIStatusError as error:
                outcomes.append(error.status_code)
    assert outcomes == [200, 500, 429, 429, 200]
    assert sim.pending_faults == []


def test_prompt_too_long_fault_answers_the_real_400_for_a_small_prompt() -> None:
    with Simulator() as sim:
        sim.inject(Fault("prompt_too_long"))
        with pytest.raises(anthropic.BadRequestError) as caught:
            ask(sim)
        sim.inject(Fault("prompt_too_long"))
        with pytest.raises(openai.BadRequestError) as o_caught:
            gpt(sim).chat.completions.create(model="gpt-4.1", messages=HI)
    assert "prompt is too long" in caught.value.message
    assert o_caught.value.code == "context_length_exceeded"


# ---- connection faults ----------------------------------------------------------------------


def test_drop_before_closes_without_a_byte() -> None:
    with Simulator() as sim:
        sim.inject(Fault("drop_before"))
        with pytest.raises(anthropic.APIConnectionError):
            ask(sim)
        sim.inject(Fault("drop_before"))
        with pytest.raises(openai.APIConnectionError):
            gpt(sim).chat.completions.create(model="gpt-4.1", messages=HI)
    assert [r.status for r in sim.requests] == [0, 0]


def test_drop_after_text_cuts_the_anthropic_stream_mid_text() -> None:
    with Simulator(ScriptedPolicy([Reply(LONG_TEXT)])) as sim:
        sim.inject(Fault("drop_after_text"))
        received: list[str] = []
        stream = claude(sim).messages.create(model=MODEL, max_tokens=64, messages=HI, stream=True)
        with pytest.raises(httpx2.RemoteProtocolError):
            for event in stream:
                if event.type == "content_block_delta" and event.delta.type == "text_delta":
                    received.append(event.delta.text)
    partial = "".join(received)
    assert partial and LONG_TEXT.startswith(partial) and partial != LONG_TEXT


def test_drop_after_text_in_openai_stream_is_a_connection_error() -> None:
    with Simulator(ScriptedPolicy([Reply(LONG_TEXT)])) as sim:
        sim.inject(Fault("drop_after_text"))
        received: list[str] = []
        stream = gpt(sim).chat.completions.create(model="gpt-4.1", messages=HI, stream=True)
        with pytest.raises(openai.APIConnectionError):
            for chunk in stream:
                received.extend(c.delta.content or "" for c in chunk.choices)
    assert "".join(received) and "".join(received) != LONG_TEXT


def test_drop_in_tool_call_leaves_partial_json() -> None:
    call = Reply("Reading.", [ToolCall("read_file", {"path": "some/long/path/to/a/file.py"})])
    with Simulator(ScriptedPolicy([call, call])) as sim:
        sim.inject(Fault("drop_in_tool_call"))
        pieces: list[str] = []
        stream = claude(sim).messages.create(
            model=MODEL, max_tokens=64, tools=TOOLS, messages=HI, stream=True
        )
        with pytest.raises(httpx2.RemoteProtocolError):
            for event in stream:
                if event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                    pieces.append(event.delta.partial_json)
        sim.inject(Fault("drop_in_tool_call"))
        arguments: list[str] = []
        chunks = gpt(sim).chat.completions.create(
            model="gpt-4.1", messages=HI, tools=OPENAI_TOOLS, stream=True
        )
        with pytest.raises(openai.APIConnectionError):
            for chunk in chunks:
                for choice in chunk.choices:
                    for delta in choice.delta.tool_calls or []:
                        arguments.append(delta.function.arguments or "" if delta.function else "")
    full = '{"path": "some/long/path/to/a/file.py"}'
    for partial in ("".join(pieces), "".join(arguments)):
        assert partial and full.startswith(partial) and partial != full


def test_stream_error_event_raises_in_both_sdks() -> None:
    with Simulator(ScriptedPolicy([Reply(LONG_TEXT), Reply(LONG_TEXT)])) as sim:
        sim.inject(Fault("stream_error"))
        stream = claude(sim).messages.create(model=MODEL, max_tokens=64, messages=HI, stream=True)
        with pytest.raises(anthropic.APIStatusError) as caught:
            list(stream)
        sim.inject(Fault("stream_error"))
        chunks = gpt(sim).chat.completions.create(model="gpt-4.1", messages=HI, stream=True)
        with pytest.raises(openai.APIError) as o_caught:
            list(chunks)
    body = caught.value.body
    assert isinstance(body, dict) and body["error"]["type"] == "overloaded_error"
    assert (
        isinstance(o_caught.value.body, dict) and o_caught.value.body["type"] == "overloaded_error"
    )


def test_slow_delays_the_answer() -> None:
    with Simulator(ScriptedPolicy([Reply("late")])) as sim:
        sim.inject(Fault("slow", delay_s=0.3))
        started = time.monotonic()
        message = ask(sim)
    assert time.monotonic() - started >= 0.3
    assert text_of(message) == "late"


def test_hang_lasts_until_the_client_gives_up() -> None:
    with Simulator() as sim:
        sim.inject(Fault("hang"))
        started = time.monotonic()
        with pytest.raises(anthropic.APITimeoutError):
            ask(sim, timeout=0.3)
        sim.inject(Fault("hang"))
        with pytest.raises(openai.APITimeoutError):
            list(
                gpt(sim, timeout=0.3).chat.completions.create(
                    model="gpt-4.1", messages=HI, stream=True
                )
            )
        elapsed = time.monotonic() - started
        assert text_of(ask(sim)) == "Done."  # the server is still serving
    assert elapsed < 10


# ---- a fault never eats a step --------------------------------------------------------------


@pytest.mark.parametrize("kind", ["drop_after_text", "drop_in_tool_call", "stream_error"])
def test_interrupted_reply_is_replayed_on_retry(kind: Any) -> None:
    first = Reply(LONG_TEXT, [ToolCall("read_file", {"path": "a.py"})])
    second = Reply("second step")
    with Simulator(ScriptedPolicy([first, second])) as sim:
        sim.inject(Fault(kind))
        client = claude(sim)
        failure = (httpx2.RemoteProtocolError, anthropic.APIStatusError)
        with (
            pytest.raises(failure),
            client.messages.stream(model=MODEL, max_tokens=64, tools=TOOLS, messages=HI) as stream,
        ):
            stream.get_final_message()
        retried = client.messages.create(model=MODEL, max_tokens=64, tools=TOOLS, messages=HI)
    assert text_of(retried) == LONG_TEXT
    assert [b.name for b in retried.content if b.type == "tool_use"] == ["read_file"]
    assert sim.requests[0].fault == kind and sim.requests[0].status == 200
    assert isinstance(sim.policy, ScriptedPolicy) and sim.policy.remaining == 1


def test_a_scripted_session_completes_through_faults_with_sdk_retries() -> None:
    steps = [Reply(f"step {n}") for n in range(4)]
    with Simulator(ScriptedPolicy(steps)) as sim:
        sim.inject(Fault("overloaded", on_request=1, retry_after_ms=5))
        sim.inject(Fault("drop_before", on_request=3, retry_after_ms=5))
        sim.inject(Fault("server_error", on_request=5, retry_after_ms=5))
        client = claude(sim, retries=2)
        answers = [
            text_of(client.messages.create(model=MODEL, max_tokens=9, messages=HI)) for _ in steps
        ]
    assert answers == ["step 0", "step 1", "step 2", "step 3"]
    assert [r.status for r in sim.requests] == [529, 200, 0, 200, 500, 200, 200]


# ---- summary faults -------------------------------------------------------------------------


def summary_messages() -> list[Any]:
    return [
        {"role": "user", "content": "Please fix the bug. FACT-alpha the port is 8123"},
        {"role": "assistant", "content": "On it."},
        {"role": "user", "content": f"{SUMMARY_HEADING}\n\nSummarize."},
    ]


def test_summary_faults_wait_for_a_summary_request() -> None:
    with Simulator(ScriptedPolicy([Reply("normal")])) as sim:
        sim.inject(Fault("summary_error"))
        assert text_of(ask(sim)) == "normal"
        with pytest.raises(anthropic.InternalServerError):
            ask(sim, messages=summary_messages())
        sim.inject(Fault("empty_summary"))
        empty = ask(sim, messages=summary_messages())
        sim.inject(Fault("long_summary"))
        long = ask(sim, messages=summary_messages())
        normal = ask(sim, messages=summary_messages())
    assert [r.is_summary_request for r in sim.requests] == [False, True, True, True, True]
    assert text_of(empty) == "" and empty.content == []
    assert long.usage.output_tokens >= 2 * sim.requests[3].prompt_tokens
    assert "<summary>" in text_of(long) and text_of(long).endswith("</summary>")
    assert "FACT-alpha the port is 8123" in text_of(normal)


def test_unknown_fault_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown fault kind"):
        Fault("meteor")  # type: ignore[arg-type]


def test_a_call_cancelled_before_its_body_was_sent_is_not_counted_as_a_request() -> None:
    """A cancelled notes update hangs up mid-send; it is no request the server answered."""
    import socket
    from urllib.parse import urlsplit

    with Simulator(ScriptedPolicy([Reply("fine")])) as sim:
        address = urlsplit(sim.anthropic_base_url)
        with socket.create_connection((address.hostname or "", address.port or 80)) as conn:
            conn.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\ncontent-type: "
                         b"application/json\r\ncontent-length: 4500\r\n\r\n{\"mod")
        deadline = time.monotonic() + 10
        while sim.abandoned == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        client = anthropic.Anthropic(api_key="k", base_url=sim.anthropic_base_url, max_retries=0)
        reply = client.messages.create(model="sim", max_tokens=16,
                                       messages=[{"role": "user", "content": "hi"}])
    assert sim.abandoned == 1
    assert [r.status for r in sim.requests] == [200]
    assert reply.content[0].type == "text"
