"""Provider adapters behind one factory.

Importing this package imports no SDK: ``anthropic`` alone costs over a
second, and ``mini-claude --help`` must not pay it. The adapters import their
SDK on first use; :func:`preload_sdk` lets the REPL pay that cost in a
background thread while the user types.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from mini_claude.models import PROVIDERS, ProviderRow, imported, provider_row
from mini_claude.protocol import AuthenticationFailed, Provider
from mini_claude.providers.retry import RetryingProvider
from mini_claude.settings import Settings

# Key sent to a server that needs none; the SDKs refuse to run without one.
PLACEHOLDER_KEY = "not-needed"

# settings, API key, read timeout -> the adapter for that provider's wire format
AdapterFactory = Callable[[Settings, str, float], Provider]


def create_provider(settings: Settings) -> Provider:
    """The configured provider's adapter (its row in ``models.PROVIDERS``), with retries."""
    row = provider_row(settings.provider)
    factory, timeout = adapter_factory(row), _read_timeout(settings)
    inner: Provider
    if settings.api_key_helper:
        from mini_claude.providers.key_helper import RefreshedKey

        inner = RefreshedKey(lambda key: factory(settings, key, timeout), settings)
    else:
        inner = factory(settings, _api_key(settings, row), timeout)
    return RetryingProvider(inner, max_retries=settings.max_retries)


def adapter_factory(row: ProviderRow) -> AdapterFactory:
    """The row's adapter, imported now (the SDK with it)."""
    factory: AdapterFactory = imported(row.adapter)
    return factory


def _read_timeout(settings: Settings) -> float:
    """How long the transport waits for the next bytes: the idle limit, within the request's."""
    return min(settings.request_timeout_seconds, settings.stream_idle_timeout_seconds)


def _api_key(settings: Settings, row: ProviderRow) -> str:
    """The configured key; a local server behind a base URL may need none."""
    if settings.api_key:
        return settings.api_key
    if settings.base_url:
        return PLACEHOLDER_KEY
    raise AuthenticationFailed(
        f"no API key for {settings.provider}: set {row.key_variable} "
        f"(or {row.base_url_variable} for a server that needs no key)"
    )


def preload_sdk(provider_name: str) -> None:
    """Import the provider's SDK now, so the first request does not wait for it."""
    row = PROVIDERS.get(provider_name)
    if row is not None:
        importlib.import_module(row.sdk_module)


__all__ = ["PLACEHOLDER_KEY", "RetryingProvider", "create_provider", "preload_sdk"]
