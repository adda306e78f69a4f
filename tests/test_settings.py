from pathlib import Path

import pytest

from mini_claude.models import DEFAULT_WINDOW, window_for_model
from mini_claude.project.dotenv_rule import layered_environment
from mini_claude.settings import (
    Settings,
    SettingsError,
    from_environment,
)


def test_provider_is_anthropic_when_its_key_is_set() -> None:
    s = from_environment({"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "o"})
    assert s.provider == "anthropic"
    assert s.model.startswith("claude")


def test_provider_is_openai_with_only_a_base_url() -> None:
    s = from_environment({"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"})
    assert s.provider == "openai"
    assert s.base_urls == {"openai": "http://127.0.0.1:11434/v1"}


def test_no_provider_says_what_to_set() -> None:
    with pytest.raises(SettingsError) as info:
        from_environment({})
    assert "ANTHROPIC_API_KEY" in str(info.value) and "OPENAI_API_KEY" in str(info.value)


def test_flags_override_environment() -> None:
    env = {"ANTHROPIC_API_KEY": "k", "MINI_CLAUDE_MODEL": "claude-haiku-4-5"}
    s = from_environment(env, provider="openai", model="gpt-4o")
    assert (s.provider, s.model) == ("openai", "gpt-4o")


def test_window_from_table_override_and_default() -> None:
    assert window_for_model("claude-sonnet-4-5") == 200_000
    assert window_for_model("some-local-model") == DEFAULT_WINDOW
    s = from_environment({"ANTHROPIC_API_KEY": "k", "MINI_CLAUDE_CONTEXT_WINDOW": "24,000"})
    assert s.window == 24_000


def test_a_compaction_leaves_room_below_a_capped_threshold() -> None:
    """On a large window the threshold is capped; a target of 30% of the window alone would
    refill most of the room below it, so the target also leaves a share of the room above the
    fixed prompt (system prompt and tools) to the threshold."""
    large = from_environment({"ANTHROPIC_API_KEY": "k", "MINI_CLAUDE_CONTEXT_WINDOW": "200000"})
    share, fixed = large.post_compact_threshold_share, 3_000
    assert large.autocompact_tokens == 24_000
    assert large.post_compact_target(fixed) == int(fixed + 21_000 * share) < 180_000 * 0.30
    small = from_environment({"ANTHROPIC_API_KEY": "k", "MINI_CLAUDE_CONTEXT_WINDOW": "32000"})
    assert small.autocompact_tokens == int(small.effective_window * 0.85) < 24_000
    assert small.post_compact_target(fixed) == int(
        min(small.effective_window * 0.30, fixed + (small.autocompact_tokens - fixed) * share))
    wide = from_environment({"ANTHROPIC_API_KEY": "k", "MINI_CLAUDE_CONTEXT_WINDOW": "200000",
                             "MINI_CLAUDE_POST_COMPACT_THRESHOLD_SHARE": "1"})
    assert wide.post_compact_target(fixed) == min(int(180_000 * 0.30), wide.autocompact_tokens)


def test_reserve_is_capped_at_a_quarter_of_small_windows() -> None:
    assert Settings(context_window=200_000).effective_window == 180_000
    assert Settings(context_window=24_000).reserve == 6_000
    assert Settings(context_window=24_000).effective_window == 18_000


def test_percentages_accept_both_forms_and_switches_parse() -> None:
    env = {
        "ANTHROPIC_API_KEY": "k",
        "MINI_CLAUDE_AUTOCOMPACT_PCT": "70",
        "MINI_CLAUDE_AUTO_COMPACT": "0",
        "MINI_CLAUDE_SNIP_PCT": "0.5",
    }
    s = from_environment(env)
    assert s.autocompact_pct == pytest.approx(0.70)
    assert s.snip_pct == pytest.approx(0.5)
    assert s.auto_compact is False


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MINI_CLAUDE_CONTEXT_WINDOW", "big"),
        ("MINI_CLAUDE_PROVIDER", "gemini"),
        ("MINI_CLAUDE_AUTO_COMPACT", "maybe"),
        ("MINI_CLAUDE_AUTOCOMPACT_PCT", "150"),
        ("MINI_CLAUDE_CACHE_KEEPALIVE_PINGS", "-1"),
        ("MINI_CLAUDE_CACHE_KEEPALIVE_SECONDS", "0"),
    ],
)
def test_bad_values_name_the_variable(name: str, value: str) -> None:
    with pytest.raises(SettingsError) as info:
        from_environment({"ANTHROPIC_API_KEY": "k", name: value})
    assert name in str(info.value)


def test_keepalive_pings_can_be_turned_off() -> None:
    env = {"ANTHROPIC_API_KEY": "k", "MINI_CLAUDE_CACHE_KEEPALIVE_PINGS": "0"}
    assert from_environment(env).cache_keepalive_pings == 0


def test_api_key_not_in_repr() -> None:
    s = from_environment({"ANTHROPIC_API_KEY": "sk-ant-secret-value"})
    assert "sk-ant-secret-value" not in repr(s)


def test_dotenv_project_file_beats_home_file(tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "h"
    project.mkdir()
    home.mkdir()
    (project / ".env").write_text("MINI_CLAUDE_MODEL=from-project\n")
    (home / ".env").write_text("MINI_CLAUDE_MODEL=from-home\nOPENAI_API_KEY=o\n")
    values = layered_environment(project, {}, home).values
    assert values["MINI_CLAUDE_MODEL"] == "from-project"
    assert values["OPENAI_API_KEY"] == "o"


def test_the_summary_threshold_is_capped_on_large_windows_only() -> None:
    """A large window summarizes at 24K tokens (a smaller standing context is read on every
    call); a small one keeps its share of the window."""
    large = Settings(context_window=200_000)
    assert large.autocompact_tokens == 24_000
    small = Settings(context_window=32_000)
    assert small.autocompact_tokens == int(small.effective_window * small.autocompact_pct)
    raised = from_environment({"ANTHROPIC_API_KEY": "k", "MINI_CLAUDE_CONTEXT_WINDOW": "200000",
                               "MINI_CLAUDE_AUTOCOMPACT_MAX_TOKENS": "1000000"})
    assert raised.autocompact_tokens == int(raised.effective_window * raised.autocompact_pct)
    batch = from_environment({"ANTHROPIC_API_KEY": "k", "MINI_CLAUDE_BUDGET_MIN_FREE_PCT": "10"})
    assert batch.budget_min_free_pct == pytest.approx(0.10)
