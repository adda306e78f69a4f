"""Acme, a provider that exists only in the tests: its row and this adapter module are all
a provider is, so a test that adds them to the table shows nothing else needs to change.

Acme serves the OpenAI wire (as many hosted and local servers do), so its adapter is the
OpenAI-compatible one pointed at Acme's endpoint; its key and endpoint have their own
variables, ``ACME_API_KEY`` and ``ACME_BASE_URL``.
"""

from __future__ import annotations

from mini_claude.model_facts import ModelFacts
from mini_claude.models import ImageLimits, ProviderRow
from mini_claude.protocol import Provider
from mini_claude.providers import openai as openai_compatible
from mini_claude.settings import Settings

NAME = "acme"
KEY_VARIABLE, BASE_URL_VARIABLE = "ACME_API_KEY", "ACME_BASE_URL"
MODEL = "acme-coder-1"

ROW = ProviderRow(
    NAME, KEY_VARIABLE, BASE_URL_VARIABLE, MODEL,
    "openai", f"{__name__}:from_settings",
    model_facts=f"{__name__}:model_facts",
    chosen_by=(KEY_VARIABLE,), setup_hint=KEY_VARIABLE,
    images=ImageLimits(20 * 1024 * 1024, 2048, 2048 * 2048, tokens="tiles"),
    thinking="effort",
    current_models=(MODEL,),
)


def from_settings(settings: Settings, api_key: str, timeout_seconds: float) -> Provider:
    """Acme's adapter: the OpenAI-compatible one, at the endpoint its settings name."""
    return openai_compatible.from_settings(settings, api_key, timeout_seconds)


def model_facts(settings: Settings, api_key: str, now: float) -> ModelFacts | None:
    """Acme lists its models as OpenAI's ``GET /v1/models`` does."""
    return openai_compatible.model_facts(settings, api_key, now)
