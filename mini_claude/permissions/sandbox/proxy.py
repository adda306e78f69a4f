"""The proxy outside the sandbox that sandboxed commands reach the network through.

A sandboxed command has a network namespace of its own with nothing in it but loopback. A
small bridge inside (``bridge``) listens on ``127.0.0.1:<port>`` there and hands every
connection to this proxy over a Unix socket bound into the sandbox. The proxy speaks HTTP
(``CONNECT`` tunnels for https, absolute URLs for plain http) and SOCKS5 (any other TCP) on the
same socket, told apart by the first byte, and asks its gate about every destination before
it connects: only what the gate admits is reached, at the addresses the gate checked.

It runs on an event loop of its own, in a thread, so it serves background commands too and
does not depend on the session's loop being free.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

HEAD_LIMIT = 64 * 1024
CONNECT_TIMEOUT_SECONDS = 30.0
SOCKS_VERSION = 5
SOCKS_REFUSED = 2  # "connection not allowed by ruleset"
SOCKS_UNREACHABLE = 4
HOP_HEADERS = ("proxy-connection", "proxy-authorization", "connection", "keep-alive")


@dataclass(frozen=True)
class Admission:
    """Where a connection may go: the checked addresses, or why not (``refusal``)."""

    addresses: tuple[str, ...] = ()
    refusal: str = ""


Admit = Callable[[str, int], Awaitable[Admission]]


class ProxyError(Exception):
    """A client that does not speak HTTP or SOCKS5 as expected."""


class DomainProxy:
    """The proxy on ``socket_path``; ``admit`` decides every destination."""

    def __init__(self, socket_path: Path, admit: Admit) -> None:
        self.socket_path = socket_path
        self._admit = admit
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="sandbox-proxy")
        self._server: asyncio.AbstractServer | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def start(self) -> None:
        """Listen on the socket (ready when this returns)."""
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(
            asyncio.start_unix_server(self._serve, path=str(self.socket_path)), self._loop)
        self._server = future.result(timeout=CONNECT_TIMEOUT_SECONDS)
        self.socket_path.chmod(0o600)

    def stop(self) -> None:
        if not self._thread.is_alive():
            return

        async def shut() -> None:
            if self._server is not None:
                self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(shut(), self._loop).result(timeout=5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        with contextlib.suppress(OSError):
            self.socket_path.unlink()

    # ---- one client -----------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            first = await reader.readexactly(1)
            if first[0] == SOCKS_VERSION:
                await self._socks(reader, writer)
            else:
                await self._http(first, reader, writer)
        except (ProxyError, OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                ValueError):
            pass
        finally:
            writer.close()

    async def _http(self, first: bytes, reader: asyncio.StreamReader,
                    writer: asyncio.StreamWriter) -> None:
        head = first + await reader.readuntil(b"\r\n\r\n")
        if len(head) > HEAD_LIMIT:
            raise ProxyError("request head too long")
        request_line, *headers = head.decode("latin-1").split("\r\n")
        method, target, version = request_line.split(" ", 2)
        if method.upper() == "CONNECT":
            host, _colon, port_text = target.rpartition(":")
            host, port = host.strip("[]"), int(port_text)
        else:
            parts = urlsplit(target)
            if parts.scheme != "http" or not parts.hostname:
                await _http_refusal(writer, 400, "the proxy takes absolute http:// URLs and "
                                                 "CONNECT only")
                return
            host, port = parts.hostname, parts.port or 80
        admission = await self._admit(host, port)
        if admission.refusal:
            await _http_refusal(writer, 403, admission.refusal)
            return
        upstream = await _connect(admission.addresses, port)
        if upstream is None:
            await _http_refusal(writer, 502, f"{host}:{port} could not be reached")
            return
        up_reader, up_writer = upstream
        if method.upper() == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        else:
            up_writer.write(_origin_form(method, target, version, headers))
        await _pipe(reader, writer, up_reader, up_writer)

    async def _socks(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        count = (await reader.readexactly(1))[0]
        await reader.readexactly(count)  # offered methods: only "no authentication" is used
        writer.write(bytes([SOCKS_VERSION, 0]))
        version, command, _reserved, kind = await reader.readexactly(4)
        if version != SOCKS_VERSION or command != 1:  # CONNECT only
            raise ProxyError("only SOCKS5 CONNECT is served")
        if kind == 1:
            host = ".".join(str(b) for b in await reader.readexactly(4))
        elif kind == 3:
            host = (await reader.readexactly((await reader.readexactly(1))[0])).decode("idna")
        elif kind == 4:
            raw = await reader.readexactly(16)
            host = ":".join(raw[i:i + 2].hex() for i in range(0, 16, 2))
        else:
            raise ProxyError("unknown SOCKS address type")
        port = int.from_bytes(await reader.readexactly(2), "big")
        admission = await self._admit(host, port)
        upstream = None if admission.refusal else await _connect(admission.addresses, port)
        if upstream is None:
            code = SOCKS_REFUSED if admission.refusal else SOCKS_UNREACHABLE
            writer.write(bytes([SOCKS_VERSION, code, 0, 1, 0, 0, 0, 0, 0, 0]))
            await writer.drain()
            return
        writer.write(bytes([SOCKS_VERSION, 0, 0, 1, 0, 0, 0, 0, 0, 0]))
        await _pipe(reader, writer, *upstream)


def _origin_form(method: str, target: str, version: str, headers: list[str]) -> bytes:
    """A plain-http request as the server expects it: path only, no proxy headers, one
    request per connection."""
    parts = urlsplit(target)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    kept = [h for h in headers if h and h.split(":", 1)[0].strip().lower() not in HOP_HEADERS]
    lines = [f"{method} {path} {version}", *kept, "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1")


async def _http_refusal(writer: asyncio.StreamWriter, status: int, message: str) -> None:
    """The refusal in the status line (what most clients print) and the body."""
    reason = message.replace("\r", " ").replace("\n", " ")
    body = (message + "\n").encode()
    writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\n"
                 f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    await writer.drain()


async def _connect(addresses: tuple[str, ...], port: int
                   ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
    for address in addresses:
        with contextlib.suppress(OSError, asyncio.TimeoutError):
            return await asyncio.wait_for(asyncio.open_connection(address, port),
                                          CONNECT_TIMEOUT_SECONDS)
    return None


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                up_reader: asyncio.StreamReader, up_writer: asyncio.StreamWriter) -> None:
    """Both directions until each side has finished sending."""

    async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
            if sink.can_write_eof():
                sink.write_eof()
        except OSError:
            pass

    try:
        await asyncio.gather(copy(reader, up_writer), copy(up_reader, writer))
    finally:
        up_writer.close()
