"""Server definitions in Claude Code's format, from the project, the home folder and Claude
Code's own ``~/.claude.json``.

``{"mcpServers": {"name": {"command": ..., "args": [...], "env": {...}}}}`` runs a
program over stdio; ``{"type": "http", "url": ..., "headers": {...}}`` talks
streamable HTTP. ``${VAR}`` and ``${VAR:-default}`` are expanded in every string,
as Claude Code does, so a shared file need not hold secrets.

The user's own file (``~/.mini-claude/mcp.json``) may use any variable. A project's
``.mcp.json`` comes with a clone, so it may only use the variables the user listed in
``MINI_CLAUDE_MCP_PROJECT_VARIABLES`` (the environment or the home ``.env``; a project
``.env`` cannot set it), and never a provider key nor a value equal to one: otherwise
a header ``"X-Client": "${ANTHROPIC_API_KEY}"`` would hand the key to the server. A
variable refused is left empty (or its ``:-default``) and named in one problem line.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mini_claude.models import key_variables
from mini_claude.safe_read import read_limited

PROJECT_CONFIG_NAME = ".mcp.json"
USER_CONFIG_NAME = "mcp.json"
CLAUDE_JSON_NAME = ".claude.json"
CLAUDE_JSON_LIMIT = 64 * 1024 * 1024  # Claude Code keeps history there too: it can grow

Scope = Literal["user", "project", "local"]
Transport = Literal["stdio", "http", "sdk"]  # sdk: hosted by the controlling program

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
ALLOW_SETTING = "MINI_CLAUDE_MCP_PROJECT_VARIABLES"


@dataclass
class Expander:
    """``${VAR}`` expansion for one file: any variable, or (a project's) only allowed ones."""

    environ: Mapping[str, str]
    allowed: frozenset[str] | None = None  # None: every variable (the user's own file)
    secrets: tuple[str, ...] = ()
    refused: list[str] = field(default_factory=list)

    def __call__(self, text: str) -> str:
        return _VARIABLE.sub(self._one, text)

    def _one(self, match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2) or ""
        value = self.environ.get(name)
        if value is None:
            return default
        if self.allowed is not None and not self._may_read(name, value):
            if name not in self.refused:
                self.refused.append(name)
            return default
        return value

    def _may_read(self, name: str, value: str) -> bool:
        if name in key_variables() or name not in (self.allowed or ()):
            return False
        return not any(secret and secret in value for secret in self.secrets)

    def problem(self) -> str | None:
        if not self.refused:
            return None
        names = ", ".join(f"${{{name}}}" for name in self.refused)
        return (
            f"{names} not expanded: a project .mcp.json may only use the variables listed in "
            f"{ALLOW_SETTING}, never a provider key"
        )


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
        if self.transport == "sdk":
            return "hosted by the controlling program"
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


def load_config(
    path: Path,
    scope: Scope,
    environ: Mapping[str, str],
    allowed: frozenset[str] = frozenset(),
    secrets: tuple[str, ...] = (),
) -> ConfigFile | None:
    """The servers in ``path``; None when there is no such file. Never raises.

    ``allowed`` names the variables a project file may expand (a user file: any).
    """
    data = read_json(path)
    if data is None:
        return None
    if isinstance(data, str):
        return ConfigFile(path, scope, (), (data,), b"")
    return parse_config(data, path, scope, environ, allowed, secrets)


def parse_config(
    data: object,
    path: Path,
    scope: Scope,
    environ: Mapping[str, str],
    allowed: frozenset[str] = frozenset(),
    secrets: tuple[str, ...] = (),
) -> ConfigFile:
    """The servers of a config already read (a file, or ``--mcp-config`` JSON)."""
    raw_servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(raw_servers, dict):
        shape = f'{path}: expected {{"mcpServers": {{...}}}}'
        return ConfigFile(path, scope, (), (shape,), b"")
    return servers_config(raw_servers, path, scope, environ, allowed, secrets)


def read_json(path: Path, limit: int = 1024 * 1024) -> Any:
    """The JSON in ``path``; None when there is no such file, a one-line problem (a str)
    when it cannot be read."""
    try:
        text = read_limited(path, limit).decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        return f"{path}: cannot be read ({exc})"
    try:
        return json.loads(text)
    except ValueError as exc:
        return f"{path}: not valid JSON ({exc})"


def servers_config(
    raw_servers: dict[str, Any],
    path: Path,
    scope: Scope,
    environ: Mapping[str, str],
    allowed: frozenset[str] = frozenset(),
    secrets: tuple[str, ...] = (),
) -> ConfigFile:
    """The servers of one ``mcpServers`` object."""
    servers: list[ServerConfig] = []
    problems: list[str] = []
    for name, entry in raw_servers.items():
        expand = Expander(environ, allowed if scope == "project" else None, secrets)
        server, problem = _parse_server(str(name), entry, scope, expand)
        if server is not None:
            servers.append(server)
        for found in (problem, expand.problem()):
            if found is not None:
                problems.append(f"{path}: server {name!r}: {found}")
    trusted = json.dumps(raw_servers, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return ConfigFile(path, scope, tuple(servers), tuple(problems), trusted)


def _parse_server(
    name: str, entry: Any, scope: Scope, expand: Expander
) -> tuple[ServerConfig | None, str | None]:
    if not isinstance(entry, dict):
        return None, "must be an object"
    kind = entry.get("type", "http" if "url" in entry else "stdio")
    if kind == "sdk":
        return ServerConfig(name, scope, "sdk"), None
    if kind in ("http", "streamable-http", "streamable_http"):
        raw_url = entry.get("url")
        url = expand(raw_url) if isinstance(raw_url, str) else ""
        if not url.startswith(("http://", "https://")):
            return None, "needs a http:// or https:// url"
        headers = _string_map(entry.get("headers"))
        if headers is None:
            return None, "headers must map names to strings"
        expanded = {key: expand(value) for key, value in headers.items()}
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
        command=expand(command),
        args=tuple(expand(a) for a in args),
        env={key: expand(value) for key, value in env.items()},
    ), None


def _string_map(value: Any) -> dict[str, str] | None:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        return None
    return {str(k): v for k, v in value.items()}


def project_config_path(project: Path) -> Path:
    return project / PROJECT_CONFIG_NAME


def user_config_path(home: Path) -> Path:
    return home / USER_CONFIG_NAME


def claude_json_path() -> Path:
    """Claude Code's ``~/.claude.json`` (``$CLAUDE_CONFIG_DIR/.claude.json`` when set)."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    folder = Path(configured).expanduser() if configured else Path.home()
    return folder / CLAUDE_JSON_NAME


def project_key(project: Path) -> str:
    """How ``~/.claude.json`` names a project: its absolute path."""
    return str(project.resolve())


def load_configs(
    project: Path,
    home: Path,
    environ: Mapping[str, str] | None = None,
    allowed: frozenset[str] = frozenset(),
    secrets: tuple[str, ...] = (),
) -> tuple[ConfigFile | None, ConfigFile | None]:
    """(user file, project file), each None when absent."""
    env = os.environ if environ is None else environ
    return (
        load_config(user_config_path(home), "user", env),
        load_config(project_config_path(project), "project", env, allowed, secrets),
    )


def load_claude_configs(
    project: Path, environ: Mapping[str, str] | None = None
) -> tuple[ConfigFile | None, ConfigFile | None]:
    """(user scope, local scope) of Claude Code's ``~/.claude.json``, each None when it
    defines no servers there."""
    env = os.environ if environ is None else environ
    path = claude_json_path()
    data = read_json(path, CLAUDE_JSON_LIMIT)
    if data is None:
        return None, None
    if isinstance(data, str) or not isinstance(data, dict):
        problem = data if isinstance(data, str) else f"{path}: expected a JSON object"
        return ConfigFile(path, "user", (), (problem,), b""), None
    user_servers = data.get("mcpServers")
    projects = data.get("projects")
    entry = projects.get(project_key(project)) if isinstance(projects, dict) else None
    local_servers = entry.get("mcpServers") if isinstance(entry, dict) else None
    return (
        servers_config(user_servers, path, "user", env) if isinstance(user_servers, dict)
        and user_servers else None,
        servers_config(local_servers, path, "local", env) if isinstance(local_servers, dict)
        and local_servers else None,
    )


def allowed_variables(setting: str | None) -> frozenset[str]:
    """The names in ``MINI_CLAUDE_MCP_PROJECT_VARIABLES`` (commas or spaces between)."""
    return frozenset(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", setting or ""))
