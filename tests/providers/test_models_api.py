"""Windows from the Models API: every model gets its real window, the table is the fallback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mini_claude import model_facts as models_api
from mini_claude.model_facts import (
    FactsCache,
    ModelFacts,
    facts_from_anthropic,
    facts_from_openai_list,
)
from mini_claude.models import DEFAULT_WINDOW, PROVIDERS, imported
from mini_claude.settings import Settings
from mini_claude.simulator import Simulator
from mini_claude.simulator.models_api import CatalogEntry, anthropic_model, openai_list
from tests.support.reliability import (
    closing_sessions,
    finished_text,
    make_project,
    session_settings,
    start_session,
    turn,
)

UNKNOWN = "claude-nova-9"  # in no table


def test_anthropic_model_info_gives_window_output_and_thinking_options() -> None:
    entry = CatalogEntry(UNKNOWN, 48_000, max_tokens=16_000, thinking_enabled=False)
    facts = facts_from_anthropic(anthropic_model(entry), now=5.0)
    assert (facts.window, facts.max_output) == (48_000, 16_000)
    assert (facts.thinking_adaptive, facts.thinking_enabled, facts.effort) == (True, False, True)


@pytest.mark.parametrize(
    ("flavour", "window", "field"),
    [("vllm", 32_768, "max_model_len"), ("llamacpp", 32_768, "n_ctx_train"), ("openai", None, "")],
)
def test_openai_compatible_lists_report_what_the_server_knows(
    flavour: str, window: int | None, field: str
) -> None:
    listing = openai_list([CatalogEntry("local", 32_768)], flavour)  # type: ignore[arg-type]
    facts = facts_from_openai_list(listing["data"], "local", now=1.0)
    assert facts is not None
    assert facts.window == window
    assert field in facts.source
    assert facts_from_openai_list(listing["data"], "other", now=1.0) is None


def test_cache_keeps_facts_a_week_per_endpoint_and_model(tmp_path: Path) -> None:
    settings = Settings(model=UNKNOWN, home=tmp_path, base_urls={"anthropic": "http://a"})
    cache = FactsCache(tmp_path)
    cache.store(settings, ModelFacts(UNKNOWN, 48_000, fetched_at=1_000.0))
    assert cache.load(settings, now=2_000.0) == ModelFacts(UNKNOWN, 48_000, fetched_at=1_000.0)
    assert cache.load(settings, now=1_000.0 + 8 * 24 * 3600) is None
    elsewhere = settings.with_overrides(base_urls={"anthropic": "http://b"})
    assert cache.load(elsewhere, now=2_000.0) is None
    (tmp_path / "models.json").write_text("{not json")
    assert cache.load(settings, now=2_000.0) is None


def test_unknown_model_gets_its_window_from_the_simulators_models_api(
    tmp_path: Path, simulator: Simulator
) -> None:
    """End to end over the SDK: lookup in the background, used from the next turn on,
    cached for the next session, and the setting still wins."""
    simulator.catalog[UNKNOWN] = CatalogEntry(UNKNOWN, 48_000)
    project = make_project(tmp_path / "project")
    home = tmp_path / "home"
    settings = session_settings(simulator, "anthropic", home, model=UNKNOWN)
    assert settings.window == DEFAULT_WINDOW
    with closing_sessions() as sessions:
        session = start_session(settings, project)
        sessions.append(session)
        assert session.model_lookup is not None
        facts = session.model_lookup.wait(timeout=20)
        assert facts is not None and facts.window == 48_000
        assert finished_text(turn(session.agent, "hello"))
        assert session.agent.settings.window == 48_000
        assert session.agent.status().window == 48_000
        assert "Models API" in session.agent.settings.window_source
        assert session.agent.settings.reported_thinking == "adaptive"  # from its capabilities
        assert [r.path for r in simulator.model_requests] == [f"/v1/models/{UNKNOWN}"]
        assert simulator.model_requests[0].protocol == "anthropic"
        cached = json.loads((home / "models.json").read_text())
        assert any(UNKNOWN in key for key in cached)

        again = start_session(settings, project)
        sessions.append(again)
        assert again.agent.settings.window == 48_000  # from the cache, at once
        assert len(simulator.model_requests) == 1

        pinned = start_session(settings.with_overrides(context_window=30_000), project)
        sessions.append(pinned)
        assert len(simulator.model_requests) == 1  # a window set by hand is not asked about
        assert pinned.agent.settings.window == 30_000
        assert pinned.agent.settings.window_source == "MINI_CLAUDE_CONTEXT_WINDOW"


@pytest.mark.parametrize(("flavour", "expected"), [("vllm", 24_576), ("openai", DEFAULT_WINDOW)])
def test_openai_compatible_server_window(
    tmp_path: Path, simulator: Simulator, flavour: str, expected: int
) -> None:
    simulator.catalog["local-coder"] = CatalogEntry("local-coder", 24_576)
    simulator.models_flavour = flavour  # type: ignore[assignment]
    project = make_project(tmp_path / "project")
    settings = session_settings(simulator, "openai", tmp_path / "home", model="local-coder")
    with closing_sessions() as sessions:
        session = start_session(settings, project)
        sessions.append(session)
        assert session.model_lookup is not None
        session.model_lookup.wait(timeout=20)
        assert finished_text(turn(session.agent, "hello"))
        assert session.agent.settings.window == expected
        assert [r.path for r in simulator.model_requests] == ["/v1/models"]


def test_a_server_without_a_models_endpoint_leaves_the_default(
    tmp_path: Path, simulator: Simulator
) -> None:
    project = make_project(tmp_path / "project")
    settings = session_settings(simulator, "anthropic", tmp_path / "home", model=UNKNOWN)
    with closing_sessions() as sessions:
        session = start_session(settings, project)
        sessions.append(session)
        assert session.model_lookup is not None
        assert session.model_lookup.wait(timeout=20) is None  # 404: not in the catalog
        assert finished_text(turn(session.agent, "hello"))
        assert session.agent.settings.window == DEFAULT_WINDOW
        assert "default" in session.agent.settings.window_source


def test_each_provider_row_names_its_own_lookup() -> None:
    """A provider brings its Models API lookup in its row, beside its adapter: nothing
    else in the code branches on the provider's name to ask about a model."""
    for row in PROVIDERS.values():
        lookup = imported(row.model_facts)
        assert callable(lookup) and lookup.__module__ == imported(row.adapter).__module__
    source = Path(models_api.__file__).read_text(encoding="utf-8")
    assert all(f'"{name}"' not in source for name in PROVIDERS)
