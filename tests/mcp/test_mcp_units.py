"""MCP pieces on their own: config, tool names, result conversion, the meter, lazy import."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp_types import (
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from mini_claude.context.meter import TokenMeter
from mini_claude.conversation import Conversation, user_text
from mini_claude.mcp.config import load_config
from mini_claude.mcp.connection import RemoteTool, ServerConnection
from mini_claude.mcp.results import EMPTY_RESULT, BinarySaver, result_output
from mini_claude.mcp.tool import MAX_TOOL_NAME, McpTool, tool_name
from mini_claude.settings import Settings
from mini_claude.tools.base import NOTHING_TO_ASK, ToolContext
from mini_claude.tools.registry import default_registry
from tests.support.mcp import write_config

# ---- config -----------------------------------------------------------------------------


def test_stdio_and_http_servers_with_variables_expanded(tmp_path: Path) -> None:
    path = write_config(
        tmp_path / ".mcp.json",
        {
            "files": {"command": "${TOOLS}/srv", "args": ["--root", "${ROOT:-/srv}"],
                      "env": {"TOKEN": "${TOKEN}"}},
            "web": {"type": "http", "url": "https://${HOST}/mcp",
                    "headers": {"Authorization": "Bearer ${TOKEN}"}},
        },
    )
    environ = {"TOOLS": "/opt/t", "TOKEN": "s3cret", "HOST": "h.io"}
    config = load_config(path, "project", environ, frozenset(environ))
    assert config is not None and config.problems == ()
    files, web = config.servers
    assert (files.transport, files.command) == ("stdio", "/opt/t/srv")
    assert files.args == ("--root", "/srv")
    assert files.env == {"TOKEN": "s3cret"}
    assert files.describe() == "/opt/t/srv --root /srv"
    assert (web.transport, web.url) == ("http", "https://h.io/mcp")
    assert web.headers == {"Authorization": "Bearer s3cret"}


def test_bad_entries_are_reported_one_line_each_and_good_ones_kept(tmp_path: Path) -> None:
    path = write_config(
        tmp_path / "mcp.json",
        {
            "ok": {"command": "srv"},
            "nocommand": {"args": []},
            "sse": {"type": "sse", "url": "http://x/sse"},
            "badargs": {"command": "srv", "args": "--flag"},
            "badurl": {"type": "http", "url": "ftp://x"},
            "notobject": 3,
        },
    )
    config = load_config(path, "user", {})
    assert config is not None
    assert config.names == ["ok"]
    assert len(config.problems) == 5
    assert all("\n" not in p and str(path) in p for p in config.problems)
    assert any("'sse' is not supported" in p for p in config.problems)


def test_missing_file_is_none_and_broken_file_is_a_problem(tmp_path: Path) -> None:
    assert load_config(tmp_path / "absent.json", "user", {}) is None
    (tmp_path / "broken.json").write_text('{"servers": {}}')
    broken = load_config(tmp_path / "broken.json", "user", {})
    assert broken is not None and broken.servers == () and "mcpServers" in broken.problems[0]


def test_approval_covers_the_definitions_not_the_formatting(tmp_path: Path) -> None:
    entry = {"command": "srv", "args": ["a"]}
    first = load_config(write_config(tmp_path / "a.json", {"s": entry}), "project", {})
    (tmp_path / "b.json").write_text(json.dumps({"mcpServers": {"s": entry}}, indent=8))
    reformatted = load_config(tmp_path / "b.json", "project", {})
    changed = load_config(
        write_config(tmp_path / "c.json", {"s": {"command": "srv", "args": ["b"]}}), "project", {}
    )
    assert first is not None and reformatted is not None and changed is not None
    assert first.trusted_content == reformatted.trusted_content
    assert first.trusted_content != changed.trusted_content


# ---- names, registry, permission --------------------------------------------------------


def test_tool_names_follow_claude_code_and_the_providers_rules() -> None:
    assert tool_name("git hub", "search.code") == "mcp__git_hub__search_code"
    assert len(tool_name("s" * 50, "t" * 50)) == MAX_TOOL_NAME


def _connection(tmp_path: Path) -> ServerConnection:
    config = load_config(write_config(tmp_path / "m.json", {"srv": {"command": "x"}}), "user", {})
    assert config is not None
    return ServerConnection(config.servers[0], root=tmp_path, log_dir=tmp_path, connect_timeout=1,
                            call_timeout=1, on_ready=lambda c, t: None)


def test_registry_gains_mcp_tools_once_and_they_ask_permission(tmp_path: Path) -> None:
    registry = default_registry()
    remote = RemoteTool("lookup", "Look a thing up.", {"type": "object", "properties": {}})
    tool = McpTool(tool_name("srv", "lookup"), _connection(tmp_path), remote)
    before = registry.specs()
    assert registry.add(tool)
    assert not registry.add(tool)
    assert registry.specs()[: len(before)] == before
    assert registry.specs()[-1].name == "mcp__srv__lookup"
    assert "[MCP server srv]" in registry.specs()[-1].description
    ctx = ToolContext(root=tmp_path, settings=Settings(home=tmp_path))
    request = tool.permission({"q": "x"}, ctx).request
    assert request is not None
    assert request.subject == "mcp__srv__lookup"  # "for the session" covers the tool
    assert "lookup" in request.summary and '"q": "x"' in request.summary


def test_a_call_before_the_server_is_up_is_a_tool_error(tmp_path: Path) -> None:
    remote = RemoteTool("lookup", "", {"type": "object"})
    tool = McpTool("mcp__srv__lookup", _connection(tmp_path), remote)
    ctx = ToolContext(root=tmp_path, settings=Settings(home=tmp_path))
    output = asyncio.run(tool.run({}, ctx, NOTHING_TO_ASK))
    assert output.is_error and "not connected" in output.content


# ---- results ----------------------------------------------------------------------------


def test_parts_are_joined_in_order_and_binaries_saved(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\nfake"
    result = CallToolResult(
        content=[
            TextContent(text="first"),
            ImageContent(data=base64.b64encode(png).decode(), mime_type="image/png"),
            EmbeddedResource(resource=TextResourceContents(uri="file:///a.txt", text="inside")),
            EmbeddedResource(resource=BlobResourceContents(
                uri="file:///b.bin", blob=base64.b64encode(b"\x00\x01").decode())),
            ResourceLink(uri="file:///c.md", name="c"),
            ImageContent(data="not base64!", mime_type="image/png"),
        ],
        is_error=True,
    )
    output = result_output(result, "mcp__s__t", BinarySaver(tmp_path / "results"))
    lines = output.content.splitlines()
    assert output.is_error
    assert lines[0] == "first"
    assert lines[1].startswith("[image (image/png, 12 bytes) saved to ")
    assert lines[2:4] == ["[resource file:///a.txt]", "inside"]
    assert lines[4].startswith("[resource file:///b.bin (application/octet-stream, 2 bytes)")
    assert lines[5] == "[resource link: file:///c.md (c)]"
    assert "invalid base64" in lines[6]
    saved = sorted((tmp_path / "results").iterdir())
    assert [p.suffix for p in saved] == [".png", ".bin"]
    assert saved[0].read_bytes() == png


def test_structured_only_and_empty_results(tmp_path: Path) -> None:
    saver = BinarySaver(tmp_path)
    structured = CallToolResult(content=[], structured_content={"count": 3})
    assert json.loads(result_output(structured, "t", saver).content) == {"count": 3}
    assert result_output(CallToolResult(content=[]), "t", saver).content == EMPTY_RESULT


# ---- the meter --------------------------------------------------------------------------


def test_new_tool_schemas_raise_the_estimate_at_once(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    conversation = Conversation([user_text("hello " * 400)])
    meter = TokenMeter(settings, 6_000)
    guessed = meter.estimate(conversation)
    meter.schemas_changed(10_000)
    assert meter.estimate(conversation) - guessed == pytest.approx(1_000, abs=1)
    meter.observe(5_000, conversation)
    meter.schemas_changed(14_000)
    assert meter.estimate(conversation) - 5_000 == pytest.approx(4_000 / meter.chars_per_token,
                                                                 abs=1)


# ---- start-up stays light ---------------------------------------------------------------

_PROBE = """
import asyncio, sys
from pathlib import Path
import mini_claude.cli, mini_claude.headless.printmode
import mini_claude.session.wiring, mini_claude.ui.repl
from mini_claude.mcp.manager import McpManager
from mini_claude.settings import Settings
from mini_claude.tools.registry import default_registry

