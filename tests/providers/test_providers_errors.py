"""Error classification, retry-after parsing and redaction, as pure functions."""

from __future__ import annotations

from email.utils import formatdate

import pytest

from mini_claude.protocol import (
    AuthenticationFailed,
    BadRequest,
    ModelNotFound,
    Overloaded,
    PromptTooLong,
    ProviderError,
    RateLimited,
    RequestTimeout,
    ServerError,
)
from mini_claude.providers.errors import (
    ErrorContext,
    Failure,
    classify,
    prompt_too_long,
    retry_after_seconds,
)
from mini_claude.providers.redact import clean_message, redact
from mini_claude.secrets import MASK

KEY = "sk-proj-Abc123Def456Ghi789Jkl012Mno345"
CONTEXT = ErrorContext("OPENAI_API_KEY", "OPENAI_BASE_URL", secrets=(KEY,))


def classified(
    status: int | None, message: str, *kinds: str, headers: dict[str, str] | None = None
) -> ProviderError:
    return classify(Failure(status, kinds, message, headers), CONTEXT)


@pytest.mark.parametrize(
    ("status", "kinds", "expected"),
    [
        (429, ("rate_limit_error",), RateLimited),
        (529, ("overloaded_error",), Overloaded),
        (200, ("overloaded_error",), Overloaded),
        (None, ("overloaded_error",), Overloaded),
        (500, ("api_error",), ServerError),
        (503, (), ServerError),
        (200, ("api_error",), ServerError),
        (401, ("authentication_error",), AuthenticationFailed),
        (403, ("permission_error",), AuthenticationFailed),
        (408, (), RequestTimeout),
        (404, ("not_found_error",), ModelNotFound),
        (400, ("invalid_request_error",), BadRequest),
    ],
)
def test_status_and_type_pick_the_error_class(
    status: int | None, kinds: tuple[str, ...], expected: type[ProviderError]
) -> None:
    error = classified(status, "something happened", *kinds)
    assert type(error) is expected
    assert error.status == status
    assert "something happened" in error.message


def test_retryable_classes_are_the_transient_ones() -> None:
    assert classified(429, "x").retryable and classified(529, "x").retryable
    assert classified(502, "x").retryable
    assert not classified(400, "x").retryable and not classified(401, "x").retryable


def test_anthropic_prompt_too_long_carries_the_numbers() -> None:
    error = classified(
        400, "prompt is too long: 210345 tokens > 200000 maximum", "invalid_request_error"
    )
    assert isinstance(error, PromptTooLong)
    assert (error.tokens, error.maximum) == (210345, 200000)
    assert error.message == "prompt is too long: 210345 tokens > 200000 maximum"
    assert not error.retryable


def test_openai_context_length_code_is_prompt_too_long() -> None:
    text = (
        "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 130512 tokens. Please reduce the length of the messages."
    )
    error = classified(400, text, "invalid_request_error", "context_length_exceeded")
    assert isinstance(error, PromptTooLong)
    assert (error.tokens, error.maximum) == (130512, 128000)

    bare = classified(400, "too much", "context_length_exceeded")
    assert isinstance(bare, PromptTooLong) and bare.tokens is None and bare.maximum is None


def test_prompt_too_long_ignores_unrelated_messages() -> None:
    assert prompt_too_long("max_tokens must be positive", ["invalid_request_error"]) is None


def test_authentication_hint_names_the_variables() -> None:
    error = classified(401, "invalid x-api-key", "authentication_error")
    assert "OPENAI_API_KEY" in error.message and "OPENAI_BASE_URL" in error.message


def test_retry_after_ms_wins_over_retry_after() -> None:
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_seconds({"Retry-After": "3"}) == 3.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None and retry_after_seconds(None) is None


def test_retry_after_as_http_date() -> None:
    now = 1_700_000_000.0
    header = formatdate(now + 30, usegmt=True)
    assert retry_after_seconds({"retry-after": header}, now=now) == pytest.approx(30, abs=1)


def test_retryable_errors_carry_retry_after_from_headers() -> None:
    error = classified(429, "slow down", headers={"retry-after-ms": "1500"})
    assert error.retry_after == 1.5
    assert classified(429, "slow down").retry_after is None


def test_messages_are_one_line_and_never_contain_the_key() -> None:
    echoed = f"Incorrect API key provided: {KEY[:8]}*********{KEY[-4:]}.\nSee the docs.\n"
    error = classified(401, echoed + f" full={KEY}")
    assert "\n" not in error.message
    assert KEY not in error.message and KEY[:8] not in error.message
    assert MASK in error.message


@pytest.mark.parametrize(
    "secret_text",
    [
        "sk-ant-api03-AbCdEf0123456789-xyz",
        "sk-proj-****************************wxyz",
        "Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345",
        "gsk_0123456789abcdefABCDEF",
    ],
)
def test_key_shapes_are_redacted(secret_text: str) -> None:
    cleaned = redact(f"before {secret_text} after")
    assert cleaned.startswith("before ") and cleaned.endswith(" after")
    assert MASK in cleaned
    assert secret_text.split()[-1] not in cleaned


def test_configured_key_of_any_shape_is_redacted() -> None:
    key = "local-token-0f9e8d7c6b5a4"
    assert key not in redact(f"token {key} refused", [key])
    assert key[:10] not in redact(f"token {key[:10]}... refused", [key])
    assert redact("nothing secret here", [key, None, ""]) == "nothing secret here"


def test_clean_message_caps_length() -> None:
    assert len(clean_message("word " * 500)) <= 400
