"""``mini-claude mcp add|add-json|list|get|remove``: Claude Code's ``claude mcp`` subcommands.

The same scopes, flags and files, so a server added by either program is seen by both:

- ``local`` (the default): ``projects[<project's absolute path>].mcpServers`` in
  ``~/.claude.json``, for you in this project only;
- ``project``: ``mcpServers`` in the project's ``.mcp.json``, shared through the
  repository (and approved once before it starts);
- ``user``: the top-level ``mcpServers`` in ``~/.claude.json``, for you everywhere.

Entries are written as Claude Code writes them: ``{"type": "stdio", "command": ...,
"args": [...], "env": {...}}`` or ``{"type": "http", "url": ..., "headers": {...}}``,
each file in two-space JSON with its other keys kept.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from mini_claude.atomic_files import atomic_write
from mini_claude.mcp.config import (
    CLAUDE_JSON_LIMIT,
    PROJECT_CONFIG_NAME,
    claude_json_path,
    project_key,
    read_json,
)
from mini_claude.models import key_variables
from mini_claude.secrets import shown_setting

SCOPES = ("local", "project", "user")
TRANSPORTS = ("stdio", "http", "sse")
SCOPE_LABELS = {
    "local": "Local config (private to you in this project)",
    "project": "Project config (shared via .mcp.json)",
    "user": "User config (available in all your projects)",
}
_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
EXIT_OK, EXIT_FAILED = 0, 1

USAGE = """usage: mini-claude mcp <command>

  add [-s scope] [-t transport] [-e KEY=value] [-H "Name: value"] <name>
      <command-or-url> [-- args...]
  add-json [-s scope] <name> '<json>'
  list
  get <name>
  remove [-s scope] <name>

