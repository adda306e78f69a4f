"""What a `.env` file may set: the user's own file anything, a project's file less.

A repository is not trusted: its `.env` travels with a clone. What it may set is a word
each field of :class:`~mini_claude.settings.Settings` declares beside its default:

- ``allowed``: tuning that changes no guard and touches no other session's data;
- ``stricter``: taken only when it is stricter than the value the user would have
  otherwise (e.g. saved results kept longer, never deleted sooner);
- ``own key``: a provider, or a base URL, only together with the key for it set in that
  same file and that key being the one sent (the environment does not set its own): a
  repository can never route the user's own key to a host it names, nor switch the
  provider a user's key is sent to;
- ``refused``: never from a project file (the home, hook time limits);
- ``learnt``: no setting at all, filled in at run time.

A project file's values are never built from the user's environment: ``${VAR}`` in it
expands only variables defined earlier in that same file. An empty value is no value
(``ANTHROPIC_API_KEY=`` does not hide the user's key).

The home `.env` (``$MINI_CLAUDE_HOME/.env``) is the user's and may set anything.
The real environment wins over both files. Each ignored setting gets one warning line.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from mini_claude.models import PROVIDERS, key_variables
from mini_claude.safe_read import read_text_limited
from mini_claude.settings import (
    NOT_FROM_ENVIRONMENT,
    PROJECT_ENV_POLICY,
    STRICTER_WHEN,
    Policy,
    Settings,
    SettingsError,
    field_of_variable,
    parse,
)

DEFAULT_HOME = "~/.mini-claude"

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def key_for_base_url() -> dict[str, str]:
    """Each provider's endpoint variable -> its key variable (the table read when asked)."""
    return {row.base_url_variable: row.key_variable for row in PROVIDERS.values()}


@dataclass
class LayeredEnvironment:
    """The values settings are built from, and why any project value was left out."""

    values: dict[str, str]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def home_folder(environ: Mapping[str, str]) -> Path:
    """The home, from the real environment only (never from a `.env` file)."""
    return Path(environ.get("MINI_CLAUDE_HOME", "").strip() or DEFAULT_HOME).expanduser()


def policy_of(env_name: str) -> Policy | None:
    """The project rule for an environment name; None for names no setting reads."""
    name = field_of_variable(env_name)
    if name is None or name in NOT_FROM_ENVIRONMENT:
        return None
    return PROJECT_ENV_POLICY[name]


def _parse_file(text: str, *, interpolate: bool) -> dict[str, str]:
    from dotenv import dotenv_values

    raw = dotenv_values(stream=io.StringIO(text), interpolate=interpolate)
    return {k: v for k, v in raw.items() if v is not None}


def read_user_file(path: Path, warnings: list[str]) -> dict[str, str]:
    """The user's own `.env`: python-dotenv's usual rules, ``${VAR}`` from the environment."""
    text = _read(path, warnings)
    return {} if text is None else _parse_file(text, interpolate=True)


def read_project_file(path: Path, warnings: list[str]) -> dict[str, str]:
    """A project `.env`: ``${VAR}`` expands only names defined earlier in the same file."""
    text = _read(path, warnings)
    if text is None:
        return {}
    own: dict[str, str] = {}
    for name, value in _parse_file(text, interpolate=False).items():
        own[name] = _VARIABLE.sub(lambda m: own.get(m.group(1)) or (m.group(2) or ""), value)
    return own


def _read(path: Path, warnings: list[str]) -> str | None:
    try:
        return read_text_limited(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        warnings.append(f"ignored {path}: {exc.strerror or exc}")
        return None


def _is_set(values: Mapping[str, str], name: str) -> bool:
    return bool(values.get(name, "").strip())


def layered_environment(
    cwd: Path, environ: Mapping[str, str], home: Path | None = None
) -> LayeredEnvironment:
    """Environment over project `.env` over home `.env`, with the project rule applied."""
    home_file = (home or home_folder(environ)) / ".env"
    project_file = cwd / ".env"
    warnings: list[str] = []
    notes: list[str] = []
    home_values = read_user_file(home_file, warnings)
    project_values = (
        {} if _same_file(project_file, home_file) else read_project_file(project_file, warnings)
    )
    user_values = {**home_values, **environ}
    kept = _apply_policy(project_values, user_values, environ, project_file, warnings, notes)
    merged = dict(home_values)
    merged.update(kept)
    merged.update(environ)
    return LayeredEnvironment(merged, warnings, notes)


def _apply_policy(
    project: dict[str, str],
    user: Mapping[str, str],
    environ: Mapping[str, str],
    path: Path,
    warnings: list[str],
    notes: list[str],
) -> dict[str, str]:
    """The project values the table lets through; one warning per value left out."""
    project = {k: v for k, v in project.items() if v.strip()}  # empty is no value
    # The keys that will be sent because this file set them (it beats the home file only).
    own_keys = {k for k in key_variables() if k in project and not _is_set(environ, k)}
    kept: dict[str, str] = {}
    for env_name, value in project.items():
        policy = policy_of(env_name)
        if policy is None or policy == "allowed":
            kept[env_name] = value
            continue
        why = _refusal(env_name, value, policy, own_keys, user)
        if why is None:
            kept[env_name] = value
        elif _is_set(environ, env_name) and policy != "refused":
            continue  # the environment's own value wins anyway: nothing to warn about
        else:
            warnings.append(f"ignored {env_name} from {path}: {why}")
    for url_name, key_name in key_for_base_url().items():
        if url_name in kept and url_name not in environ:
            notes.append(f"using {url_name} and {key_name} from {path}")
    return kept


def _refusal(
    env_name: str, value: str, policy: Policy, own_keys: set[str], user: Mapping[str, str]
) -> str | None:
    """Why a project value is not taken, or None when it is."""
    if policy == "refused":
        return "a project .env may not set it (set it in the environment or the home .env)"
    if policy == "stricter":
        return _not_stricter(env_name, value, user)
    key_name = key_for_base_url().get(env_name)
    if key_name is not None:
        if key_name in own_keys:
            return None
        return f"a project .env may set a base URL only together with {key_name} in the same file"
    row = PROVIDERS.get(value.strip())
    key_name = row.key_variable if row is not None else ""
    if key_name in own_keys:
        return None
    return (
        "a project .env may choose the provider only together with that provider's key "
        "in the same file"
    )


def _not_stricter(env_name: str, value: str, user: Mapping[str, str]) -> str | None:
    name = field_of_variable(env_name)
    assert name is not None  # only a setting has a policy to be stricter by
    default = getattr(Settings(), name)
    try:
        wanted = parse(name, value, default)
        current = parse(name, user[env_name], default) if _is_set(user, env_name) else default
    except SettingsError:
        return None  # the settings loader reports a bad value in one line
    if _stricter(name, wanted, current):
        return None
    return f"a project .env may only make it stricter (it is {current})"


def _stricter(name: str, project: Any, user: Any) -> bool:
    """Is the project's value at least as strict as the user's, the way the field says?"""
    when = next(f.metadata[STRICTER_WHEN] for f in fields(Settings) if f.name == name)
    return bool(project >= user) if when == "higher" else bool(project <= user)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False

