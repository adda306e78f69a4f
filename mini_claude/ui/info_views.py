"""``/status``, ``/config``, ``/doctor``, ``/export`` and ``/agents``: what a Claude Code user
types to see where they stand, each a read of the session with nothing changed (``/export``
writes only the file it is asked for; ``/agents new`` only a new agent file)."""

from __future__ import annotations

import base64
import os
import platform
import shutil
import sys
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from mini_claude import __version__
from mini_claude.conversation import (
    ImageBlock,
    Message,
    SummaryBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from mini_claude.models import PROVIDERS
from mini_claude.secrets import api_keys, mask
from mini_claude.settings import (
    ENV_NAMES,
    NOT_FROM_ENVIRONMENT,
    PER_PROVIDER,
    Settings,
    provider_variables,
)
from mini_claude.text import format_tokens, shorten
from mini_claude.ui.render import note
from mini_claude.visible import visible

if TYPE_CHECKING:
    from mini_claude.ui.host import ReplHost

EXPORTED_RESULT_CHARS = 4_000  # a tool result in an export; the transcript keeps the rest
SECRET_FIELDS = frozenset(f.name for f in fields(Settings) if not f.repr)  # declared secret


# ---- /status ---------------------------------------------------------------------------


def status_table(repl: ReplHost) -> Table:
    session, settings = repl.session, repl.settings
    status = repl.agent.status()
    table = _table()
    rows = [
        ("version", f"mini-claude {__version__}"),
        ("session", session.session_id),
        ("folder", str(session.cwd)),
        ("provider", f"{settings.provider} · {settings.base_url or 'default endpoint'}"),
        ("model", _model_line(settings)),
        ("permission mode", session.permission_setup.permissions.mode),
        ("context", f"{status.tokens:,} of {status.window:,} tokens "
                    f"({format_tokens(status.window)} window)"),
        ("MCP servers", _mcp_line(repl)),
        ("transcript", str(repl.agent.transcript.path)),
    ]
    for name, value in rows:
        table.add_row(name, Text(visible(value, one_line=True)))
    return table


def _model_line(settings: Settings) -> str:
    line = settings.model
    if settings.plan_model:
        line += f" (plan mode: {settings.plan_model})"
    if settings.fallback_model:
        line += f" · fallback {settings.fallback_model}"
    return line


def _mcp_line(repl: ReplHost) -> str:
    views = repl.session.mcp.views()
    if not views:
        return "none"
    states: dict[str, int] = {}
    for view in views:
        state = view.state.split(":")[0]
        states[state] = states.get(state, 0) + 1
    return ", ".join(f"{count} {state}" for state, count in states.items())


# ---- /config ---------------------------------------------------------------------------


def config_table(settings: Settings, environ: dict[str, str] | os._Environ[str],
                 dotenv: dict[str, str] | None = None) -> Table:
    """Every setting that is not at its default, and where it came from."""
    table = _table(("setting", "value", "from"))
    for label, name, value, variable in _changed_settings(settings):
        shown = "(set)" if name in SECRET_FIELDS else str(value)
        table.add_row(Text(label), Text(visible(shorten(shown, 60), one_line=True)),
                      _origin(name, variable, environ, dotenv or {}))
    return table


def _changed_settings(settings: Settings) -> Iterator[tuple[str, str, object, str | None]]:
    """(label, field, value, its variable) of each setting not at its default; a setting
    each provider has its own of gives a line per provider (``api_keys[anthropic]``)."""
    defaults = Settings()
    for f in fields(Settings):
        value = getattr(settings, f.name)
        if f.name == "home" or value == getattr(defaults, f.name):
            continue
        if f.name in PER_PROVIDER:
            variables = provider_variables(f.name)
            for provider, one in value.items():
                yield f"{f.name}[{provider}]", f.name, one, variables.get(provider)
        else:
            yield f.name, f.name, value, ENV_NAMES.get(f.name)


def _origin(name: str, variable: str | None, environ: dict[str, str] | os._Environ[str],
            dotenv: dict[str, str]) -> str:
    if name in NOT_FROM_ENVIRONMENT or variable is None:
        return "learnt this session"
    if variable in dotenv and environ.get(variable) != dotenv[variable]:
        return f".env ({variable})"
    if variable in environ:
        return f"environment ({variable})"
    if variable in dotenv:
        return f".env ({variable})"
    return "a flag or a command"


# ---- /doctor ---------------------------------------------------------------------------


def doctor_rows(repl: ReplHost) -> list[tuple[str, str, bool]]:
    """(check, what was found, fine?) for the install, the key, the tools and the terminal."""
    settings = repl.settings
    row = PROVIDERS[settings.provider]
    key = settings.api_key
    rows = [
        ("install", f"mini-claude {__version__}, Python {platform.python_version()} at "
                    f"{sys.executable}", sys.version_info >= (3, 11)),
        ("API key", f"{row.key_variable} is set" if key else
         f"{row.key_variable} is not set" + (" (a local server needs none)"
                                             if settings.base_url else ""),
         bool(key or settings.base_url)),
        ("endpoint", settings.base_url or "the provider's default", True),
        ("ripgrep", shutil.which("rg") or "not found: grep_search uses its slower Python "
                                          "search", shutil.which("rg") is not None),
        ("sandbox", _sandbox_line(), shutil.which("bwrap") is not None),
        ("MCP servers", _mcp_line(repl), not any(v.state.startswith("failed")
                                                 for v in repl.session.mcp.views())),
        ("terminal", _terminal_line(), sys.stdout.isatty()),
        ("editor", os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi (the default)",
         True),
    ]
    secrets = api_keys(settings)
    return [(name, mask(found, secrets), fine) for name, found, fine in rows]


def _sandbox_line() -> str:
    found = shutil.which("bwrap")
    if sys.platform != "linux":
        return f"not available on {sys.platform}"
    return f"bubblewrap at {found}" if found else "bubblewrap not found (apt install bubblewrap)"


def _terminal_line() -> str:
    size = shutil.get_terminal_size()
    term = os.environ.get("TERM", "unknown")
    return f"{term}, {size.columns}×{size.lines}" + ("" if sys.stdout.isatty() else ", not a tty")


def doctor_table(rows: list[tuple[str, str, bool]]) -> Table:
    table = _table(("", "check", "found"))
    for name, found, fine in rows:
        table.add_row(Text("✓", style="green") if fine else Text("!", style="yellow"), name,
                      Text(visible(found, one_line=True)))
    return table


# ---- /export ---------------------------------------------------------------------------


def conversation_markdown(messages: list[Message], title: str) -> str:
    """The conversation as a person reads it: who said what, each tool call and its result."""
    parts = [f"# {title}\n"]
    for message in messages:
        for block in message.blocks:
            parts.append(_block_markdown(message.role, block))
    return "\n".join(p for p in parts if p) + "\n"


def _block_markdown(role: str, block: object) -> str:
    if isinstance(block, TextBlock):
        heading = "## You" if role == "user" else "## mini-claude"
        return f"{heading}\n\n{block.text.strip()}\n"
    if isinstance(block, ToolUseBlock):
        arguments = ", ".join(f"{k}={shorten(str(v), 200)!r}" for k, v in block.input.items())
        return f"**→ {block.name}**({arguments})\n"
    if isinstance(block, ToolResultBlock):
        body = block.content
        if len(body) > EXPORTED_RESULT_CHARS:
            body = body[:EXPORTED_RESULT_CHARS] + f"\n… ({len(block.content):,} characters)"
        fence = "````" if "```" in body else "```"
        label = " (error)" if block.is_error else ""
        return f"{fence}{label}\n{body.rstrip()}\n{fence}\n"
    if isinstance(block, SummaryBlock):
        return f"## Summary of the earlier conversation\n\n{block.summary.strip()}\n"
    if isinstance(block, ImageBlock):
        return f"*[image: {block.name or 'attached'}]*\n"
    return ""


def osc52_copy(text: str) -> str:
    """The escape that asks the terminal to put ``text`` on the clipboard (works over ssh)."""
    encoded = base64.b64encode(text.encode("utf-8")).decode("ascii")
    return f"\x1b]52;c;{encoded}\x07"


def export_target(argument: str, cwd: Path, session_id: str) -> Path:
    name = argument.strip() or f"conversation-{session_id}.md"
    path = Path(name).expanduser()
    return path if path.is_absolute() else cwd / path


# ---- shared ----------------------------------------------------------------------------


def _table(columns: tuple[str, ...] = ("", "")) -> Table:
    table = Table(box=None, padding=(0, 2, 0, 0), show_header=any(columns))
    for index, column in enumerate(columns):
        table.add_column(column, style="bold" if index == 0 else None)
    return table


def print_note(repl: ReplHost, text: str, kind: str = "info") -> None:
    repl.console.print(note(text, kind))
