"""The models we know, what they cost, and the providers that serve them: one table each.

A provider is one row of :data:`PROVIDERS` (the variables that hold its key and its
endpoint, its default model, its SDK, the factory of its adapter) plus its adapter
module. Prices come from the providers' pricing pages (Anthropic: platform.claude.com
/docs/en/about-claude/pricing; OpenAI: developers.openai.com/api/docs/pricing) as of
November 2026; a model with no price row is counted in tokens only and shown as
"price unknown": a wrong dollar figure is worse than none.

Nothing here imports an SDK or an adapter (start-up time matters): a row names its
adapter factory as ``module:function``, imported only when a session starts.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

_T = TypeVar("_T")


class TokenCounts(Protocol):
    """What a price is applied to (``protocol.Usage``); declared here so this table
    stays a leaf that imports nothing of the package."""

    @property
    def input_tokens(self) -> int: ...

    @property
    def cache_read_tokens(self) -> int: ...

    @property
    def cache_write_tokens(self) -> int: ...

    @property
    def output_tokens(self) -> int: ...

    @property
    def prompt_tokens(self) -> int: ...

# ---- providers -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ImageLimits:
    """What a provider accepts of an image, and how it counts one."""

    max_bytes: int  # encoded image, before base64
    max_edge: int  # long edge in pixels
    max_pixels: int  # width × height
    # "area": width × height / 750 tokens (Anthropic); "tiles": 85 + 170 per 512-pixel tile of
    # the image fitted into 2048 and then 768 on its short side (OpenAI)
    tokens: Literal["area", "tiles"] = "area"


@dataclass(frozen=True, slots=True)
class ProviderRow:
    """One provider: how it is configured and which adapter speaks its wire format."""

    name: str
    key_variable: str  # the environment variable of its API key (the SDK's own name)
    base_url_variable: str  # ... and of its endpoint
    default_model: str
    sdk_module: str  # imported in the background while the user types the first prompt
    adapter: str  # "module:function", called as function(settings, api_key, read_timeout)
    # "module:function", called as function(settings, api_key, now) in a background thread:
    # what the provider's Models API says about the configured model (see
    # model_facts.py)
    model_facts: str
    chosen_by: tuple[str, ...]  # variables whose presence picks it when none is named
    setup_hint: str  # what to set, for "no model provider configured"
    images: ImageLimits
    # "budget": thinking_tokens as a budget (or adaptive thinking steered by effort);
    # "effort": reasoning_effort alone, thinking_tokens only turning the default effort on
    thinking: Literal["budget", "effort"] = "budget"
    # Current models, the default first: what `/model <Tab>` offers.
    current_models: tuple[str, ...] = ()
    # Short names a user types for a model (Claude Code's ``sonnet``, ``opus``, ``haiku``),
    # each with the environment variable that may name another model for it.
    aliases: Mapping[str, str] = field(default_factory=dict)
    alias_variables: Mapping[str, str] = field(default_factory=dict)


# A current mid-tier model of each provider. GPT-6.1 Terra calls tools only through the
# Responses API, so the Chat Completions default is GPT-5.6 Terra. The first row is the
# default provider.
PROVIDERS: dict[str, ProviderRow] = {
    row.name: row
    for row in (
        ProviderRow(
            "anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "claude-sonnet-5-5",
            "anthropic", "mini_claude.providers.anthropic:from_settings",
            model_facts="mini_claude.providers.anthropic:model_facts",
            chosen_by=("ANTHROPIC_API_KEY",), setup_hint="ANTHROPIC_API_KEY",
            images=ImageLimits(5 * 1024 * 1024, 1568, 1600 * 750, tokens="area"),
            current_models=("claude-sonnet-5-5", "claude-opus-5-5", "claude-haiku-5-5",
                            "claude-fable-5-1", "claude-opus-4-8", "claude-sonnet-4-6"),
            aliases={"sonnet": "claude-sonnet-5-5", "opus": "claude-opus-5-5",
                     "haiku": "claude-haiku-5-5"},
            alias_variables={"sonnet": "ANTHROPIC_DEFAULT_SONNET_MODEL",
                             "opus": "ANTHROPIC_DEFAULT_OPUS_MODEL",
                             "haiku": "ANTHROPIC_DEFAULT_HAIKU_MODEL"},
        ),
        ProviderRow(
            "openai", "OPENAI_API_KEY", "OPENAI_BASE_URL", "gpt-5.6-terra",
            "openai", "mini_claude.providers.openai:from_settings",
            model_facts="mini_claude.providers.openai:model_facts",
            chosen_by=("OPENAI_API_KEY", "OPENAI_BASE_URL"),
            setup_hint="OPENAI_API_KEY (and OPENAI_BASE_URL for an OpenAI-compatible server)",
            images=ImageLimits(20 * 1024 * 1024, 2048, 2048 * 2048, tokens="tiles"),
            thinking="effort",
            current_models=("gpt-5.6-terra", "gpt-5.6-sol", "gpt-5.6-luna", "gpt-6.1-terra",
                            "gpt-5", "gpt-5-mini", "gpt-4.1"),
        ),
    )
}
DEFAULT_PROVIDER = next(iter(PROVIDERS))


def imported(path: str) -> Any:
    """A ``module:function`` path of the provider table, imported now."""
    module, _, function = path.partition(":")
    return getattr(importlib.import_module(module), function)
DEFAULT_MODELS: dict[str, str] = {row.name: row.default_model for row in PROVIDERS.values()}


def provider_row(name: str) -> ProviderRow:
    return PROVIDERS[name]


def key_variables() -> tuple[str, ...]:
    """The variables of every provider's key, read from the table when asked (never kept
    from start-up), so each place that hides keys hides a new provider's too."""
    return tuple(row.key_variable for row in PROVIDERS.values())


