"""An MCP server whose tools change files, for the tests that rewind what a tool did.

``python file_server.py`` serves over stdio; paths are taken relative to its working
folder (the project mini-claude starts it in).
"""

from __future__ import annotations

from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("files")


@server.tool()
def write(path: str, text: str) -> str:
    """Replace a file's text."""
    Path(path).write_text(text, encoding="utf-8")
    return f"wrote {path}"


@server.tool()
def remove(path: str) -> str:
    """Delete a file."""
    Path(path).unlink()
    return f"removed {path}"


if __name__ == "__main__":
    server.run()
