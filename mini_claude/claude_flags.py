"""Claude Code's command-line flags, as the Claude Agent SDK and Claude Code users pass them.

Each flag is either honoured or refused with one line that says why: a run that
silently ignored ``--max-budget-usd`` would spend what its caller meant to cap.
The values are read here once (``--settings`` and ``--mcp-config`` take a file or
inline JSON, tool lists take commas as the SDK joins them) so the modes that use
them share one reading.
"""

from __future__ import annotations

import argparse
import json
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mini_claude.project.claude_tools import our_tool_names
from mini_claude.safe_read import read_limited
from mini_claude.settings import ENV_NAMES

# Flags we accept so that a caller gets a reason instead of "unrecognized arguments".
UNSUPPORTED_FLAGS: dict[str, str] = {
    "--max-budget-usd": "no spending cap is enforced; use --max-turns",
    "--task-budget": "no task budget is enforced; use --max-turns",
    "--betas": "no beta headers are sent",
    "--resume-drops-turn": "use --resume-at",
    "--setting-sources": "the settings files in use are listed in docs/permissions.md",
    "--plugin-dir": "plugins are not loaded",
    "--include-hook-events": "hook runs are not written as lines",
    "--session-mirror": "transcripts are written to the mini-claude home only",
    "--json-schema": "structured output is not supported",
}
# Flags that take no value among the refused ones.
UNSUPPORTED_SWITCHES = ("--include-hook-events", "--session-mirror")
THINKING_CHOICES = ("adaptive", "enabled", "disabled")
ADAPTIVE_THINKING_TOKENS = 8_000  # "adaptive": thinking on, with the REPL's default budget
STDIO_PROMPT_TOOL = "stdio"  # the SDK's can_use_tool: questions go over the control channel


class FlagError(ValueError):
    """A flag's value cannot be honoured; the message is one line for the user."""


class Refuse(argparse.Action):
    """A flag we know but do not honour: a usage error naming it and why."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        flag = option_string or self.dest
        reason = UNSUPPORTED_FLAGS.get(flag, "")
        parser.error(f"{flag} is not supported by mini-claude" + (f" ({reason})" if reason else ""))


class ExtendSplit(argparse.Action):
    """A tool list given as several words or as one comma-joined value (as the SDK joins
    ``--allowedTools Read,Write``); commas inside parentheses belong to the rule."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        given = [values] if isinstance(values, str) else list(values or [])
        items = list(getattr(namespace, self.dest, None) or [])
        for value in given:
            items.extend(split_tool_list(str(value)))
        setattr(namespace, self.dest, items)


def split_tool_list(text: str) -> list[str]:
    """``"Read,Bash(git diff:*) Write"`` -> ``["Read", "Bash(git diff:*)", "Write"]``."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        if depth == 0 and (char == "," or char.isspace()):
            if current:
                parts.append("".join(current))
            current = []
            continue
        current.append(char)
    if current:
        parts.append("".join(current))
    return parts


def add_refused_flags(parser: argparse.ArgumentParser) -> None:
    """Every Claude Code flag we do not honour, refused with its reason (hidden from --help)."""
    for flag in UNSUPPORTED_FLAGS:
        if flag in UNSUPPORTED_SWITCHES:
            continue
        parser.add_argument(flag, action=Refuse, help=argparse.SUPPRESS)
    for flag in UNSUPPORTED_SWITCHES:
        parser.add_argument(flag, action=Refuse, nargs=0, help=argparse.SUPPRESS)


# ---- values -------------------------------------------------------------------------


def json_or_file(value: str, cwd: Path, flag: str) -> tuple[dict[str, Any], Path | None]:
    """A flag's JSON object, given inline or as a file (relative to ``cwd``), and the file."""
    text = value.strip()
    path: Path | None = None
    if not text.startswith("{"):
        path = Path(text).expanduser()
        path = path if path.is_absolute() else cwd / path
        try:
            text = read_limited(path).decode("utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise FlagError(f"{flag}: cannot read {path}: {_why(exc)}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise FlagError(f"{flag}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise FlagError(f"{flag}: expected a JSON object")
    return data, path


def _why(exc: BaseException) -> str:
    return str(getattr(exc, "strerror", None) or exc)


def session_id_flag(value: str | None) -> str | None:
    """``--session-id``: a UUID, as Claude Code requires."""
    if value is None:
        return None
    try:
        return str(uuid.UUID(value.strip()))
    except ValueError:
        raise FlagError(f"--session-id must be a UUID, got {value!r}") from None


def tool_selection(value: str | None, known: Sequence[str]) -> set[str] | None:
    """``--tools``: the built-in tools to offer (None: all of them). ``default`` is all,
    ``""`` none; Claude Code's names (Read, Bash, ...) mean ours."""
    if value is None or value.strip() == "default":
        return None
    chosen: set[str] = set()
    unknown: list[str] = []
    for name in split_tool_list(value):
        ours = [tool for tool in our_tool_names(name) if tool in known]
        if ours:
            chosen.update(ours)
        else:
            unknown.append(name)
    if unknown:
        raise FlagError(f"--tools: unknown tool(s) {', '.join(unknown)} "
                        f"(tools: {', '.join(sorted(known))})")
    return chosen


def check_prompt_tool(value: str | None, input_format: str) -> None:
    """``--permission-prompt-tool``: only the SDK's control channel (``stdio``) asks."""
    if value is None:
        return
    if value != STDIO_PROMPT_TOOL:
        raise FlagError(f"--permission-prompt-tool {value!r} is not supported "
                        f"(only {STDIO_PROMPT_TOOL!r}, with --input-format stream-json)")
    if input_format != "stream-json":
        raise FlagError("--permission-prompt-tool stdio needs --input-format stream-json")


def add_directories(values: Sequence[str] | None, cwd: Path) -> tuple[Path, ...]:
    """``--add-dir``: folders that count as the project's; each must exist."""
    folders: list[Path] = []
    for value in values or ():
        folder = Path(value).expanduser()
        folder = (folder if folder.is_absolute() else cwd / folder).resolve()
        if not folder.is_dir():
            raise FlagError(f"--add-dir: {value} is not a directory")
        folders.append(folder)
    return tuple(folders)


def settings_overrides(args: argparse.Namespace) -> dict[str, str]:
    """Environment settings the thinking and effort flags set (validated with the rest)."""
    overrides: dict[str, str] = {}
    thinking = getattr(args, "thinking", None)
    if thinking == "disabled":
        overrides[ENV_NAMES["thinking_tokens"]] = "0"
    elif thinking in ("adaptive", "enabled"):
        overrides[ENV_NAMES["thinking_tokens"]] = str(ADAPTIVE_THINKING_TOKENS)
    tokens = getattr(args, "max_thinking_tokens", None)
    if tokens is not None:
        overrides[ENV_NAMES["thinking_tokens"]] = str(tokens)
    effort = getattr(args, "effort", None)
    if effort is not None:
        overrides[ENV_NAMES["effort"]] = effort
    return overrides


def agents_flag(value: str | None) -> dict[str, dict[str, Any]]:
    """``--agents``: sub-agent types as Claude Code's JSON (name -> description, prompt, ...)."""
    if value is None:
        return {}
    try:
        data = json.loads(value)
    except ValueError as exc:
        raise FlagError(f"--agents: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise FlagError('--agents: expected {"name": {"description": ..., "prompt": ...}}')
    return {str(name): dict(spec) for name, spec in data.items()}