# ---- names a user types ----------------------------------------------------------------

DEFAULT_ALIAS = "default"
PLAN_ALIAS = "opusplan"  # the opus model while planning, the sonnet model otherwise
_WINDOW_TAG = re.compile(r"\[\w+\]$")  # "[1m]": the long-context variant


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """What a typed model name means: the model, and another for plan mode (opusplan)."""

    model: str
    plan_model: str | None = None


def resolve_model(name: str, provider: str, environ: Mapping[str, str]) -> ModelChoice:
    """A typed name (``sonnet``, ``opus[1m]``, ``opusplan``, ``default`` or an id) as the
    provider's model ids, the way Claude Code resolves its aliases; unknown names pass
    through unchanged, so any model a server offers can still be named."""
    row = PROVIDERS[provider]
    text = name.strip()
    tag_match = _WINDOW_TAG.search(text)
    tag = tag_match.group(0) if tag_match else ""
    alias = text[: len(text) - len(tag)].lower()
    if alias == PLAN_ALIAS:
        opus, sonnet = _alias(row, "opus", environ), _alias(row, "sonnet", environ)
        if opus is not None and sonnet is not None:
            return ModelChoice(sonnet + tag, plan_model=opus + tag)
    model = _alias(row, alias, environ)
    return ModelChoice(text if model is None else model + tag)


def _alias(row: ProviderRow, alias: str, environ: Mapping[str, str]) -> str | None:
    if alias == DEFAULT_ALIAS:
        return row.default_model
    variable = row.alias_variables.get(alias)
    chosen = environ.get(variable, "").strip() if variable else ""
    return chosen or row.aliases.get(alias)


def wire_model(model: str) -> str:
    """The id sent to the server: a ``[1m]`` tag selects the window, it is no model name."""
    return _WINDOW_TAG.sub("", model.strip())


def alias_names(provider: str) -> tuple[str, ...]:
    """The short names the provider's row knows, for completion and help."""
    row = PROVIDERS[provider]
    names = [*row.aliases, DEFAULT_ALIAS]
    if {"opus", "sonnet"} <= set(row.aliases):
        names.append(PLAN_ALIAS)
    return tuple(names)


# ---- model windows ---------------------------------------------------------------------

