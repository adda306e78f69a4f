"""Small things a daily user notices: who denied a tool, what a refused connection is called,
what the header says about the endpoint, how the demo names a search."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from mini_claude.cli import main
from mini_claude.conversation import user_text
from mini_claude.demo import _describe
from mini_claude.protocol import ConnectionLost, ModelRequest
from mini_claude.providers import create_provider
from mini_claude.settings import Settings
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.ui.repl import _endpoint_label
from tests.support.printing import point_cli_at


def test_print_mode_without_yes_does_not_blame_the_user(
        tmp_path: Path, simulator: Simulator, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    project = point_cli_at(simulator, tmp_path / "project", monkeypatch)
    simulator.policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("run_shell", {"command": "touch created.txt"})]),
        lambda conv: Reply(text="result was: " + conv.last_tool_results()[0].content),
    ])
    assert main(["-p", "make a file"]) == 0
    out, _ = capsys.readouterr()
    assert not (project / "created.txt").exists()
    assert "Permission denied" in out
    assert "by the user" not in out  # nobody was asked
    assert "--yes" in out


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_refused_connection_is_not_called_lost(isolated_home: Path) -> None:
    base_url = f"http://127.0.0.1:{_closed_port()}"
    settings = Settings(provider="anthropic", model="sim-model", api_keys={"anthropic": "test-key"},
                        base_urls={"anthropic": base_url}, home=isolated_home, max_retries=0)

    async def call() -> ConnectionLost:
        provider = create_provider(settings)
        request = ModelRequest(model="sim-model", system="s", messages=[user_text("hi")],
                               tools=[], max_tokens=100)
        try:
            async for _event in provider.stream(request):
                pass
        except ConnectionLost as exc:
            return exc
        finally:
            await provider.close()
        raise AssertionError("the call should have failed")

    error = asyncio.run(call())
    assert "could not connect" in error.message
    assert base_url in error.message
    assert "lost" not in error.message


def test_the_header_names_a_non_default_endpoint() -> None:
    assert _endpoint_label(None) == ""
    assert _endpoint_label("https://api.anthropic.com") == ""
    assert _endpoint_label("https://api.openai.com/v1") == ""
    assert _endpoint_label("http://localhost:8080/v1") == " @ localhost:8080"


def test_the_demo_names_a_search_by_its_pattern() -> None:
    from mini_claude.scenario.script import Call

    line = _describe(Call("grep_search", {"pattern": "TODO", "path": "src"}))
    assert line == "searching for TODO"


def test_the_todo_tool_line_reads_as_words_not_json() -> None:
    from mini_claude.ui.render import tool_call_line

    line = tool_call_line("todo_write", {"todos": [
        {"content": "read the config", "status": "completed"},
        {"content": "fix  the totals", "status": "in_progress"},
        {"content": "run the tests", "status": "pending"},
    ]}).plain
    assert line == "● todo_write(3 items, 1 done · now: fix the totals)"
    assert "{" not in line


def test_a_permission_box_names_an_mcp_tool_once() -> None:
    from rich.console import Console

    from mini_claude.permissions.asking import PermissionRequest
    from mini_claude.ui.permissions import permission_box

    def title(tool: str) -> str:
        console = Console(width=100, color_system=None, record=True)
        request = PermissionRequest(tool_name=tool, summary="sample · echo {}", subject=tool)
        console.print(permission_box(request))
        return console.export_text().splitlines()[0]

    assert title("mcp__sample__echo").count("mcp__sample__echo") == 1
    assert "Run a shell command (run_shell)" in title("run_shell")
