"""An MCP server for the test suite, written with the official SDK.

``python sample_server.py [--noisy]`` serves over stdio (``--noisy`` first writes
lines that are not JSON-RPC); ``python sample_server.py http PORT``
serves streamable HTTP on 127.0.0.1:PORT/mcp. It writes one line to the file named
by SAMPLE_SERVER_STARTED (when set) as it starts, so a test can tell whether it ran.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

# A 1x1 PNG.
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cf00000301010018dd8db000"
    "00000049454e44ae426082"
)

server = MCPServer("sample")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return f"echo: {text}"


@server.tool()
def getenv(name: str) -> str:
    """One variable of the server's environment."""
    return os.environ.get(name, "<unset>")


@server.tool()
def big(lines: int) -> str:
    """Return a long numbered listing."""
    return "\n".join(f"line {n:05d} of a large result from the sample server" for n in range(lines))


@server.tool(structured_output=False)
def picture() -> list[str | Image]:
    """Return a caption and a tiny PNG."""
    return ["a red pixel", Image(data=PIXEL, format="png")]


@server.tool()
def fail(message: str) -> str:
    """Raise, so the result is an MCP tool error."""
    raise ToolError(message)


@server.tool()
def crash() -> str:
    """Exit the whole server process without answering."""
    os._exit(3)


@server.tool()
def hang(seconds: float) -> str:
    """Sleep past any reasonable timeout."""
    time.sleep(seconds)
    return "woke up"


def main() -> None:
    time.sleep(float(os.environ.get("SAMPLE_SERVER_START_DELAY", "0")))  # a slow server
    marker = os.environ.get("SAMPLE_SERVER_STARTED")
    if marker:
        with Path(marker).open("a", encoding="utf-8") as handle:
            handle.write(f"started {os.getpid()}\n")
    if "--noisy" in sys.argv:  # a misbehaving server: lines that are not JSON-RPC first
        print("this is not JSON-RPC", flush=True)
        print('{"jsonrpc": "2.0", "method": 42}', flush=True)
    if len(sys.argv) >= 3 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()


if __name__ == "__main__":
    main()
