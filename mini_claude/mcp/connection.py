"""One MCP server: a background task owns the connection; tool calls borrow it.

The SDK's transports are anyio context managers that must be entered and left
by the same task, so one task per server opens the client, lists the tools,
and then waits until it is told to stop. Tool calls from the agent go through
the open client; any failure of the server becomes an :class:`McpCallError`
with one line the model can read, never an exception that ends the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import logging.handlers
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from mini_claude.mcp.capped_log import LOG_CAP_BYTES, capped_log
from mini_claude.mcp.config import ServerConfig
from mini_claude.private_dirs import make_private_dirs

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import CallToolResult

ServerState = Literal["connecting", "connected", "failed", "stopped"]
LOG_FILE_MODE = 0o600
SDK_LOG_NAME = "sdk.log"
SDK_LOG_MARK = "mini_claude_log_path"
STOP_TIMEOUT_SECONDS = 5.0
MAX_LISTING_PAGES = 50
CALL_GRACE_SECONDS = 5.0  # beyond the SDK's own per-request timeout, before we give up


class McpCallError(Exception):
    """A call that could not reach the tool or get its answer; the message is for the model."""


@dataclass(frozen=True, slots=True)
class RemoteTool:
    """A tool as the server lists it, free of SDK types."""

    name: str
    description: str
    input_schema: dict[str, Any]


ReadyCallback = Callable[["ServerConnection", list[RemoteTool]], None]
# The MCP transport of an ``sdk`` server, by its name (the controlling program's channel).
SdkTransport = Callable[[str], Any]


class ServerConnection:
    def __init__(
        self,
        config: ServerConfig,
        *,
        root: Path,
        log_dir: Path,
        connect_timeout: float,
        call_timeout: float,
        on_ready: ReadyCallback,
        on_failed: Callable[[ServerConnection], None] | None = None,
        sdk_transport: SdkTransport | None = None,
    ) -> None:
        self.config = config
        self.sdk_transport = sdk_transport
        self.root = root
        self.log_dir = log_dir
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self.on_ready = on_ready
        self.on_failed = on_failed
        self.state: ServerState = "connecting"
        self.error: str | None = None
        self.tools: list[RemoteTool] = []
        self._client: Client | None = None
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.config.name

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"mcp-{self.config.name}"
        )

    async def restart(self) -> None:
        """Stop whatever is left of the connection and connect again (``/mcp reconnect``)."""
        await self.stop()
        self.state, self.error = "connecting", None
        self._stopping = asyncio.Event()
        self.start()

    async def wait_settled(self) -> None:
        """Until connected, failed or stopped."""
        while self.state == "connecting" and self._task is not None and not self._task.done():
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        self._stopping.set()
        task = self._task
        if task is None or task.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), STOP_TIMEOUT_SECONDS)
        except (TimeoutError, asyncio.CancelledError):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    # ---- the owner task -------------------------------------------------------------

    async def _run(self) -> None:
        try:
            await asyncio.to_thread(_load_sdk)  # a slow import must not freeze the prompt
            with self._open_log() as errlog:
                async with contextlib.AsyncExitStack() as stack:
                    async with asyncio.timeout(self.connect_timeout):
                        client = await stack.enter_async_context(self._client_for(errlog, stack))
                        self.tools = await _list_tools(client)
                    self._client = client
                    self.state = "connected"
                    self.on_ready(self, self.tools)
                    await self._stopping.wait()
                    self._client = None
        except asyncio.CancelledError:
            if self.state != "failed":
                self.state = "stopped"  # the session is closing: nothing to report
            raise
        except TimeoutError:
            self._fail(f"no answer within {self.connect_timeout:g}s")
        except BaseException as exc:  # the SDK raises groups; a server must never end the session
            if not isinstance(exc, Exception | BaseExceptionGroup):
                raise
            self._fail(describe_error(exc) + self._log_hint())
        finally:
            self._client = None
            if self.state == "connected":
                self.state = "stopped"

    def _fail(self, message: str) -> None:
        if self.state != "failed":
            self.state = "failed"
            self.error = message
            if self.on_failed is not None:
                self.on_failed(self)

    def _log_hint(self) -> str:
        if self.config.transport != "stdio":
            return ""
        return f" (its stderr is in {self._log_path()})"

    def _log_path(self) -> Path:
        return self.log_dir / f"{_safe(self.config.name)}.log"

    def _open_log(self) -> contextlib.AbstractContextManager[TextIO | None]:
        """The server's stderr goes to a private log file, never over the REPL."""
        if self.config.transport != "stdio":
            return contextlib.nullcontext()
        try:
            make_private_dirs(self.log_dir)
            return capped_log(self._log_path())
        except OSError:
            return open(os.devnull, "w", encoding="utf-8")

    def _client_for(self, errlog: TextIO | None, stack: contextlib.AsyncExitStack) -> Client:
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client
        from mcp.client.streamable_http import streamable_http_client

        config = self.config
        if config.transport == "sdk":
            if self.sdk_transport is None:
                raise McpCallError("an sdk server needs a controlling program "
                                   "(--input-format stream-json)")
            return Client(self.sdk_transport(config.name))
        if config.transport == "http":
            http_client = _http_client(dict(config.headers)) if config.headers else None
            if http_client is not None:
                stack.push_async_callback(http_client.aclose)
            return Client(streamable_http_client(config.url, http_client=http_client))
        params = StdioServerParameters(
            command=config.command,
            args=list(config.args),
            env=dict(config.env) or None,
            cwd=self.root,
        )
        if errlog is None:
            return Client(stdio_client(params))
        return Client(stdio_client(params, errlog=errlog))

    # ---- calls from the agent -------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        client = self._client
        if client is None or self.state != "connected":
            raise McpCallError(f"MCP server {self.name!r} is not connected ({self.describe()})")
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        try:
            async with asyncio.timeout(self.call_timeout + CALL_GRACE_SECONDS):
                return await client.call_tool(
                    tool, arguments, read_timeout_seconds=self.call_timeout
                )
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise McpCallError(self._timed_out(tool)) from None
            if exc.code == CONNECTION_CLOSED:
                self._lost("the server closed the connection")
                raise McpCallError(
                    f"MCP server {self.name!r} stopped during the call (it closed the "
                    "connection); its tools are unavailable for the rest of this session"
                ) from None
            raise McpCallError(
                f"MCP server {self.name!r} refused the call: {exc.error.message}"
            ) from None
        except TimeoutError:
            raise McpCallError(self._timed_out(tool)) from None
        except Exception as exc:  # a reply the SDK could not read, a broken transport
            raise McpCallError(
                f"MCP server {self.name!r} failed: {describe_error(exc)}"
            ) from None

    def _timed_out(self, tool: str) -> str:
        return (
            f"MCP tool {tool!r} on server {self.name!r} gave no answer within "
            f"{self.call_timeout:g}s (MINI_CLAUDE_MCP_TOOL_TIMEOUT_SECONDS)"
        )

    def _lost(self, reason: str) -> None:
        self._fail(reason)
        self._client = None
        self._stopping.set()  # let the owner task close the transport

    def describe(self) -> str:
        if self.state == "failed" and self.error:
            return f"failed: {self.error}"
        return self.state


