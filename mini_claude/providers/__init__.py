"""Provider adapters behind one factory.

Importing this package imports no SDK: ``anthropic`` alone costs over a
second, and ``mini-claude --help`` must not pay it. The adapters import their
SDK on first use; :func:`preload_sdk` lets the REPL pay that cost in a
background thread while the user types.
"""

from __future__ import annotations

import importlib

from mini_claude.protocol import AuthenticationFailed, Provider
from mini_claude.providers.retry import RetryingProvider
from mini_claude.settings import Settings

SDK_MODULES: dict[str, str] = {"anthropic": "anthropic", "openai": "openai"}
# Key sent to a server that needs none; the SDKs refuse to run without one.
PLACEHOLDER_KEY = "not-needed"


def create_provider(settings: Settings) -> Provider:
    """The configured adapter, wrapped in retries."""
    inner: Provider
    if settings.provider == "anthropic":
        from mini_claude.providers.anthropic import AnthropicProvider

        inner = AnthropicProvider(
            api_key=_api_key(settings, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
            base_url=settings.anthropic_base_url,
            timeout_seconds=_read_timeout(settings),
            cache_diagnostics=settings.cache_diagnostics,
        )
    else:
        from mini_claude.providers.openai import OpenAIProvider

        inner = OpenAIProvider(
            api_key=_api_key(settings, "OPENAI_API_KEY", "OPENAI_BASE_URL"),
            base_url=settings.openai_base_url,
            timeout_seconds=_read_timeout(settings),
        )
    return RetryingProvider(inner, max_retries=settings.max_retries)


def _read_timeout(settings: Settings) -> float:
    """How long the transport waits for the next bytes: the idle limit, within the request's."""
    return min(settings.request_timeout_seconds, settings.stream_idle_timeout_seconds)


def _api_key(settings: Settings, key_variable: str, base_url_variable: str) -> str:
    """The configured key; a local server behind a base URL may need none."""
    if settings.api_key:
        return settings.api_key
    if settings.base_url:
        return PLACEHOLDER_KEY
    raise AuthenticationFailed(
        f"no API key for {settings.provider}: set {key_variable} "
        f"(or {base_url_variable} for a server that needs no key)"
    )


def preload_sdk(provider_name: str) -> None:
    """Import the provider's SDK now, so the first request does not wait for it."""
    module = SDK_MODULES.get(provider_name)
    if module is not None:
        importlib.import_module(module)


__all__ = ["PLACEHOLDER_KEY", "RetryingProvider", "create_provider", "preload_sdk"]
