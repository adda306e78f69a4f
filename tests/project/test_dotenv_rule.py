"""The project `.env` table: every setting has a word, and each word does what it says."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

import pytest

from mini_claude.project.dotenv_rule import layered_environment
from mini_claude.settings import (
    STRICTER_WHEN,
    SettingsError,
    allowed,
    from_environment,
    policy_of_field,
    stricter,
)


def test_a_setting_without_a_project_policy_fails_loudly() -> None:
    """A new setting must be classified before a repository can set it: the field itself
    says, and one without a word stops the import."""

    @dataclass(frozen=True)
    class Knobs:
        classified: int = allowed(3)
        forgotten: int = 4

    found = {f.name: f.metadata for f in fields(Knobs)}
    assert policy_of_field("classified", found["classified"]) == "allowed"
    with pytest.raises(TypeError, match=r"'forgotten' has no project \.env policy"):
        policy_of_field("forgotten", found["forgotten"])


def test_a_stricter_setting_says_which_way_is_stricter() -> None:
    @dataclass(frozen=True)
    class Knobs:
        cap: int = stricter(10, "lower")

    (cap,) = fields(Knobs)
    assert cap.metadata[STRICTER_WHEN] == "lower"
    assert Knobs().cap == 10


def layered(tmp_path: Path, project: str, environ: dict[str, str] | None = None,
            home: str = "") -> dict[str, str]:
    (tmp_path / "p").mkdir(exist_ok=True)
    (tmp_path / "h").mkdir(exist_ok=True)
    (tmp_path / "p" / ".env").write_text(project)
    (tmp_path / "h" / ".env").write_text(home)
    return layered_environment(tmp_path / "p", environ or {}, tmp_path / "h").values


def test_refused_and_stricter_settings(tmp_path: Path) -> None:
    values = layered(
        tmp_path,
        "MINI_CLAUDE_HOOK_TIMEOUT_SECONDS=600\nMINI_CLAUDE_HOME=/tmp/x\n"
        "MINI_CLAUDE_RESULT_RETENTION_DAYS=5\nMINI_CLAUDE_SNIP_PCT=50\n",
    )
    assert "MINI_CLAUDE_HOOK_TIMEOUT_SECONDS" not in values
    assert "MINI_CLAUDE_HOME" not in values
    assert "MINI_CLAUDE_RESULT_RETENTION_DAYS" not in values  # shorter than the default 30
    assert values["MINI_CLAUDE_SNIP_PCT"] == "50"
    longer = layered(tmp_path, "MINI_CLAUDE_RESULT_RETENTION_DAYS=90\n",
                     home="MINI_CLAUDE_RESULT_RETENTION_DAYS=60\n")
    assert longer["MINI_CLAUDE_RESULT_RETENTION_DAYS"] == "90"
    shorter = layered(tmp_path, "MINI_CLAUDE_RESULT_RETENTION_DAYS=50\n",
                      home="MINI_CLAUDE_RESULT_RETENTION_DAYS=60\n")
    assert shorter["MINI_CLAUDE_RESULT_RETENTION_DAYS"] == "60"


def test_a_project_key_with_its_url_and_provider_is_its_own(tmp_path: Path) -> None:
    values = layered(
        tmp_path,
        "MINI_CLAUDE_PROVIDER=openai\nOPENAI_BASE_URL=http://local:8080/v1\nOPENAI_API_KEY=x\n",
        {"ANTHROPIC_API_KEY": "users"},
    )
    assert values["MINI_CLAUDE_PROVIDER"] == "openai"
    assert values["OPENAI_BASE_URL"] == "http://local:8080/v1"
    assert values["OPENAI_API_KEY"] == "x"


def test_a_project_env_can_narrow_web_fetch_but_never_widen_it(tmp_path: Path) -> None:
    """A hostile repository would open the address guard, or let a page hold memory, the
    turn or a stale answer longer; it may only tighten those limits."""
    wider = layered(
        tmp_path,
        "MINI_CLAUDE_WEB_FETCH_ALLOW_PRIVATE=0.0.0.0/0,169.254.169.254\n"
        "MINI_CLAUDE_WEB_FETCH_MAX_BYTES=999999999\n"
        "MINI_CLAUDE_WEB_FETCH_TIMEOUT_SECONDS=3600\n"
        "MINI_CLAUDE_WEB_FETCH_CACHE_SECONDS=86400\n"
        "MINI_CLAUDE_SHELL_PROGRESS_INTERVAL_SECONDS=0\n"
        "MINI_CLAUDE_VISION=0\n",
    )
    assert [name for name in wider if "WEB_FETCH" in name or "PROGRESS" in name] == []
    assert wider["MINI_CLAUDE_VISION"] == "0"
    narrower = layered(
        tmp_path,
        "MINI_CLAUDE_WEB_FETCH_MAX_BYTES=1000\nMINI_CLAUDE_WEB_FETCH_TIMEOUT_SECONDS=5\n"
        "MINI_CLAUDE_WEB_FETCH_CACHE_SECONDS=10\nMINI_CLAUDE_SHELL_PROGRESS_INTERVAL_SECONDS=2\n",
    )
    assert narrower["MINI_CLAUDE_WEB_FETCH_MAX_BYTES"] == "1000"
    assert narrower["MINI_CLAUDE_WEB_FETCH_TIMEOUT_SECONDS"] == "5"
    assert narrower["MINI_CLAUDE_WEB_FETCH_CACHE_SECONDS"] == "10"
    assert narrower["MINI_CLAUDE_SHELL_PROGRESS_INTERVAL_SECONDS"] == "2"
    users = layered(tmp_path, "MINI_CLAUDE_WEB_FETCH_ALLOW_PRIVATE=10.0.0.0/8\n",
                    home="MINI_CLAUDE_WEB_FETCH_ALLOW_PRIVATE=127.0.0.1\n")
    assert users["MINI_CLAUDE_WEB_FETCH_ALLOW_PRIVATE"] == "127.0.0.1"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MINI_CLAUDE_WEB_FETCH_TIMEOUT_SECONDS", "0"),
        ("MINI_CLAUDE_HOOK_TIMEOUT_SECONDS", "-1"),
        ("MINI_CLAUDE_HOOK_TIMEOUT_SECONDS", "0"),
        ("MINI_CLAUDE_HOOK_TIMEOUT_SECONDS", "nan"),
        ("MINI_CLAUDE_SHELL_TIMEOUT_SECONDS", "-3"),
        ("MINI_CLAUDE_RESULT_RETENTION_DAYS", "0"),
    ],
)
def test_a_guarding_limit_is_never_zero_or_negative(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=name):
        from_environment({"ANTHROPIC_API_KEY": "k", name: value})
