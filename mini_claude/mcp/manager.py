"""All MCP servers of a session: which may run, starting them, and their tools.

User servers (``<home>/mcp.json``, and Claude Code's user and local scopes in
``~/.claude.json``) run as configured. Project servers
(``.mcp.json``) start programs a repository chose, so they run only once the
user approved that file's server definitions through :class:`ProjectTrust`;
a changed file asks again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from mini_claude.mcp.config import (
    ConfigFile,
    ServerConfig,
    allowed_variables,
    load_claude_configs,
    load_configs,
)
from mini_claude.mcp.connection import RemoteTool, SdkTransport, ServerConnection, route_sdk_logs
from mini_claude.mcp.tool import McpTool, tool_name
from mini_claude.project.trust import ProjectTrust, TrustStatus
from mini_claude.secrets import api_keys
from mini_claude.settings import Settings
from mini_claude.tools.common import plural
from mini_claude.tools.registry import ToolRegistry

LOG_FOLDER = "mcp-logs"
TRUST_FLAG = "--trust-project-mcp"


@dataclass(frozen=True, slots=True)
class ServerView:
    """One row of ``/mcp``."""

    name: str
    scope: str
    target: str  # the command line or URL
    state: str  # connecting, connected, failed: ..., stopped, not approved
    tools: tuple[str, ...]


class McpManager:
    def __init__(
        self,
        settings: Settings,
        project: Path,
        registry: ToolRegistry,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.settings = settings
        self.project = project
        self.registry = registry
        self.trust = ProjectTrust(settings.home)
        self.user_file, self.project_file = load_configs(
            project,
            settings.home,
            environ,
            allowed_variables(settings.mcp_project_variables),
            api_keys(settings),
        )
        self.claude_user_file, self.local_file = load_claude_configs(project, environ)
        self.connections: dict[str, ServerConnection] = {}
        self.on_tools_changed: list[Callable[[], None]] = []
        # Called when a server connects or fails, with one line for the user.
        self.on_server_news: list[Callable[[str], None]] = []
        self.notices: list[str] = []  # config problems, for the UI to show at start-up
        self.skipped_tools: list[str] = []  # tools not added: their name was taken
        self._project_allowed = False
        self._started = False
        self._tools_by_server: dict[str, list[str]] = {}
        self.flag_files: list[ConfigFile] = []  # --mcp-config
        self.sdk_transport: SdkTransport | None = None  # for servers the controller hosts
        for config in self._files():
            if config is not None:
                self.notices.extend(config.problems)

    def _files(self) -> list[ConfigFile | None]:
        """Every file read, lowest precedence first (a later one's server of the same name
        wins): ours and Claude Code's user scope, the project's, Claude Code's local scope."""
        return [self.user_file, self.claude_user_file, self.project_file, self.local_file,
                *self.flag_files]

    # ---- what may run ---------------------------------------------------------------

    @property
    def configured(self) -> bool:
        """Any server defined at all (when not, nothing here ever imports the SDK)."""
        return any(f is not None and f.servers for f in self._files())

    def use_flag_configs(self, files: list[ConfigFile], *, strict: bool) -> None:
        """``--mcp-config`` servers, ranked above the files; ``--strict-mcp-config``: only
        them."""
        self.flag_files = list(files)
        if strict:
            self.user_file = self.project_file = None
            self.claude_user_file = self.local_file = None
        for file in files:
            self.notices.extend(file.problems)

    @property
    def project_servers(self) -> tuple[ServerConfig, ...]:
        return self.project_file.servers if self.project_file is not None else ()

    def project_trust(self) -> TrustStatus:
        """Whether the project's server definitions, as they are now, were approved."""
        file = self.project_file
        if file is None or not file.servers:
            return "approved"
        if self._project_allowed:
            return "approved"
        return self.trust.status(self.project, file.path, file.trusted_content)

    def approve_project(self, *, remember: bool = True) -> None:
        """Let the project's servers run (and remember it, unless only for this run)."""
        file = self.project_file
        self._project_allowed = True
        if remember and file is not None and file.servers:
            self.trust.approve(self.project, file.path, file.trusted_content)

    def deny_project(self) -> None:
        file = self.project_file
        self._project_allowed = False
        if file is not None and file.servers:
            self.trust.deny(self.project, file.path, file.trusted_content)

    def unapproved_notice(self, how: str) -> str | None:
        """One line naming the project servers that will not start, and how to allow them."""
        if not self.project_servers or self.project_trust() == "approved":
            return None
        names = ", ".join(s.name for s in self.project_servers)
        decided = "denied" if self.project_trust() == "denied" else "not approved"
        return f"project MCP servers in .mcp.json {decided}, not started ({names}); {how}"

    def servers_to_start(self) -> list[ServerConfig]:
        chosen: dict[str, ServerConfig] = {}
        approved = self.project_trust() == "approved"
        for file in self._files():
            if file is not None and (file is not self.project_file or approved):
                chosen.update((s.name, s) for s in file.servers)
        return list(chosen.values())

    # ---- running --------------------------------------------------------------------

    def start(self) -> None:
        """Start connecting, in the background, every allowed server not started yet."""
        self._started = True
        servers = self.servers_to_start()
        if servers:
            route_sdk_logs(self.settings.home / LOG_FOLDER)
        for config in servers:
            if config.name in self.connections:
                continue
            connection = ServerConnection(
                config,
                root=self.project,
                log_dir=self.settings.home / LOG_FOLDER,
                connect_timeout=self.settings.mcp_connect_timeout_seconds,
                call_timeout=self.settings.mcp_tool_timeout_seconds,
                on_ready=self._register,
                on_failed=self._failed,
                sdk_transport=self.sdk_transport,
            )
            self.connections[config.name] = connection
            connection.start()

    def connecting(self) -> list[str]:
        """The servers still connecting: their tools are not in the registry yet."""
        return [c.name for c in self.connections.values() if c.state == "connecting"]

    async def wait_settled(self, timeout: float | None = None) -> None:
        """Until every server is connected or has failed (print mode waits before its turn)."""
        waits = [c.wait_settled() for c in self.connections.values()]
        if not waits:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await asyncio.gather(*waits)

    async def reconnect(self, name: str | None = None) -> list[str]:
        """Restart one server, or every one not connected; returns the names restarted."""
        chosen = [
            c
            for c in self.connections.values()
            if (c.name == name if name else c.state in ("failed", "stopped"))
        ]
        for connection in chosen:
            await connection.restart()
        return [c.name for c in chosen]

    async def close(self) -> None:
        await asyncio.gather(*(c.stop() for c in self.connections.values()))

    def _register(self, connection: ServerConnection, tools: list[RemoteTool]) -> None:
        added: list[str] = []
        for remote in tools:
            name = tool_name(connection.name, remote.name)
            existing = self.registry.get(name)
            if isinstance(existing, McpTool) and existing.server is connection:
                added.append(name)  # reconnected: the same tool object calls the new session
            elif self.registry.add(McpTool(name, connection, remote)):
                added.append(name)
            else:
                skipped = (
                    f"MCP server {connection.name}: tool {remote.name!r} skipped, "
                    f"the name {name} is already taken"
                )
                self.skipped_tools.append(skipped)  # print mode has no one listening to news
                self._tell(skipped)
        self._tools_by_server[connection.name] = added
        for callback in self.on_tools_changed:
            callback()
        self._tell(f"MCP server {connection.name} connected · {plural(len(added), 'tool')}")

    def _failed(self, connection: ServerConnection) -> None:
        self._tell(f"MCP server {connection.name} {connection.describe()} (see /mcp)")

    def _tell(self, line: str) -> None:
        for callback in self.on_server_news:
            callback(line)

    # ---- /mcp -----------------------------------------------------------------------

    def views(self) -> list[ServerView]:
        rows: list[ServerView] = []
        for config in self._all_servers():
            connection = self.connections.get(config.name)
            running = connection is not None and connection.config is config
            if connection is not None and running:
                state = connection.describe()
            elif config.scope == "project" and self.project_trust() != "approved":
                state = "not approved" if self.project_trust() == "unknown" else "denied"
            elif connection is None and not self._started:
                state = "not started"
            else:
                state = "overridden by a server of the same name in another scope"
            tools = tuple(self._tools_by_server.get(config.name, ())) if running else ()
            rows.append(ServerView(config.name, config.scope, config.describe(), state, tools))
        return rows

    def _all_servers(self) -> list[ServerConfig]:
        return [s for f in self._files() if f is not None for s in f.servers]
