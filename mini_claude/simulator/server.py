"""The simulator: a real HTTP server on 127.0.0.1 speaking both wire protocols.

Each request is decided under one lock (record, validate, fault, cache,
policy) and then written out without it, so a slow or hanging answer never
holds up the others.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import select
import socket
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from mini_claude.simulator import anthropic_wire, openai_wire
from mini_claude.simulator.cache import AnthropicCache, CacheOutcome, OpenAICache
from mini_claude.simulator.clock import SimClock
from mini_claude.simulator.diagnostics import FingerprintStore, diagnose, previous_id_of
from mini_claude.simulator.faults import (
    INTERRUPTING_FAULTS,
    STATUS_FAULTS,
    Fault,
    FaultQueue,
)
from mini_claude.simulator.latency import Latency
from mini_claude.simulator.models_api import (
    CatalogEntry,
    ModelsFlavour,
    anthropic_list,
    anthropic_model,
    openai_list,
)
from mini_claude.simulator.policies import ScriptedPolicy
from mini_claude.simulator.summary import REALISTIC, SummaryStyle, build_summary, useless_summary
from mini_claude.simulator.thinking import reply_thinking
from mini_claude.simulator.tokens import TokenCounter, shared_counter
from mini_claude.simulator.types import (
    Policy,
    Protocol_,
    RecordedRequest,
    Reply,
    SimConversation,
    WireError,
)
from mini_claude.simulator.wire import (
    Completion,
    FramePlan,
    OutgoingCall,
    ParsedRequest,
    Usage,
    parse_strict_json,
)

ANTHROPIC_PATHS = ("/v1/messages", "/v1/messages/count_tokens")
OPENAI_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"
BAD_KEY = "bad-key"
HANG_LIMIT_SECONDS = 60.0
MODELS_HOLD_MAX_SECONDS = 30.0  # a held Models API answer goes out by then whatever happens
TOOL_CALL_OUTPUT_OVERHEAD = 3
KEPT_REPLIES_LIMIT = 256
# Reasoning tokens a reply spends at each OpenAI ``reasoning_effort``.
REASONING_TOKENS = {"minimal": 16, "low": 64, "medium": 256, "high": 1024, "xhigh": 2048,
                    "max": 4096}
# A reply allowed this few tokens cannot hold a tool call (see _choose_reply).
CUT_SHORT_TOKENS = 1
STOP_REASON_ALIASES = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _random_id(prefix: str, length: int) -> str:
    return prefix + "".join(secrets.choice(_BASE62) for _ in range(length))


@dataclass(slots=True)
class Answer:
    """How to write one response, including the faults that spoil it."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None  # a complete JSON body
    frames: list[bytes] | None = None  # an SSE stream
    cut_after: int | None = None  # frames (or body bytes) to send before the connection drops
    closing_frame: bytes | None = None  # sent after ``cut_after`` frames, then a clean end
    text_cut: int = 0  # a cut here leaves the stream inside its text
    call_cut: int | None = None  # a cut here leaves the stream inside a tool call's JSON
    drop_before: bool = False
    hang: bool = False
    delay_s: float = 0.0


def parsed_model(record: RecordedRequest) -> str:
    """The model a request named, for an error that quotes it."""
    body = record.body
    return str(body.get("model", "")) if isinstance(body, dict) else ""


def _json_answer(
    status: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> Answer:
    return Answer(status, dict(headers or {}), json.dumps(body, ensure_ascii=False).encode())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, simulator: Simulator) -> None:
        self.simulator = simulator
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-answer is normal here; stay quiet."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without this, Nagle's algorithm
        # and delayed ACKs add about 40 ms to every answer on a kept-alive connection.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.simulator._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.simulator._track(self.connection, False)

    def do_POST(self) -> None:
        self.server.simulator._serve(self)

    def do_GET(self) -> None:
        self.server.simulator._serve(self)

    def log_message(self, format: str, *args: Any) -> None:
        """Requests are recorded in ``sim.requests``; no log lines on stderr."""