async def main():
    manager = McpManager(Settings(home=Path(sys.argv[1])), Path(sys.argv[2]), default_registry())
    manager.start()
    await manager.wait_settled(60)
    print("configured" if manager.configured else "none", "mcp" in sys.modules)
    await manager.close()

asyncio.run(main())
"""


@pytest.mark.parametrize("configured", [False, True])
def test_the_sdk_is_imported_only_when_a_server_is_configured(
    tmp_path: Path, configured: bool
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    if configured:
        write_config(home / "mcp.json", {"ghost": {"command": str(tmp_path / "missing")}})
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(home), str(project)],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout.split()
    assert out == (["configured", "True"] if configured else ["none", "False"])


# ---- reconnecting -----------------------------------------------------------------------


def test_a_crashed_server_can_be_reconnected_and_its_tools_work_again(tmp_path: Path) -> None:
    from mini_claude.mcp.connection import McpCallError
    from mini_claude.mcp.manager import McpManager
    from tests.support.mcp import stdio_entry

    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    write_config(home / "mcp.json", {"sample": stdio_entry()})
    registry = default_registry()
    ctx = ToolContext(root=project, settings=Settings(home=home))

    async def scenario() -> None:
        manager = McpManager(Settings(home=home), project, registry)
        news: list[str] = []
        manager.on_server_news.append(news.append)
        manager.start()
        await manager.wait_settled(60)
        connection = manager.connections["sample"]
        assert connection.state == "connected"
        echo = registry.get("mcp__sample__echo")
        assert echo is not None
        with pytest.raises(McpCallError, match="stopped during the call"):
            await connection.call("crash", {})
        assert connection.state == "failed"
        assert await manager.reconnect() == ["sample"]
        await manager.wait_settled(60)
        assert connection.state == "connected"
        assert registry.get("mcp__sample__echo") is echo
        assert [n for n in registry.names() if n == "mcp__sample__echo"] == ["mcp__sample__echo"]
        assert news == [
            "MCP server sample connected · 7 tools",
            "MCP server sample failed: the server closed the connection (see /mcp)",
            "MCP server sample connected · 7 tools",  # no "name already taken" on reconnect
        ]
        output = await echo.run({"text": "back"}, ctx, NOTHING_TO_ASK)
        assert output.content == "echo: back"
        await manager.close()
        assert connection.state == "stopped"

    asyncio.run(scenario())