async def _list_tools(client: Client) -> list[RemoteTool]:
    tools: list[RemoteTool] = []
    cursor: str | None = None
    for _ in range(MAX_LISTING_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(
            RemoteTool(t.name, t.description or "", dict(t.input_schema)) for t in page.tools
        )
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _http_client(headers: dict[str, str]) -> Any:
    import httpx2

    return httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0))


def route_sdk_logs(log_dir: Path) -> None:
    """The SDK logs what a misbehaving server sends; that goes to a private file, not over
    the REPL (without a handler Python would print warnings to stderr)."""
    logger = logging.getLogger("mcp")
    path = log_dir / SDK_LOG_NAME
    for old in list(logger.handlers):
        if getattr(old, SDK_LOG_MARK, None) == path:
            return
        if hasattr(old, SDK_LOG_MARK):  # another home in the same process (tests)
            logger.removeHandler(old)
            old.close()
    logger.propagate = False
    try:
        make_private_dirs(log_dir)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, LOG_FILE_MODE))
        handler: logging.Handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=LOG_CAP_BYTES, backupCount=1, encoding="utf-8"
        )
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    except OSError:
        handler = logging.NullHandler()
    setattr(handler, SDK_LOG_MARK, path)
    logger.addHandler(handler)


def _load_sdk() -> None:
    import mcp
    import mcp.client.stdio
    import mcp.client.streamable_http  # noqa: F401


def describe_error(exc: BaseException) -> str:
    """One line for a failure, looking inside exception groups for the real cause."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()
    detail = text[0][:300] if text else ""
    if isinstance(exc, FileNotFoundError | PermissionError) and exc.filename:
        detail = f"{exc.strerror}: {exc.filename}"
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "server"