scopes: local (default; ~/.claude.json, this project), project (.mcp.json), user (~/.claude.json)"""


class McpCommandError(Exception):
    """Bad input or an unwritable file: one line for the user."""


@dataclass(frozen=True, slots=True)
class Found:
    """A server as stored: its scope, the file, and the entry as written there."""

    name: str
    scope: str
    path: Path
    entry: dict[str, Any]


def main(argv: Sequence[str], cwd: Path | None = None) -> int:
    """Run one ``mcp`` subcommand; one line on stderr for any problem, never a traceback."""
    project = (cwd or Path.cwd()).resolve()
    words = list(argv)
    if not words or words[0] in ("-h", "--help", "help"):
        print(USAGE)
        return EXIT_OK if words else EXIT_FAILED
    command, rest = words[0], words[1:]
    handlers = {"add": _add, "add-json": _add_json, "list": _list, "get": _get,
                "remove": _remove}
    handler = handlers.get(command)
    try:
        if handler is None:
            raise McpCommandError(f"unknown mcp command {command!r} "
                                  f"(choose from {', '.join(handlers)})")
        return handler(rest, project)
    except McpCommandError as exc:
        print(f"mini-claude mcp: {exc}", file=sys.stderr)
        return EXIT_FAILED


# ---- add ----------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise McpCommandError(message)


def _parser(prog: str) -> _Parser:
    parser = _Parser(prog=f"mini-claude mcp {prog}", add_help=False)
    parser.add_argument("-s", "--scope", default="local", choices=SCOPES)
    return parser


def _add(argv: list[str], project: Path) -> int:
    before, dash, after = _split_at_dashes(argv)
    parser = _parser("add")
    parser.add_argument("-t", "--transport", default="stdio", choices=TRANSPORTS)
    parser.add_argument("-e", "--env", action="append", default=[])
    parser.add_argument("-H", "--header", action="append", default=[])
    parser.add_argument("name")
    parser.add_argument("target", nargs="?")
    parser.add_argument("args", nargs="*")
    options = parser.parse_args(before)
    target = options.target
    args = list(options.args)
    if dash and target is None and after:
        target, args = after[0], after[1:]
    elif dash:
        args = [*args, *after]
    if not target:
        raise McpCommandError("name a command (stdio) or a URL (http, sse) after the server name")
    entry = _entry(options.transport, target, args, _env(options.env), _headers(options.header))
    modified = _store(options.name, entry, options.scope, project)
    shown = f"command: {' '.join([target, *args])}" if options.transport == "stdio" \
        else f"URL: {target}"
    print(f"Added {options.transport} MCP server {options.name} with {shown} to "
          f"{options.scope} config")
    print(modified)
    return EXIT_OK


def _split_at_dashes(argv: list[str]) -> tuple[list[str], bool, list[str]]:
    """What comes before ``--`` (our options, the name) and the command line after it."""
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], True, argv[at + 1:]
    return argv, False, []


def _entry(transport: str, target: str, args: list[str], env: dict[str, str],
           headers: dict[str, str]) -> dict[str, Any]:
    if transport == "stdio":
        if headers:
            raise McpCommandError("--header is for http and sse servers; use --env for stdio")
        return {"type": "stdio", "command": target, "args": args, "env": env}
    if not target.startswith(("http://", "https://")):
        raise McpCommandError(f"a {transport} server needs an http:// or https:// URL, "
                              f"not {target!r}")
    if args:
        raise McpCommandError(f"a {transport} server takes a URL only, not {' '.join(args)!r}")
    entry: dict[str, Any] = {"type": transport, "url": target}
    if headers:
        entry["headers"] = headers
    return entry


def _env(pairs: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        if not equals or not _ENV_NAME.match(name):
            raise McpCommandError(f"--env takes KEY=value, not {pair!r}")
        env[name] = value
    return env


def _headers(lines: list[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(":")
        if not colon or not name.strip() or any(c.isspace() for c in name.strip()):
            raise McpCommandError(f'--header takes "Name: value", not {line!r}')
        headers[name.strip()] = value.strip()
    return headers


def _add_json(argv: list[str], project: Path) -> int:
    parser = _parser("add-json")
    parser.add_argument("name")
    parser.add_argument("json")
    options = parser.parse_args(argv)
    try:
        entry = json.loads(options.json)
    except ValueError as exc:
        raise McpCommandError(f"the server's JSON is not valid ({exc})") from exc
    if not isinstance(entry, dict):
        raise McpCommandError('the server\'s JSON must be an object, e.g. '
                              '{"type": "stdio", "command": "npx", "args": ["my-server"]}')
    kind = entry.get("type", "http" if "url" in entry else "stdio")
    if kind not in TRANSPORTS:
        raise McpCommandError(f"type {kind!r} is not one of {', '.join(TRANSPORTS)}")
    if kind == "stdio" and not isinstance(entry.get("command"), str):
        raise McpCommandError('a stdio server needs a "command"')
    if kind != "stdio" and not isinstance(entry.get("url"), str):
        raise McpCommandError(f'a {kind} server needs a "url"')
    modified = _store(options.name, entry, options.scope, project)
    print(f"Added {kind} MCP server {options.name} to {options.scope} config")
    print(modified)
    return EXIT_OK


# ---- the files ----------------------------------------------------------------------------


def _file_of(scope: str, project: Path) -> Path:
    return project / PROJECT_CONFIG_NAME if scope == "project" else claude_json_path()


def _load(path: Path) -> dict[str, Any]:
    data = read_json(path, CLAUDE_JSON_LIMIT)
    if data is None:
        return {}
    if isinstance(data, str):
        raise McpCommandError(f"{data}; nothing was changed")
    if not isinstance(data, dict):
        raise McpCommandError(f"{path} does not hold a JSON object; nothing was changed")
    return data


def _servers(data: dict[str, Any], scope: str, project: Path, *,
             create: bool = False) -> dict[str, Any] | None:
    """The ``mcpServers`` object of a scope inside its file's data (made when ``create``)."""
    holder: Any = data
    if scope == "local":
        projects = data.setdefault("projects", {}) if create else data.get("projects")
        if not isinstance(projects, dict):
            return None
        key = project_key(project)
        holder = projects.setdefault(key, {}) if create else projects.get(key)
        if not isinstance(holder, dict):
            return None
    servers = holder.setdefault("mcpServers", {}) if create else holder.get("mcpServers")
    return servers if isinstance(servers, dict) else None


def _save(path: Path, data: dict[str, Any]) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    try:
        mode = path.stat().st_mode & 0o7777 if path.exists() else None
        atomic_write(path, text.encode("utf-8"), mode)
    except OSError as exc:
        raise McpCommandError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _store(name: str, entry: dict[str, Any], scope: str, project: Path) -> str:
    """Add the entry to its scope's file; the line naming the file changed."""
    if not _NAME.match(name):
        raise McpCommandError(f"server name {name!r}: use letters, digits, - and _ only")
    path = _file_of(scope, project)
    data = _load(path)
    servers = _servers(data, scope, project, create=True)
    if servers is None:
        raise McpCommandError(f"{path}: its mcpServers is not an object; nothing was changed")
    if name in servers:
        raise McpCommandError(f"MCP server {name} already exists in {scope} config "
                              f"(mini-claude mcp remove {name} -s {scope} first)")
    servers[name] = entry
    _save(path, data)
    where = f" [project: {project}]" if scope == "local" else ""
    return f"File modified: {path}{where}"


