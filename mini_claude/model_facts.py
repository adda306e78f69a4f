"""What the provider says about a model: its window, its output limit, its thinking options.

Every model is asked of the provider's Models API in a background thread (the
prompt never waits for it; the table in ``settings`` answers until then, and
whenever the provider cannot say), and the answer is cached under the home
folder so the next session knows it at once:

- Anthropic ``GET /v1/models/{id}``: ``max_input_tokens``, ``max_tokens`` and
  ``capabilities`` (thinking types, effort);
- OpenAI-compatible ``GET /v1/models``: OpenAI's own entries carry no window, vLLM
  adds ``max_model_len`` and llama.cpp's server ``meta.n_ctx_train``.

Any failure (no such endpoint, an old server, no network) leaves the table's
answer in place; it is never an error the user has to read. A window a server
proved by refusing a prompt is cached here too, and a later Models API answer
does not replace it with a larger one.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from mini_claude.private_dirs import make_private_dirs
from mini_claude.settings import Settings

CACHE_FILE = "models.json"
CACHE_MAX_AGE_SECONDS = 7 * 24 * 3600.0
LOOKUP_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """One model as its provider describes it; None where the provider said nothing."""

    model: str
    window: int | None = None  # prompt tokens the model accepts
    max_output: int | None = None
    thinking_adaptive: bool | None = None
    thinking_enabled: bool | None = None
    effort: bool | None = None
    source: str = "Models API"  # which field the window came from, for /context
    fetched_at: float = 0.0
    rejected: bool = False  # the window is the maximum a server gave when it refused a prompt

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ModelFacts | None:
        names = {f.name for f in fields(cls)}
        try:
            return cls(**{k: v for k, v in data.items() if k in names})
        except TypeError:
            return None


# settings, API key, the time now -> the facts (the adapter's ``model_facts``)
FactsLookup = Callable[[Settings, str, float], ModelFacts | None]


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _supported(node: Any, *path: str) -> bool | None:
    for name in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(name)
    if isinstance(node, Mapping):
        node = node.get("supported")
    return node if isinstance(node, bool) else None


def facts_from_anthropic(data: Mapping[str, Any], now: float) -> ModelFacts:
    """``ModelInfo`` JSON (``anthropic/types/model_info.py``) to facts."""
    capabilities = data.get("capabilities")
    return ModelFacts(
        model=str(data.get("id", "")),
        window=_positive(data.get("max_input_tokens")),
        max_output=_positive(data.get("max_tokens")),
        thinking_adaptive=_supported(capabilities, "thinking", "types", "adaptive"),
        thinking_enabled=_supported(capabilities, "thinking", "types", "enabled"),
        effort=_supported(capabilities, "effort"),
        source="Anthropic Models API (max_input_tokens)",
        fetched_at=now,
    )


def facts_from_openai_list(
    entries: Sequence[Mapping[str, Any]], model: str, now: float
) -> ModelFacts | None:
    """The entry for ``model`` in a ``GET /v1/models`` list, with whatever window it reports."""
    for entry in entries:
        if entry.get("id") != model:
            continue
        vllm = _positive(entry.get("max_model_len"))
        meta = entry.get("meta")
        llama = _positive(meta.get("n_ctx_train")) if isinstance(meta, Mapping) else None
        if vllm is not None:
            return ModelFacts(model, vllm, source="server's model list (max_model_len)",
                              fetched_at=now)
        if llama is not None:
            return ModelFacts(model, llama, source="server's model list (meta.n_ctx_train)",
                              fetched_at=now)
        return ModelFacts(model, None, source="server's model list (no window)", fetched_at=now)
    return None


# ---- fetching (blocking; runs in a thread) -----------------------------------------


def fetch_facts(settings: Settings, key: str) -> ModelFacts | None:
    """Ask the configured provider about ``settings.model`` through the lookup its row in
    ``models.PROVIDERS`` names; None when it cannot say."""
    from mini_claude.models import imported, provider_row

    try:
        lookup: FactsLookup = imported(provider_row(settings.provider).model_facts)
        return lookup(settings, key, time.time())
    except Exception:  # any failure means "the provider could not say"; the table stands
        return None


# ---- the cache under the home folder -----------------------------------------------


def cache_key(settings: Settings) -> str:
    """Facts belong to one model on one endpoint (a local server names its own models)."""
    return f"{settings.provider} {settings.base_url or 'default'} {settings.model}"


class FactsCache:
    """``~/.mini-claude/models.json``: facts per endpoint and model, a week at most."""

    def __init__(self, home: Path, max_age_seconds: float = CACHE_MAX_AGE_SECONDS) -> None:
        self.path = home / CACHE_FILE
        self.max_age_seconds = max_age_seconds
        self._lock = threading.Lock()

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def load(self, settings: Settings, now: float | None = None) -> ModelFacts | None:
        raw = self._read().get(cache_key(settings))
        facts = ModelFacts.from_json(raw) if isinstance(raw, Mapping) else None
        if facts is None:
            return None
        age = (now if now is not None else time.time()) - facts.fetched_at
        return facts if 0 <= age <= self.max_age_seconds else None

    def store(self, settings: Settings, facts: ModelFacts) -> None:
        """Write atomically; a read-only home only costs the next session a lookup."""
        with self._lock, contextlib.suppress(OSError):
            data = self._read()
            if _outranked(data.get(cache_key(settings)), facts):
                return
            data[cache_key(settings)] = facts.to_json()
            make_private_dirs(self.path.parent)
            temporary = self.path.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
            os.chmod(temporary, 0o600)
            temporary.replace(self.path)


def _outranked(cached: Any, facts: ModelFacts) -> bool:
    """A window a server enforced stands against a larger one it merely advertises."""
    old = ModelFacts.from_json(cached) if isinstance(cached, Mapping) else None
    if old is None or not old.rejected or facts.rejected or old.window is None:
        return False
    return facts.window is None or facts.window > old.window


def remember_rejection(settings: Settings, window: int, source: str) -> None:
    """Cache the window a server enforced, so the next session starts with it."""
    FactsCache(settings.home).store(
        settings, ModelFacts(settings.model, window, source=source, fetched_at=time.time(),
                             rejected=True),
    )


# ---- the lookup a session starts ---------------------------------------------------


class ModelLookup:
    """Facts for the session's model: from the cache at once, else from a background thread."""

    def __init__(self, settings: Settings, key: str) -> None:
        self.cache = FactsCache(settings.home)
        self._settings = settings
        self.model = settings.model
        self._key = key
        self._facts: ModelFacts | None = self.cache.load(settings)
        self._thread: threading.Thread | None = None

    @staticmethod
    def wanted(settings: Settings) -> bool:
        """Every model (the provider knows its models better than a table can), unless the
        window is set by hand."""
        return settings.context_window is None

    def start(self) -> ModelLookup:
        """Ask in the background, unless the cache answered or the window is set by hand
        (then only a cached window some server enforced can matter)."""
        if self._facts is None and self._thread is None and self.wanted(self._settings):
            self._thread = threading.Thread(
                target=self._run, name="mini-claude-model-lookup", daemon=True
            )
            self._thread.start()
        return self

    def _run(self) -> None:
        facts = fetch_facts(self._settings, self._key)
        if facts is not None:
            self.cache.store(self._settings, facts)
            self._facts = facts

    def wait(self, timeout: float | None = None) -> ModelFacts | None:
        """For tests and the benchmark: block until the lookup is over."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self._facts

    @property
    def facts(self) -> ModelFacts | None:
        """What is known now; never blocks."""
        return self._facts