class Simulator:
    """A model server for tests, ``--demo`` and the benchmark. Use as a context manager."""

    def __init__(
        self,
        policy: Policy | None = None,
        *,
        context_window: int = 200_000,
        clock: SimClock | None = None,
        report_usage: bool = True,
        counter: TokenCounter | None = None,
        summary_style: SummaryStyle = REALISTIC,
        latency: Latency | None = None,
    ) -> None:
        self.policy: Policy = policy if policy is not None else ScriptedPolicy([])
        self.summary_style = summary_style
        self.context_window = context_window
        self.clock = clock if clock is not None else SimClock()
        self.report_usage = report_usage
        # How late answers come, by kind (none unless asked for, here or in the environment).
        self.latency = latency if latency is not None else Latency.from_env()
        self.requests: list[RecordedRequest] = []
        # The Models API: what GET /v1/models[/{id}] answers, and the requests it got
        # (kept apart from ``requests``, which counts model calls).
        self.catalog: dict[str, CatalogEntry] = {}
        self.models_flavour: ModelsFlavour = "vllm"
        self.model_requests: list[RecordedRequest] = []
        self.abandoned = 0  # requests whose client went away before its body arrived
        # A slow Models API: while set, its answers wait until this event is set.
        self.models_hold: threading.Event | None = None
        self.counter = counter if counter is not None else shared_counter()
        self._faults = FaultQueue()
        self._anthropic_cache = AnthropicCache(self.clock)
        self._openai_cache = OpenAICache(self.clock)
        self._kept: OrderedDict[bytes, Reply] = OrderedDict()
        self._fingerprints = FingerprintStore()
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle ---------------------------------------------------------------------

    def start(self) -> Simulator:
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="mini-claude-simulator",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        with self._connections_lock:
            open_connections = list(self._connections)
        for connection in open_connections:
            _shutdown(connection)
        if thread is not None:
            thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> Simulator:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ---- public surface ----------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the simulator is not running; use `with Simulator(...)` or start()")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    @property
    def tokenizer_name(self) -> str:
        return self.counter.name

    def inject(self, fault: Fault) -> None:
        self._faults.inject(fault)

    @property
    def pending_faults(self) -> list[Fault]:
        return self._faults.pending

    def count_tokens(self, text: str) -> int:
        """Tokens of a text with the same tokenizer the usage numbers come from."""
        return self.counter.count(text)

    def reset_cache(self) -> None:
        self._anthropic_cache.clear()
        self._openai_cache.clear()

    # ---- serving -----------------------------------------------------------------------

    def _track(self, connection: socket.socket, opened: bool) -> None:
        with self._connections_lock:
            if opened:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def _serve(self, handler: _Handler) -> None:
        path = urlsplit(handler.path).path.rstrip("/")
        headers = {k.lower(): v for k, v in handler.headers.items()}
        length = int(headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length > 0 else b""
        if len(raw) < length:  # a cancelled call: the client hung up before its body was sent
            with self._lock:
                self.abandoned += 1
            handler.close_connection = True
            return
        try:
            body: Any = parse_strict_json(raw) if raw else None
            parse_error = False
        except ValueError:
            body, parse_error = None, True
        protocol: Protocol_ = "openai" if path == OPENAI_PATH else "anthropic"
        if path == MODELS_PATH or path.startswith(MODELS_PATH + "/"):
            # Both APIs have this path; only Anthropic's clients send ``anthropic-version``.
            protocol = "anthropic" if "anthropic-version" in headers else "openai"
        stream = bool(body.get("stream")) if isinstance(body, dict) else False
        record = RecordedRequest(protocol, path, headers, body, stream=stream)
        if handler.command == "GET" and (path == MODELS_PATH or path.startswith(MODELS_PATH + "/")):
            hold = self.models_hold
            if hold is not None:
                hold.wait(MODELS_HOLD_MAX_SECONDS)
            with self._lock:
                self.model_requests.append(record)
                answer = self._models(record)
            self._write(handler, answer)
            return
        try:
            with self._lock:
                self.requests.append(record)
                answer = self._decide(record, handler.command, parse_error)
        except Exception as error:  # a policy bug must reach the test as an answer, not a hang
            record.status, record.error = 500, f"simulator failure: {error!r}"
            answer = self._error(record, 500, "api_error", record.error)
        answer.delay_s = max(answer.delay_s, self.latency.for_request(record))
        self._write(handler, answer, record)

    def _decide(self, record: RecordedRequest, method: str, parse_error: bool) -> Answer:
        index = len(self.requests)
        known = record.path in ANTHROPIC_PATHS or record.path == OPENAI_PATH
        if method != "POST" or not known:
            return self._error(record, 404, "not_found_error", f"Not found: {method} {record.path}")
        auth = self._check_auth(record)
        if auth is not None:
            return auth
        if parse_error:
            return self._error(
                record, 400, "invalid_request_error", "The request body is not valid JSON."
            )
        if record.path == "/v1/messages/count_tokens":
            return self._count_tokens(record)
        try:
            parsed = self._parse(record)
        except WireError as error:
            return self._wire_error(record, error)
        conv = parsed.conversation
        conv.request_index = index
        record.prompt_tokens = parsed.prompt_tokens
        record.is_notes_request = conv.is_notes_request
        record.is_summary_request = (
            conv.is_summary_request or self._policy_calls_summary(conv)
        ) and not record.is_notes_request
        record.conversation = conv
        fault = self._faults.take(index, conv)
        if fault is not None:
            record.fault = fault.kind
            early = self._early_fault(record, parsed, fault)
            if early is not None:
                return early
        if parsed.prompt_tokens > self.context_window:
            return self._prompt_too_long(record, parsed.prompt_tokens, self.context_window)
        return self._reply(record, parsed, fault)

    def _policy_calls_summary(self, conv: SimConversation) -> bool:
        """A policy speaking another product's wire may name that product's compaction
        requests (``is_summary_request``), so they are held and counted as summaries too."""
        names = getattr(self.policy, "is_summary_request", None)
        return bool(names(conv)) if callable(names) else False

    def _models(self, record: RecordedRequest) -> Answer:
        """``GET /v1/models`` and ``GET /v1/models/{id}`` in the asking client's shape."""
        auth = self._check_auth(record)
        if auth is not None:
            return auth
        entries = list(self.catalog.values())
        record.status = 200
        if record.path == MODELS_PATH:
            if record.protocol == "anthropic":
                return _json_answer(200, anthropic_list(entries))
            return _json_answer(200, openai_list(entries, self.models_flavour))
        model_id = record.path[len(MODELS_PATH) + 1 :]
        entry = self.catalog.get(model_id)
        if entry is None:
            return self._error(record, 404, "not_found_error", f"model: {model_id}")
        if record.protocol == "anthropic":
            return _json_answer(200, anthropic_model(entry))
        return _json_answer(200, openai_list([entry], self.models_flavour)["data"][0])

    def _parse(self, record: RecordedRequest) -> ParsedRequest:
        if record.protocol == "openai":
            return openai_wire.parse_request(record.body, self.counter)
        return anthropic_wire.parse_request(record.body, self.counter)

    def _check_auth(self, record: RecordedRequest) -> Answer | None:
        bearer = record.headers.get("authorization", "")
        key = bearer[7:].strip() if bearer.lower().startswith("bearer ") else ""
        if record.protocol == "anthropic":
            key = record.headers.get("x-api-key", "").strip() or key
            if not key:
                return self._error(
                    record, 401, "authentication_error", "x-api-key header is required."
                )
            if key == BAD_KEY:
                return self._error(record, 401, "authentication_error", "invalid x-api-key")
            return None
        if not key:
            return self._error(
                record,
                401,
                "invalid_request_error",
                "You didn't provide an API key. You need to provide your API key in an "
                "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
            )
        if key == BAD_KEY:
            return self._error(
                record,
                401,
                "invalid_request_error",
                f"Incorrect API key provided: {key}.",
                code="invalid_api_key",
            )
        return None

    def _count_tokens(self, record: RecordedRequest) -> Answer:
        body = dict(record.body) if isinstance(record.body, dict) else record.body
        if isinstance(body, dict):
            body.setdefault("max_tokens", 1)
        try:
            parsed = anthropic_wire.parse_request(body, self.counter)
        except WireError as error:
            return self._wire_error(record, error)
        record.prompt_tokens = parsed.prompt_tokens
        record.status = 200
        return _json_answer(200, {"input_tokens": parsed.prompt_tokens})

    # ---- errors and faults -------------------------------------------------------------

    def _error(
        self,
        record: RecordedRequest,
        status: int,
        error_type: str,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        record.status = status
        record.error = record.error or message
        request_id = _random_id("req_", 24)
        if record.protocol == "openai":
            body = openai_wire.error_body(message, error_type, param=param, code=code)
            return _json_answer(status, body, {"x-request-id": request_id, **(headers or {})})
        body = anthropic_wire.error_body(error_type, message, request_id)
        return _json_answer(status, body, {"request-id": request_id, **(headers or {})})

    def _wire_error(self, record: RecordedRequest, error: WireError) -> Answer:
        return self._error(
            record,
            error.status,
            error.error_type,
            error.message,
            param=error.param,
            code=error.code,
        )

    def _prompt_too_long(self, record: RecordedRequest, tokens: int, maximum: int) -> Answer:
        if record.protocol == "openai":
            message = (
                f"This model's maximum context length is {maximum} tokens. However, your messages "
                f"resulted in {tokens} tokens. Please reduce the length of the messages."
            )
            return self._error(
                record,
                400,
                "invalid_request_error",
                message,
                param="messages",
                code="context_length_exceeded",
            )
        message = f"prompt is too long: {tokens} tokens > {maximum} maximum"
        return self._error(record, 400, "invalid_request_error", message)

    def _early_fault(
        self, record: RecordedRequest, parsed: ParsedRequest, fault: Fault
    ) -> Answer | None:
        """Faults answered before any reply is made; None lets the request go on."""
        kind = fault.kind
        record.error = f"fault: {kind}"
        if kind in STATUS_FAULTS:
            return self._status_fault(record, fault, STATUS_FAULTS[kind])
        if kind == "summary_error":
            return self._error(record, 500, "api_error", "Internal server error")
        if kind == "prompt_too_long":
            # Refused as if the prompt were over the real window: the maximum is the
            # window, so a client that learns the window from it learns the truth.
            tokens = max(parsed.prompt_tokens, self.context_window + 1)
            return self._prompt_too_long(record, tokens, self.context_window)
        if kind == "drop_before":
            record.status = 0
            return Answer(drop_before=True)
        if kind == "hang":
            record.status = 200
            return Answer(hang=True, frames=[] if parsed.stream else None, body=b"")
        record.error = None
        return None

    def _status_fault(self, record: RecordedRequest, fault: Fault, status: int) -> Answer:
        headers: dict[str, str] = {}
        if fault.retry_after_ms is not None:
            headers["retry-after-ms"] = str(fault.retry_after_ms)
        if fault.retry_after_s is not None:
            seconds = fault.retry_after_s
            headers["retry-after"] = str(int(seconds)) if seconds == int(seconds) else str(seconds)
        anthropic_types = {
            429: ("rate_limit_error", "Number of requests has exceeded your rate limit."),
            529: ("overloaded_error", "Overloaded"),
            404: ("not_found_error", f"model: {parsed_model(record)}"),
            500: ("api_error", "Internal server error"),
            503: ("api_error", "Service unavailable"),
        }
        openai_types = {
            429: ("requests", "Rate limit reached for requests.", "rate_limit_exceeded"),
            529: (
                "overloaded_error",
                "The server is overloaded. Please try again later.",
                "overloaded",
            ),
            404: (
                "invalid_request_error",
                f"The model `{parsed_model(record)}` does not exist or you do not have access "
                "to it.",
                "model_not_found",
            ),
            500: ("server_error", "The server had an error while processing your request.", None),
            503: ("server_error", "The server is overloaded or not ready yet.", None),
        }
        if record.protocol == "openai":
            error_type, message, code = openai_types[status]
            return self._error(record, status, error_type, message, code=code, headers=headers)
        error_type, message = anthropic_types[status]
        return self._error(record, status, error_type, message, headers=headers)

    # ---- replies -----------------------------------------------------------------------

    def _reply(self, record: RecordedRequest, parsed: ParsedRequest, fault: Fault | None) -> Answer:
        conv = parsed.conversation
        cache = self._account_cache(record.protocol, parsed)
        reply = self._choose_reply(conv, parsed, fault)
        if conv.tool_choice_none and reply.tool_calls:
            reply = Reply(reply.text or "(no tool use allowed)", [], reply.stop_reason)
        completion = self._complete(record, reply, parsed, cache)
        self._diagnose(record, parsed, completion)
        interrupting = fault is not None and fault.kind in INTERRUPTING_FAULTS
        if interrupting and not conv.is_summary_request:
            self._keep(parsed.fingerprint, reply)
        record.reply = reply
        record.status = 200
        record.cache_read_tokens = cache.read_tokens
        record.cache_write_tokens = cache.write_tokens
        answer = self._render(record, parsed, completion)
        if fault is not None and fault.kind in INTERRUPTING_FAULTS:
            record.error = f"fault: {fault.kind}"
            self._spoil(record, answer, fault)
        if fault is not None and fault.kind == "slow":
            answer.delay_s = fault.delay_s
        return answer

    def _diagnose(
        self, record: RecordedRequest, parsed: ParsedRequest, completion: Completion
    ) -> None:
        """Cache diagnostics: compare with the request the client names, keep this one."""
        if parsed.prefix is None or not isinstance(record.body, dict):
            return
        asked, previous_id = previous_id_of(record.body)
        if not asked:
            return
        if previous_id is not None:
            reason = diagnose(self._fingerprints.get(previous_id), parsed.prefix)
            if reason is not None:
                completion.diagnostics = {"cache_miss_reason": reason}
                record.cache_miss = reason
        self._fingerprints.keep(completion.message_id, parsed.prefix)

    def _account_cache(self, protocol: str, parsed: ParsedRequest) -> CacheOutcome:
        if protocol == "openai":
            return self._openai_cache.account(parsed.units)
        return self._anthropic_cache.account(parsed.units)

    def _choose_reply(
        self, conv: SimConversation, parsed: ParsedRequest, fault: Fault | None
    ) -> Reply:
        kind = fault.kind if fault is not None else None
        if conv.is_summary_request and not getattr(self.policy, "handles_summary_requests", False):
            if kind == "empty_summary":
                return Reply("")
            if kind == "long_summary":
                return Reply(useless_summary(conv, self.counter, parsed.prompt_tokens))
            return Reply(build_summary(conv, self.counter, self.summary_style))
        kept = self._take_kept(parsed.fingerprint)
        if kept is not None:
            return kept
        if conv.max_tokens is not None and conv.max_tokens <= CUT_SHORT_TOKENS:
            # No tool call fits: the model's first words, cut off. The policy is not asked,
            # so a request that only reads the cache (a keep-alive ping) does not move a script.
            return Reply("OK", stop_reason="max_tokens")
        return self.policy.respond(conv)

    def _keep(self, fingerprint: bytes, reply: Reply) -> None:
        self._kept[fingerprint] = reply
        while len(self._kept) > KEPT_REPLIES_LIMIT:
            self._kept.popitem(last=False)

    def _take_kept(self, fingerprint: bytes) -> Reply | None:
        """The reply an interrupted request was going to get; the retry gets it instead."""
        if fingerprint in self._kept:
            return self._kept.pop(fingerprint)
        if self._kept:
            _, reply = self._kept.popitem(last=False)
            return reply
        return None

    def _complete(
        self, record: RecordedRequest, reply: Reply, parsed: ParsedRequest, cache: CacheOutcome
    ) -> Completion:
        openai = record.protocol == "openai"
        calls: list[OutgoingCall] = []
        raw = reply.raw_arguments or {}
        for number, call in enumerate(reply.tool_calls):
            call_id = call.id or (_random_id("call_", 24) if openai else _random_id("toolu_01", 22))
            arguments = raw.get(number, json.dumps(call.input, ensure_ascii=False))
            calls.append(OutgoingCall(call_id, call.name, dict(call.input), arguments))
        stop = reply.stop_reason or ("tool_use" if calls else "end_turn")
        stop = STOP_REASON_ALIASES.get(stop, stop)
        output = self.counter.count(reply.text) + sum(
            self.counter.count(c.name) + self.counter.count(c.arguments) + TOOL_CALL_OUTPUT_OVERHEAD
            for c in calls
        )
        thinking = None
        if parsed.thinking is not None and not openai:
            text = reply.thinking or default_thinking(parsed.conversation)
            thinking = reply_thinking(text, reply.redacted_thinking, parsed.thinking_prefix)
            output += self.counter.count(text)  # thinking is billed as output
        reasoning = REASONING_TOKENS.get(parsed.reasoning_effort or "", 0) if openai else 0
        output += reasoning
        usage = Usage(parsed.prompt_tokens, output, cache.read_tokens, cache.write_tokens)
        if openai and not self.report_usage:
            usage_or_none: Usage | None = None
        else:
            usage_or_none = usage
        message_id = _random_id("chatcmpl-", 29) if openai else _random_id("msg_01", 22)
        model = parsed.conversation.model
        return Completion(
            message_id, model, reply.text, calls, stop, usage_or_none,
            reply.empty_text_block, thinking=thinking, reasoning_tokens=reasoning,
        )

    def _render(
        self, record: RecordedRequest, parsed: ParsedRequest, completion: Completion
    ) -> Answer:
        request_id = _random_id("req_", 24)
        if record.protocol == "openai":
            headers = {"x-request-id": request_id}
            if parsed.stream:
                plan = openai_wire.stream_plan(completion, parsed.include_usage)
                record.usage = _usage_in_frames(plan) if parsed.include_usage else None
                return _stream_answer(plan, headers)
            body = openai_wire.completion_json(completion)
            record.usage = body.get("usage")
            return _json_answer(200, body, headers)
        headers = {"request-id": request_id}
        body = anthropic_wire.message_json(completion)
        record.usage = body["usage"]
        if parsed.stream:
            return _stream_answer(anthropic_wire.stream_plan(completion), headers)
        return _json_answer(200, body, headers)

    def _spoil(self, record: RecordedRequest, answer: Answer, fault: Fault) -> None:
        """Cut or break a made answer the way the fault says."""
        if answer.frames is None:
            if fault.kind == "stream_error":
                error = self._status_fault(record, fault, 529)
                answer.status, answer.headers, answer.body = error.status, error.headers, error.body
                return
            assert answer.body is not None
            answer.cut_after = max(1, len(answer.body) // 2)
            return
        if fault.kind == "drop_in_tool_call" and answer.call_cut is not None:
            answer.cut_after = answer.call_cut
        else:
            answer.cut_after = answer.text_cut
        if fault.kind == "stream_error":
            message = "Overloaded"
            if record.protocol == "openai":
                answer.closing_frame = openai_wire.stream_error_frame("overloaded_error", message)
            else:
                request_id = _random_id("req_", 24)
                answer.closing_frame = anthropic_wire.stream_error_frame(
                    "overloaded_error", message, request_id
                )

    # ---- writing -----------------------------------------------------------------------

    def _write(
        self, handler: _Handler, answer: Answer, record: RecordedRequest | None = None
    ) -> None:
        try:
            if answer.delay_s > 0:
                self._stopping.wait(answer.delay_s)
            if record is not None:
                record.answered_at = time.monotonic()
            if answer.drop_before:
                _drop(handler)
                return
            if answer.frames is not None:
                self._write_stream(handler, answer)
            else:
                self._write_body(handler, answer)
        except (BrokenPipeError, ConnectionResetError, TimeoutError, OSError):
            handler.close_connection = True

    def _write_head(self, handler: _Handler, answer: Answer, extra: dict[str, str]) -> None:
        handler.send_response(answer.status)
        for name, value in {**extra, **answer.headers}.items():
            handler.send_header(name, value)
        handler.end_headers()

    def _write_body(self, handler: _Handler, answer: Answer) -> None:
        body = answer.body or b""
        length = len(body) if not answer.hang else 64
        head = {"content-type": "application/json", "content-length": str(length)}
        self._write_head(handler, answer, head)
        if answer.hang:
            self._hang(handler)
            return
        if answer.cut_after is not None:
            handler.wfile.write(body[: answer.cut_after])
            _drop(handler)
            return
        handler.wfile.write(body)

    def _write_stream(self, handler: _Handler, answer: Answer) -> None:
        head = {
            "content-type": "text/event-stream; charset=utf-8",
            "cache-control": "no-cache",
            "transfer-encoding": "chunked",
        }
        self._write_head(handler, answer, head)
        if answer.hang:
            self._hang(handler)
            return
        frames = answer.frames or []
        if answer.cut_after is not None:
            frames = frames[: answer.cut_after]
        for frame in frames:
            _write_chunk(handler, frame)
        if answer.cut_after is not None and answer.closing_frame is None:
            _drop(handler)
            return
        if answer.closing_frame is not None:
            _write_chunk(handler, answer.closing_frame)
        handler.wfile.write(b"0\r\n\r\n")

    def _hang(self, handler: _Handler) -> None:
        """Say nothing until the client gives up, the simulator stops, or a minute passes."""
        deadline = time.monotonic() + HANG_LIMIT_SECONDS
        connection = handler.connection
        while not self._stopping.is_set() and time.monotonic() < deadline:
            readable, _, _ = select.select([connection], [], [], 0.05)
            if readable:
                try:
                    if not connection.recv(1, socket.MSG_PEEK):
                        break
                except OSError:
                    break
        _drop(handler)


def default_thinking(conv: SimConversation) -> str:
    """Reasoning for a policy that wrote none: short, and different for every request."""
    results = len(conv.tool_results())
    ask = " ".join(conv.last_user_text.split())[:80]
    return f"The user asked: {ask!r}. {results} tool results so far; deciding the next step."


def _stream_answer(plan: FramePlan, headers: dict[str, str]) -> Answer:
    return Answer(
        200,
        headers,
        frames=plan.frames,
        text_cut=plan.after_some_text,
        call_cut=plan.inside_tool_call,
    )


def _usage_in_frames(plan: FramePlan) -> dict[str, Any] | None:
    for frame in reversed(plan.frames):
        text = frame.decode()
        if text.startswith("data: {") and '"usage": {' in text:
            data = json.loads(text[len("data: ") :])
            usage = data.get("usage")
            return usage if isinstance(usage, dict) else None
    return None


def _write_chunk(handler: _Handler, data: bytes) -> None:
    handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")


def _drop(handler: _Handler) -> None:
    handler.close_connection = True
    _shutdown(handler.connection)


def _shutdown(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)
