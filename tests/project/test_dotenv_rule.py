"""The project `.env` table: every setting has a word, and each word does what it says."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_claude.project.dotenv_rule import (
    PROJECT_ENV_POLICY,
    STRICTER,
    documented_fields,
    layered_environment,
)
from mini_claude.settings import SettingsError, from_environment


def test_every_setting_has_a_project_policy() -> None:
    """A new setting must be classified before a repository can set it."""
    assert sorted(documented_fields()) == sorted(PROJECT_ENV_POLICY)
    stricter = {name for name, word in PROJECT_ENV_POLICY.items() if word == "stricter"}
    assert stricter == set(STRICTER)


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


@pytest.mark.parametrize(
    ("name", "value"),
    [
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
