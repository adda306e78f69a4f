"""Helpers for the MCP tests: config files naming the sample server, and a recording policy."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mini_claude.simulator import Reply, SimConversation, ToolCall

SAMPLE_SERVER = Path(__file__).parent / "mcp_servers" / "sample_server.py"


def stdio_entry(marker: Path | None = None, *, start_delay: float = 0.0) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": sys.executable, "args": [str(SAMPLE_SERVER)]}
    env: dict[str, str] = {}
    if marker is not None:
        env["SAMPLE_SERVER_STARTED"] = str(marker)
    if start_delay:
        env["SAMPLE_SERVER_START_DELAY"] = str(start_delay)
    if env:
        entry["env"] = env
    return entry


def write_config(path: Path, servers: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}, indent=2))
    return path


class Recorder:
    """Scripted replies that also keep every conversation the model was sent."""

    def __init__(self, steps: Sequence[Reply | Callable[[SimConversation], Reply]]) -> None:
        self.steps = list(steps)
        self.seen: list[SimConversation] = []

    def respond(self, conv: SimConversation) -> Reply:
        self.seen.append(conv)
        index = len(self.seen) - 1
        if index >= len(self.steps):
            return Reply("Done.")
        step = self.steps[index]
        return step(conv) if callable(step) else step


def call(tool: str, /, **args: Any) -> Reply:
    return Reply(tool_calls=[ToolCall(tool, args)])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def http_server() -> Iterator[str]:
    """The sample server over streamable HTTP on 127.0.0.1; yields its URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SAMPLE_SERVER), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if process.poll() is not None:
                    raise RuntimeError("the sample HTTP server exited") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