# Known models and the prompt size they accept (tokens): the SDKs' current model lists
# (anthropic ``types/model_param.py``, openai ``types/shared/chat_model.py``) with the
# windows their providers publish. A model missing here is asked of the provider's Models
# API (``model_info``). Names match exactly, after a date suffix, a ``[1m]`` tag or an
# Ollama ``:tag`` is dropped; a key ending in "-" matches every name it starts.
# OpenAI's 1.05M-context models accept at most 922K prompt tokens, GPT-5 272K.
MODEL_WINDOWS: dict[str, int] = {
    "claude-fable-5-1": 1_000_000,
    "claude-opus-5-5": 1_000_000,
    "claude-sonnet-5-5": 1_000_000,
    "claude-haiku-5-5": 1_000_000,
    "claude-opus-5": 1_000_000,
    "claude-sonnet-5": 1_000_000,
    "claude-opus-4-8": 1_000_000,
    "claude-opus-4-6": 1_000_000,
    "claude-sonnet-4-6": 1_000_000,
    "claude-opus-4-5": 200_000,
    "claude-sonnet-4-5": 200_000,
    "claude-haiku-4-5": 200_000,
    "claude-opus-4-1": 200_000,
    "claude-opus-4": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-3-7-sonnet": 200_000,
    "claude-3-5-sonnet": 200_000,
    "claude-3-5-haiku": 200_000,
    "gpt-6.1-terra": 922_000,
    "gpt-5.6-terra": 922_000,
    "gpt-5.6-luna": 922_000,
    "gpt-5": 272_000,
    "gpt-5-mini": 272_000,
    "gpt-5-nano": 272_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
    "deepseek-chat": 128_000,
    "qwen2.5-coder": 32_768,
    "llama3.1": 128_000,
    "sim-": 200_000,
}
DEFAULT_WINDOW = 128_000

_DATE_SUFFIX = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


def model_key(model: str) -> str:
    """The name a table knows a model by: no date suffix, no ``[1m]`` or ``:tag``."""
    name = model.strip().split(":", 1)[0]
    if name.endswith("]") and "[" in name:
        name = name[: name.rindex("[")]
    return _DATE_SUFFIX.sub("", name)


def table_lookup(table: Mapping[str, _T], model: str) -> _T | None:
    """A model's row: an exact name, else the longest prefix key (one that ends in "-")."""
    key = model_key(model)
    if key in table:
        return table[key]
    prefixes = [k for k in table if k.endswith("-") and key.startswith(k)]
    return table[max(prefixes, key=len)] if prefixes else None


def known_window(model: str) -> int | None:
    """The table's window for a model, None when the table does not know it."""
    return table_lookup(MODEL_WINDOWS, model)


def window_for_model(model: str) -> int:
    """Known window for a model name, or a safe default."""
    return known_window(model) or DEFAULT_WINDOW


