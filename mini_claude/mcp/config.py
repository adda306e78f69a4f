"""Server definitions in Claude Code's format, from the project and from the home folder.

``{"mcpServers": {"name": {"command": ..., "args": [...], "env": {...}}}}`` runs a
program over stdio; ``{"type": "http", "url": ..., "headers": {...}}`` talks
streamable HTTP. ``${VAR}`` and ``${VAR:-default}`` are expanded in every string,
as Claude Code does, so a shared file need not hold secrets.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mini_claude.safe_read import read_limited

PROJECT_CONFIG_NAME = ".mcp.json"
USER_CONFIG_NAME = "mcp.json"

Scope = Literal["user", "project"]
Transport = Literal["stdio", "http"]

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True, slots=True)
class ServerConfig:
    name: str
    scope: Scope
    transport: Transport
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        """What will run, in one line: the command line, or the URL."""
        if self.transport == "http":
            return self.url
        return " ".join([self.command, *self.args])


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """One config file as read: its servers, the problems found, and what approval covers."""

    path: Path
    scope: Scope
    servers: tuple[ServerConfig, ...]
    problems: tuple[str, ...]
    trusted_content: bytes  # the server definitions, normalized: what the user approves

    @property
    def names(self) -> list[str]:
        return [server.name for server in self.servers]


def load_config(path: Path, scope: Scope, environ: Mapping[str, str]) -> ConfigFile | None:
    """The servers in ``path``; None when there is no such file. Never raises."""
    try:
        text = read_limited(path).decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        return ConfigFile(path, scope, (), (f"{path}: cannot be read ({exc})",), b"")
    try:
        data = json.loads(text)
    except ValueError as exc:
        return ConfigFile(path, scope, (), (f"{path}: not valid JSON ({exc})",), b"")
    raw_servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(raw_servers, dict):
        shape = f'{path}: expected {{"mcpServers": {{...}}}}'
        return ConfigFile(path, scope, (), (shape,), b"")
    servers: list[ServerConfig] = []
    problems: list[str] = []
    for name, entry in raw_servers.items():
        server, problem = _parse_server(str(name), entry, scope, environ)
        if server is not None:
            servers.append(server)
        if problem is not None:
            problems.append(f"{path}: server {name!r}: {problem}")
    trusted = json.dumps(raw_servers, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return ConfigFile(path, scope, tuple(servers), tuple(problems), trusted)


def _parse_server(
    name: str, entry: Any, scope: Scope, environ: Mapping[str, str]
) -> tuple[ServerConfig | None, str | None]:
    if not isinstance(entry, dict):
        return None, "must be an object"
    kind = entry.get("type", "http" if "url" in entry else "stdio")
    if kind in ("http", "streamable-http", "streamable_http"):
        raw_url = entry.get("url")
        url = _expand(raw_url, environ) if isinstance(raw_url, str) else ""
        if not url.startswith(("http://", "https://")):
            return None, "needs a http:// or https:// url"
        headers = _string_map(entry.get("headers"))
        if headers is None:
            return None, "headers must map names to strings"
        expanded = _expand_map(headers, environ)
        return ServerConfig(name, scope, "http", url=url, headers=expanded), None
    if kind != "stdio":
        return None, f"transport {kind!r} is not supported (use stdio or http)"
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        return None, "needs a command"
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return None, "args must be a list of strings"
    env = _string_map(entry.get("env"))
    if env is None:
        return None, "env must map names to strings"
    return ServerConfig(
        name,
        scope,
        "stdio",
        command=_expand(command, environ),
        args=tuple(_expand(a, environ) for a in args),
        env=_expand_map(env, environ),
    ), None


def _string_map(value: Any) -> dict[str, str] | None:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        return None
    return {str(k): v for k, v in value.items()}


def _expand(text: str, environ: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        value = environ.get(match.group(1))
        if value is None:
            return match.group(2) or ""
        return value

    return _VARIABLE.sub(replace, text)


def _expand_map(values: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    return {key: _expand(value, environ) for key, value in values.items()}


def project_config_path(project: Path) -> Path:
    return project / PROJECT_CONFIG_NAME


def user_config_path(home: Path) -> Path:
    return home / USER_CONFIG_NAME


def load_configs(
    project: Path, home: Path, environ: Mapping[str, str] | None = None
) -> tuple[ConfigFile | None, ConfigFile | None]:
    """(user file, project file), each None when absent."""
    env = os.environ if environ is None else environ
    return (
        load_config(user_config_path(home), "user", env),
        load_config(project_config_path(project), "project", env),
    )
