"""A small HTTP server on 127.0.0.1 for web_fetch tests: pages, JSON, a redirect, a big body."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGE = (
    "<html><head><title>Docs</title><style>body{color:red}</style>"
    "<script>window.secret = 'never shown';</script></head>"
    "<body><h1>Install guide</h1><p>Run <code>pip install demo</code> and then "
    "<a href='/next'>read on</a>.</p><ul><li>fast</li><li>small</li></ul></body></html>"
)


@dataclass
class WebServer:
    port: int
    hits: list[str] = field(default_factory=list)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


@contextmanager
def web_server() -> Iterator[WebServer]:
    server_state = WebServer(0)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            server_state.hits.append(self.path)
            if self.path == "/page":
                self._send(200, "text/html; charset=utf-8", PAGE.encode())
            elif self.path == "/data.json":
                self._send(200, "application/json", json.dumps({"version": "1.2", "ok": True})
                           .encode())
            elif self.path == "/moved":
                self._redirect(f"http://127.0.0.1:{server_state.port}/page")
            elif self.path == "/elsewhere":
                self._redirect(f"http://localhost:{server_state.port}/page")
            elif self.path == "/big":
                self._send(200, "text/plain", b"y" * 300_000)
            elif self.path == "/image.png":
                self._send(200, "image/png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 100)
            else:
                self._send(404, "text/plain", b"no such page")

        def _send(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _redirect(self, location: str) -> None:
            self.send_response(302)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server_state.port = int(server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server_state
    finally:
        server.shutdown()
        server.server_close()
