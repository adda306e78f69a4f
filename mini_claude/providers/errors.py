"""Turn what a server said about a failure into one of our error types.

Both adapters reduce an SDK exception to :class:`Failure` (plain facts, no SDK
types) and let :func:`classify` decide, so the two wire formats share one
policy for rate limits, overload, oversize prompts and credentials.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from mini_claude.protocol import (
    AuthenticationFailed,
    BadRequest,
    ConnectionLost,
    ModelNotFound,
    Overloaded,
    PromptTooLong,
    ProviderError,
    RateLimited,
    RequestTimeout,
    ServerError,
)
from mini_claude.providers.redact import clean_message

_ANTHROPIC_TOO_LONG = re.compile(r"prompt is too long:\s*(\d+)\s*tokens?\s*>\s*(\d+)", re.I)
_OPENAI_MAXIMUM = re.compile(r"maximum context length is\s*(\d+)", re.I)
_OPENAI_REQUESTED = re.compile(r"(?:resulted in|requested|you requested)\s*(\d+)\s*tokens", re.I)
_TOO_LONG_KINDS = frozenset({"context_length_exceeded", "exceed_context_size_error"})
_RATE_LIMIT_KINDS = frozenset({"rate_limit_error", "rate_limit_exceeded", "tokens", "requests"})
_OVERLOADED_KINDS = frozenset({"overloaded_error", "overloaded", "server_overloaded"})
_AUTH_KINDS = frozenset({"authentication_error", "permission_error", "invalid_api_key"})
_NOT_FOUND_KINDS = frozenset({"not_found_error", "model_not_found"})
_SERVER_KINDS = frozenset({"api_error", "server_error", "internal_error"})


@dataclass(frozen=True, slots=True)
class Failure:
    """What the server said: status (None inside a stream), error type/code, text, headers."""

    status: int | None
    kinds: tuple[str, ...]  # error.type and error.code, whichever the server sent
    message: str
    headers: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class ErrorContext:
    """Per-provider wording: which variables to check, which secrets to hide."""

    key_variable: str  # e.g. ANTHROPIC_API_KEY
    base_url_variable: str  # e.g. ANTHROPIC_BASE_URL
    secrets: tuple[str, ...] = ()
    base_url: str | None = None
    timeout_seconds: float | None = None


def classify(failure: Failure, context: ErrorContext) -> ProviderError:
    """Map a failure to the most specific error type; order matters (overflow first)."""
    text = clean_message(failure.message, context.secrets) or "no details given"
    status = failure.status
    kinds = set(failure.kinds)
    label = _label(status, failure.kinds)
    retry_after = retry_after_seconds(failure.headers)

    too_long = prompt_too_long(failure.message, kinds)
    if too_long is not None:
        tokens, maximum = too_long
        return PromptTooLong(
            _too_long_message(tokens, maximum, text), tokens=tokens, maximum=maximum, status=status
        )
    if status == 529 or kinds & _OVERLOADED_KINDS:
        return Overloaded(
            f"the API is overloaded ({label}): {text}", status=status, retry_after=retry_after
        )
    if status == 429 or kinds & _RATE_LIMIT_KINDS:
        return RateLimited(
            f"rate limited ({label}): {text}", status=status, retry_after=retry_after
        )
    if status in (401, 403) or kinds & _AUTH_KINDS:
        hint = f"check {context.key_variable} (and {context.base_url_variable} if you set it)"
        return AuthenticationFailed(
            f"authentication failed ({label}): {text}; {hint}", status=status
        )
    if status == 408 or "timeout_error" in kinds:
        return RequestTimeout(
            f"the request timed out ({label}): {text}", status=status, retry_after=retry_after
        )
    if status == 404 or kinds & _NOT_FOUND_KINDS:
        return ModelNotFound(f"request rejected ({label}): {text}", status=status)
    if status is not None and 400 <= status < 500:
        return BadRequest(f"request rejected ({label}): {text}", status=status)
    # 5xx, and any error event inside a stream that names no client mistake.
    return ServerError(f"server error ({label}): {text}", status=status, retry_after=retry_after)


def prompt_too_long(
    message: str, kinds: Iterable[str] = ()
) -> tuple[int | None, int | None] | None:
    """(tokens, maximum) when the server says the prompt overflows the window, else None."""
    match = _ANTHROPIC_TOO_LONG.search(message)
    if match:
        return int(match.group(1)), int(match.group(2))
    maximum = _OPENAI_MAXIMUM.search(message)
    if set(kinds) & _TOO_LONG_KINDS or maximum or "prompt is too long" in message.lower():
        requested = _OPENAI_REQUESTED.search(message)
        return (
            int(requested.group(1)) if requested else None,
            int(maximum.group(1)) if maximum else None,
        )
    return None


def _too_long_message(tokens: int | None, maximum: int | None, text: str) -> str:
    if tokens is not None and maximum is not None:
        return f"prompt is too long: {tokens} tokens > {maximum} maximum"
    return f"prompt is too long for the model's context window: {text}"


def _label(status: int | None, kinds: tuple[str, ...]) -> str:
    if status is not None and status != 200:
        return str(status)
    named = [k for k in kinds if k]
    return f"in stream: {named[0]}" if named else "in stream"


def retry_after_seconds(
    headers: Mapping[str, str] | None, *, now: float | None = None
) -> float | None:
    """The server's requested pause: ``retry-after-ms`` wins over ``retry-after``."""
    if not headers:
        return None
    millis = _header(headers, "retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    raw = _header(headers, "retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value.strip() if value is not None else None


def transport_failure(exc: BaseException, context: ErrorContext) -> ProviderError | None:
    """Map raw ``httpx2`` failures (a stream cut midway is not wrapped by the SDK)."""
    import httpx2

    if isinstance(exc, httpx2.TimeoutException):
        return timed_out(context)
    if isinstance(exc, httpx2.RequestError):
        return connection_lost(exc, context)
    return None


def timed_out(context: ErrorContext) -> RequestTimeout:
    if not context.timeout_seconds:
        return RequestTimeout("the API did not answer")
    return RequestTimeout(
        f"the API did not answer: nothing arrived for {context.timeout_seconds:g} s "
        "(MINI_CLAUDE_STREAM_IDLE_TIMEOUT)"
    )


def connection_lost(cause: BaseException, context: ErrorContext) -> ConnectionLost:
    """A refused connection and a stream dropped midway read alike to the user."""
    where = f" at {context.base_url}" if context.base_url else ""
    root = _root_cause(cause)
    detail = f" ({type(root).__name__}: {root})" if str(root) else f" ({type(root).__name__})"
    if _never_connected(cause):  # nothing listens there: not "lost"
        return ConnectionLost(
            clean_message(f"could not connect to the API{where}{detail}", context.secrets)
        )
    return ConnectionLost(
        clean_message(f"the connection to the API{where} was lost{detail}", context.secrets)
    )


def _never_connected(exc: BaseException) -> bool:
    """Whether the failure came before any connection existed (refused, no route, DNS)."""
    import httpx2

    for _ in range(10):
        if isinstance(exc, httpx2.ConnectError | ConnectionRefusedError):
            return True
        if exc.__cause__ is None:
            return False
        exc = exc.__cause__
    return False


def _root_cause(exc: BaseException) -> BaseException:
    for _ in range(10):
        if exc.__cause__ is None:
            break
        exc = exc.__cause__
    return exc