def find_servers(project: Path) -> list[Found]:
    """Every server the subcommands know, in Claude Code's order: local, project, user."""
    found: list[Found] = []
    for scope in SCOPES:
        path = _file_of(scope, project)
        try:
            data = _load(path)
        except McpCommandError:
            continue
        servers = _servers(data, scope, project) or {}
        found += [Found(n, scope, path, e) for n, e in servers.items() if isinstance(e, dict)]
    return found


# ---- list, get, remove --------------------------------------------------------------------


def _target(entry: dict[str, Any]) -> str:
    if "url" in entry:
        return f"{entry.get('url')} ({entry.get('type', 'http')})"
    return " ".join([str(entry.get("command", "")), *_args(entry)])


def _args(entry: dict[str, Any]) -> list[str]:
    args = entry.get("args")
    return [str(a) for a in args] if isinstance(args, list) else []


def _list(argv: list[str], project: Path) -> int:
    if argv:
        raise McpCommandError("list takes no arguments")
    found = find_servers(project)
    if not found:
        print("No MCP servers configured. Use `mini-claude mcp add` to add a server.")
        return EXIT_OK
    for server in found:
        print(f"{server.name}: {_target(server.entry)} · {server.scope}")
    return EXIT_OK


def _get(argv: list[str], project: Path) -> int:
    if len(argv) != 1:
        raise McpCommandError("usage: mini-claude mcp get <name>")
    name = argv[0]
    matches = [f for f in find_servers(project) if f.name == name]
    if not matches:
        raise McpCommandError(f"no MCP server named {name!r} (mini-claude mcp list names them)")
    server = matches[0]
    entry = server.entry
    kind = entry.get("type", "http" if "url" in entry else "stdio")
    lines = [f"{name}:", f"  Scope: {SCOPE_LABELS[server.scope]}", f"  Type: {kind}"]
    if kind == "stdio":
        lines.append(f"  Command: {entry.get('command', '')}")
        lines.append(f"  Args: {' '.join(_args(entry))}")
    else:
        lines.append(f"  URL: {entry.get('url', '')}")
    for title, key, joiner in (("Environment", "env", "="), ("Headers", "headers", ": ")):
        values = entry.get(key)
        if isinstance(values, dict) and values:
            lines.append(f"  {title}:")
            lines += [f"    {k}{joiner}{shown_setting(str(k), str(v), _keys())}"
                      for k, v in values.items()]
    lines.append(f"  File: {server.path}")
    lines.append(f'\nTo remove this server, run: mini-claude mcp remove "{name}" '
                 f"-s {server.scope}")
    print("\n".join(lines))
    return EXIT_OK


def _keys() -> tuple[str | None, ...]:
    """Our API keys, masked wherever a value shown contains one."""
    return tuple(os.environ.get(variable) for variable in key_variables())


def _remove(argv: list[str], project: Path) -> int:
    parser = _Parser(prog="mini-claude mcp remove", add_help=False)
    parser.add_argument("-s", "--scope", choices=SCOPES)
    parser.add_argument("name")
    options = parser.parse_args(argv)
    matches = [f for f in find_servers(project) if f.name == options.name
               and (options.scope is None or f.scope == options.scope)]
    if not matches:
        where = f" in {options.scope} config" if options.scope else ""
        raise McpCommandError(f"no MCP server named {options.name!r}{where}")
    if len(matches) > 1:
        scopes = ", ".join(f.scope for f in matches)
        raise McpCommandError(f"MCP server {options.name} is in several scopes ({scopes}); "
                              "say which with -s")
    server = matches[0]
    data = _load(server.path)
    servers = _servers(data, server.scope, project)
    if servers is not None:
        servers.pop(server.name, None)
    _save(server.path, data)
    print(f"Removed MCP server {server.name} from {server.scope} config")
    print(f"File modified: {server.path}")
    return EXIT_OK