# ---- prices ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens.

    ``long_prompt_above`` and ``long_prompt``: a request whose prompt (input plus
    cache reads and writes) exceeds that many tokens is billed, every token of it,
    at the other rates (Haiku 5.5 above 100K, OpenAI's newest models above 272K).
    """

    input: float
    cache_write: float
    cache_read: float
    output: float
    long_prompt_above: int | None = None
    long_prompt: Price | None = None

    def for_prompt(self, prompt_tokens: int) -> Price:
        """The rates that apply to one request of this prompt size."""
        if (
            self.long_prompt is not None
            and self.long_prompt_above is not None
            and prompt_tokens > self.long_prompt_above
        ):
            return self.long_prompt
        return self

    def cost(self, usage: TokenCounts) -> float:
        """One response's cost; reasoning and thinking tokens are in ``output_tokens``."""
        rates = self.for_prompt(usage.prompt_tokens)
        return (
            usage.input_tokens * rates.input
            + usage.cache_write_tokens * rates.cache_write
            + usage.cache_read_tokens * rates.cache_read
            + usage.output_tokens * rates.output
        ) / 1_000_000


def _openai(input_: float, cached: float, output: float, *, writes: bool = True) -> Price:
    """OpenAI rates: cache writes cost 1.25x input on the models that bill them, and a
    prompt over 272K tokens costs 2x input and cache, 1.5x output (``writes`` models)."""
    write = input_ * 1.25 if writes else 0.0
    if not writes:
        return Price(input_, write, cached, output)
    long = Price(input_ * 2, write * 2, cached * 2, output * 1.5)
    return Price(input_, write, cached, output, 272_000, long)


SONNET_4 = Price(3.00, 3.75, 0.30, 15.00)
SONNET = SONNET_4  # the simulated models are priced like a Sonnet 4
OPUS_4_5 = Price(5.00, 6.25, 0.50, 25.00)
OPUS_4 = Price(15.00, 18.75, 1.50, 75.00)
FABLE_5 = Price(10.00, 12.50, 1.00, 50.00)
FABLE_5_1 = Price(10.00, 12.50, 0.25, 50.00)

# Exact names (after a date suffix is dropped); a key ending in "-" is a prefix.
# Cache writes are free on OpenAI's older models (automatic caching).
PRICES: dict[str, Price] = {
    "claude-fable-5-1": FABLE_5_1,
    "claude-mythos-5-1": FABLE_5_1,
    "claude-fable-5": FABLE_5,
    "claude-mythos-5": FABLE_5,
    "claude-opus-5-5": Price(4.00, 5.00, 0.20, 20.00),
    "claude-opus-5": OPUS_4_5,
    "claude-opus-4-8": OPUS_4_5,
    "claude-opus-4-7": OPUS_4_5,
    "claude-opus-4-6": OPUS_4_5,
    "claude-opus-4-5": OPUS_4_5,
    "claude-opus-4-1": OPUS_4,
    "claude-opus-4": OPUS_4,
    "claude-sonnet-5-5": Price(2.00, 2.50, 0.10, 10.00),  # cache reads $0.10 since 2026-10-07
    "claude-sonnet-5": Price(2.00, 2.50, 0.20, 10.00),
    "claude-sonnet-4-6": SONNET_4,
    "claude-sonnet-4-5": SONNET_4,
    "claude-sonnet-4": SONNET_4,
    "claude-3-7-sonnet": SONNET_4,
    "claude-3-5-sonnet": SONNET_4,
    "claude-haiku-5-5": Price(
        0.10, 0.125, 0.01, 0.50, 100_000, Price(0.50, 0.625, 0.05, 2.50)
    ),
    "claude-haiku-4-5": Price(1.00, 1.25, 0.10, 5.00),
    "claude-3-5-haiku": Price(0.80, 1.00, 0.08, 4.00),
    "gpt-6-astra": _openai(10.00, 1.00, 50.00),
    "gpt-6-sol": _openai(2.00, 0.20, 10.00),
    "gpt-6-luna": _openai(0.10, 0.01, 0.50),
    "gpt-6.1-terra": _openai(1.00, 0.05, 5.00),
    "gpt-5.6-sol": _openai(5.00, 0.50, 30.00),
    "gpt-5.6-terra": _openai(2.00, 0.20, 12.00),
    "gpt-5.6-luna": _openai(0.20, 0.02, 1.20),
    "gpt-5.5": _openai(5.00, 0.50, 30.00, writes=False),
    "gpt-5.4": _openai(2.50, 0.25, 15.00, writes=False),
    "gpt-5.4-mini": _openai(0.75, 0.075, 4.50, writes=False),
    "gpt-5": _openai(1.25, 0.125, 10.00, writes=False),
    "gpt-5-mini": _openai(0.25, 0.025, 2.00, writes=False),
    "gpt-5-nano": _openai(0.05, 0.005, 0.40, writes=False),
    "gpt-4.1": _openai(2.00, 0.50, 8.00, writes=False),
    "gpt-4.1-mini": _openai(0.40, 0.10, 1.60, writes=False),
    "gpt-4.1-nano": _openai(0.10, 0.025, 0.40, writes=False),
    "gpt-4o": _openai(2.50, 1.25, 10.00, writes=False),
    "gpt-4o-mini": _openai(0.15, 0.075, 0.60, writes=False),
    "o3": _openai(2.00, 0.50, 8.00, writes=False),
    "o4-mini": _openai(1.10, 0.275, 4.40, writes=False),
    "sim-": SONNET_4,
}


def price_for(model: str) -> Price | None:
    return table_lookup(PRICES, model)
