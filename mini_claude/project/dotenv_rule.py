"""What a `.env` file may set: the user's own file anything, a project's file less.

A repository is not trusted: its `.env` travels with a clone. What it may set is one
table, :data:`PROJECT_ENV_POLICY`, with a word for every setting:

- ``allowed``: tuning that changes no guard and touches no other session's data;
- ``stricter``: taken only when it is stricter than the value the user would have
  otherwise (e.g. saved results kept longer, never deleted sooner);
- ``own key``: a provider, or a base URL, only together with the key for it set in that
  same file and that key being the one sent (the environment does not set its own): a
  repository can never route the user's own key to a host it names, nor switch the
  provider a user's key is sent to;
- ``refused``: never from a project file (the home, hook time limits).

A project file's values are never built from the user's environment: ``${VAR}`` in it
expands only variables defined earlier in that same file. An empty value is no value
(``ANTHROPIC_API_KEY=`` does not hide the user's key).

The home `.env` (``$MINI_CLAUDE_HOME/.env``) is the user's and may set anything.
The real environment wins over both files. Each ignored setting gets one warning line.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from mini_claude.safe_read import read_text_limited
from mini_claude.settings import ENV_NAMES, NOT_FROM_ENVIRONMENT, Settings, SettingsError, parse

Policy = Literal["allowed", "stricter", "own key", "refused"]

KEY_FOR_BASE_URL = {"ANTHROPIC_BASE_URL": "ANTHROPIC_API_KEY", "OPENAI_BASE_URL": "OPENAI_API_KEY"}
KEY_FOR_PROVIDER = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
DEFAULT_HOME = "~/.mini-claude"

# Every setting a project `.env` could name, and what it may do with it. A setting
# missing here is refused (tests/test_dotenv_rule.py checks every field is listed).
PROJECT_ENV_POLICY: dict[str, Policy] = {
    # where the user's key goes: only with the project's own key
    "provider": "own key",
    "anthropic_base_url": "own key",
    "openai_base_url": "own key",
    # a repository's own key (an empty one is ignored)
    "anthropic_api_key": "allowed",
    "openai_api_key": "allowed",
    # where transcripts, saved results, trust records and settings live
    "home": "refused",
    # a short limit makes a guard hook "time out"; a long one is the user's call
    "hook_timeout_seconds": "refused",
    # which of the user's variables a project's .mcp.json may read
    "mcp_project_variables": "refused",
    # off would drop the deny rules and hooks of the user's own ~/.claude/settings.json
    "read_claude_settings": "refused",
    # a short retention deletes other sessions' saved results
    "result_retention_days": "stricter",
    # model choice and context tuning: cost and quality, no guard
    "model": "allowed",
    "compact_model": "allowed",
    "task_model": "allowed",
    "fallback_model": "allowed",
    "vim_mode": "allowed",
    "task_tool": "allowed",
    "context_window": "allowed",
    "thinking_tokens": "allowed",
    "effort": "allowed",
    "reasoning_effort": "allowed",
    "max_output_tokens": "allowed",
    "output_reserve": "allowed",
    "chars_per_token": "allowed",
    "persist_threshold_bytes": "allowed",
    "truncate_chars": "allowed",
    "preview_lines": "allowed",
    "preview_bytes": "allowed",
    "read_page_window_share": "allowed",
    "budget_low_pct": "allowed",
    "budget_low_chars": "allowed",
    "budget_high_pct": "allowed",
    "budget_high_chars": "allowed",
    "budget_low_window_share": "allowed",
    "budget_high_window_share": "allowed",
    "budget_min_free_pct": "allowed",
    "snip_pct": "allowed",
    "keep_recent_results": "allowed",
    "keep_recent_per_tool": "allowed",
    "snip_min_free_pct": "allowed",
    "microcompact_idle_seconds": "allowed",
    "idle_compact_min_tokens": "allowed",
    "fold_cleared_calls": "allowed",
    "fold_keep_messages": "allowed",
    "auto_compact": "allowed",
    "autocompact_pct": "allowed",
    "autocompact_max_tokens": "allowed",
    "post_compact_target_pct": "allowed",
    "summary_max_tokens": "allowed",
    "kept_user_tokens": "allowed",
    "reattach_max_files": "allowed",
    "reattach_file_tokens": "allowed",
    "reattach_total_tokens": "allowed",
    "compact_failure_limit": "allowed",
    "summary_min_work": "allowed",
    "relief_max_tokens": "allowed",
    "relief_keep_results": "allowed",
    "summary_retry_limit": "allowed",
    "compact_tail_share": "allowed",
    "summary_keep_pointers": "allowed",
    "ledger_tokens": "allowed",
    "ledger_window_share": "allowed",
    "max_retries": "allowed",
    "cache_diagnostics": "allowed",
    "request_timeout_seconds": "allowed",
    "stream_idle_timeout_seconds": "allowed",
    "shell_timeout_seconds": "allowed",
    "tool_output_cap_chars": "allowed",
    "todo_reminder_calls": "allowed",
    "reattach_skills_tokens": "allowed",
    "verbose": "allowed",
    "mcp_connect_timeout_seconds": "allowed",
    "mcp_tool_timeout_seconds": "allowed",
    "mcp_startup_wait_seconds": "allowed",
    "notify": "allowed",
    "notify_after_seconds": "allowed",
    "stop_hook_limit": "allowed",
    "session_memory": "allowed",
    "session_memory_background": "allowed",
    "session_memory_start_pct": "allowed",
    "session_memory_defer_margin_pct": "allowed",
    "session_memory_lead_pct": "allowed",
    # a small limit would leave edits without a checkpoint, or prune other sessions' ones
    "checkpoint_max_file_bytes": "stricter",
    "checkpoint_store_max_bytes": "stricter",
    # web_fetch reaching loopback and private networks (a cloud's metadata address, a
    # database on localhost) switches its address guard off
    "web_fetch_allow_private": "refused",
    # a larger body or a longer wait lets a hostile page hold memory or the turn
    "web_fetch_max_bytes": "stricter",
    "web_fetch_timeout_seconds": "stricter",
    # a long cache keeps answering with a page the server has since changed
    "web_fetch_cache_seconds": "stricter",
    # a zero interval sends an event for every chunk a noisy command prints
    "shell_progress_interval_seconds": "stricter",
    # whether the model is sent pictures: what it can read either way is the same
    "vision": "allowed",
    # a larger cap lets a command fill the disk, or a small picture fill memory
    "shell_log_cap_bytes": "stricter",
    "image_max_pixels": "stricter",
    # a project may turn the sandbox and shell checkpoints on, never off, and never name the
    # program that would build the sandbox
    "sandbox": "stricter",
    "sandbox_fail_if_unavailable": "stricter",
    "sandbox_bwrap_path": "refused",
    # the network way out of the sandbox, and where its proxy's names lead
    "sandbox_network": "refused",
    "sandbox_proxy_resolve": "refused",
    "sandbox_proxy_port": "allowed",
    "checkpoint_commands": "stricter",
    # how the model is nudged out of a loop, and when a finished task compacts: the session's
    # own conduct, nothing of the user's is exposed
    "loop_guard": "allowed",
    "loop_guard_same_call": "allowed",
    "loop_guard_failing_command": "allowed",
    "loop_guard_reread": "allowed",
    "loop_guard_edit_undone": "allowed",
    "loop_guard_reminders": "allowed",
    "task_boundary_compact": "allowed",
    "task_boundary_compact_pct": "allowed",
}

# For a ``stricter`` setting: is the project's value at least as strict as the user's?
STRICTER: dict[str, Callable[[Any, Any], bool]] = {
    "result_retention_days": lambda project, user: project >= user,
    "checkpoint_max_file_bytes": lambda project, user: project >= user,
    "checkpoint_store_max_bytes": lambda project, user: project >= user,
    "web_fetch_max_bytes": lambda project, user: project <= user,
    "web_fetch_timeout_seconds": lambda project, user: project <= user,
    "web_fetch_cache_seconds": lambda project, user: project <= user,
    "shell_progress_interval_seconds": lambda project, user: project >= user,
    "shell_log_cap_bytes": lambda project, user: project <= user,
    "image_max_pixels": lambda project, user: project <= user,
    "sandbox": lambda project, user: project >= user,
    "sandbox_fail_if_unavailable": lambda project, user: project >= user,
    "checkpoint_commands": lambda project, user: project >= user,
}

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_FIELD_OF = {env: name for name, env in ENV_NAMES.items()}


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
    name = _FIELD_OF.get(env_name)
    if name is None or name in NOT_FROM_ENVIRONMENT:
        return None
    return PROJECT_ENV_POLICY.get(name, "refused")


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
    own_keys = {k for k in KEY_FOR_PROVIDER.values() if k in project and not _is_set(environ, k)}
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
    for url_name, key_name in KEY_FOR_BASE_URL.items():
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
    if env_name in KEY_FOR_BASE_URL:
        key_name = KEY_FOR_BASE_URL[env_name]
        if key_name in own_keys:
            return None
        return f"a project .env may set a base URL only together with {key_name} in the same file"
    key_name = KEY_FOR_PROVIDER.get(value.strip(), "")
    if key_name in own_keys:
        return None
    return (
        "a project .env may choose the provider only together with that provider's key "
        "in the same file"
    )


def _not_stricter(env_name: str, value: str, user: Mapping[str, str]) -> str | None:
    name = _FIELD_OF[env_name]
    default = getattr(Settings(), name)
    try:
        wanted = parse(name, value, default)
        current = parse(name, user[env_name], default) if _is_set(user, env_name) else default
    except SettingsError:
        return None  # the settings loader reports a bad value in one line
    if STRICTER[name](wanted, current):
        return None
    return f"a project .env may only make it stricter (it is {current})"


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def documented_fields() -> list[str]:
    """Every configurable field (for the completeness check of the table)."""
    return [f.name for f in fields(Settings) if f.name not in NOT_FROM_ENVIRONMENT]
