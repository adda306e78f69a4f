"""``mini-claude mcp add|add-json|list|get|remove``: Claude Code's scopes written to Claude Code's
files in Claude Code's shapes, read back, and used by a session started afterwards."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mini_claude.cli import main
from mini_claude.simulator import Reply, Simulator
from tests.support.mcp import SAMPLE_SERVER, Recorder, call
from tests.support.printing import PROVIDERS, point_at, run_from


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_home: Path) -> Path:
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    (tmp_path / "user-home").mkdir(parents=True, exist_ok=True)
    return run_from(tmp_path / "project", monkeypatch)


def claude_json() -> Path:
    return Path.home() / ".claude.json"


def mcp(capsys: pytest.CaptureFixture[str], *words: str) -> tuple[int, str, str]:
    code = main(["mcp", *words])
    out, err = capsys.readouterr()
    return code, out, err


def test_each_scope_is_written_where_and_as_claude_code_writes_it(
    project: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    claude_json().write_text(json.dumps({"numStartups": 7, "projects": {
        "/elsewhere": {"allowedTools": [], "mcpServers": {"other": {"command": "x"}}}}}))
    code, out, err = mcp(capsys, "add", "--env", "API_KEY=abc", "-e", "LEVEL=2", "airtable",
                         "--", "npx", "-y", "airtable-mcp-server")
    assert code == 0, err
    assert "Added stdio MCP server airtable with command: npx -y airtable-mcp-server to local " \
           "config" in out
    code, _, err = mcp(capsys, "add", "--transport", "http", "--scope", "user", "-H",
                       "Authorization: Bearer t0ken", "notion", "https://mcp.notion.com/mcp")
    assert code == 0, err
    code, _, err = mcp(capsys, "add", "-s", "project", "-t", "sse", "linear",
                       "https://mcp.linear.app/sse")
    assert code == 0, err
    code, _, err = mcp(capsys, "add-json", "-s", "user", "weather",
                       '{"type":"stdio","command":"/path/to/weather-cli","args":["--api-key","k"],'
                       '"env":{"CACHE_DIR":"/tmp"}}')
    assert code == 0, err

    data = json.loads(claude_json().read_text())
    assert data["numStartups"] == 7  # the file's other keys are kept
    assert data["projects"]["/elsewhere"]["mcpServers"] == {"other": {"command": "x"}}
    assert data["projects"][str(project.resolve())]["mcpServers"] == {
        "airtable": {"type": "stdio", "command": "npx", "args": ["-y", "airtable-mcp-server"],
                     "env": {"API_KEY": "abc", "LEVEL": "2"}}}
    assert data["mcpServers"] == {
        "notion": {"type": "http", "url": "https://mcp.notion.com/mcp",
                   "headers": {"Authorization": "Bearer t0ken"}},
        "weather": {"type": "stdio", "command": "/path/to/weather-cli",
                    "args": ["--api-key", "k"], "env": {"CACHE_DIR": "/tmp"}}}
    assert json.loads((project / ".mcp.json").read_text()) == {
        "mcpServers": {"linear": {"type": "sse", "url": "https://mcp.linear.app/sse"}}}

    code, out, _ = mcp(capsys, "list")
    assert code == 0
    assert out.splitlines() == [
        "airtable: npx -y airtable-mcp-server · local",
        "linear: https://mcp.linear.app/sse (sse) · project",
        "notion: https://mcp.notion.com/mcp (http) · user",
        "weather: /path/to/weather-cli --api-key k · user",
    ]
    code, out, _ = mcp(capsys, "get", "notion")
    assert code == 0
    assert "Scope: User config" in out and "URL: https://mcp.notion.com/mcp" in out
    assert "t0ken" not in out  # a secret-looking header is shown by its length only
    code, out, _ = mcp(capsys, "get", "airtable")
    assert "Command: npx" in out and "Args: -y airtable-mcp-server" in out
    assert "LEVEL=2" in out

    code, out, err = mcp(capsys, "remove", "airtable")
    assert code == 0, err
    assert "Removed MCP server airtable from local config" in out
    data = json.loads(claude_json().read_text())
    assert data["projects"][str(project.resolve())]["mcpServers"] == {}
    assert "notion" in data["mcpServers"]


@pytest.mark.parametrize(("words", "message"), [
    (("add", "x"), "name a command"),
    (("add", "-t", "http", "x", "notaurl"), "needs an http:// or https:// URL"),
    (("add", "-e", "NOEQUALS", "x", "--", "cmd"), "--env takes KEY=value"),
    (("add", "-s", "team", "x", "cmd"), "invalid choice"),
    (("add", "bad name", "cmd"), "use letters, digits"),
    (("add-json", "x", "{not json"), "not valid"),
    (("get", "missing"), "no MCP server named 'missing'"),
    (("frob",), "unknown mcp command"),
])
def test_bad_input_is_one_line_and_changes_nothing(
    project: Path, capsys: pytest.CaptureFixture[str], words: tuple[str, ...], message: str,
) -> None:
    claude_json().write_text('{"keep": true}')
    code, _, err = mcp(capsys, *words)
    assert code == 1
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert claude_json().read_text() == '{"keep": true}'


def test_a_name_already_added_and_a_broken_file_are_refused(
    project: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert mcp(capsys, "add", "s", "--", "cmd")[0] == 0
    code, _, err = mcp(capsys, "add", "s", "--", "cmd")
    assert code == 1 and "already exists in local config" in err
    claude_json().write_text("{broken")
    code, _, err = mcp(capsys, "add", "-s", "user", "t", "--", "cmd")
    assert code == 1 and "not valid JSON" in err
    assert claude_json().read_text() == "{broken"


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("scope", ["local", "user"])
def test_a_session_started_afterwards_connects_to_the_server_added(
    provider: str, scope: str, project: Path, simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = mcp(capsys, "add", "-s", scope, "-e", "SAMPLE_SERVER_START_DELAY=0",
                       "sample", "--", sys.executable, str(SAMPLE_SERVER))
    assert code == 0, err
    recorder = Recorder([call("mcp__sample__echo", text="added by the cli"), Reply("done")])
    simulator.policy = recorder
    point_at(simulator, provider, monkeypatch)
    code = main(["-p", "use the server", "--yes"])  # no project approval: the user's own
    _out, err = capsys.readouterr()
    assert code == 0, err
    assert "mcp__sample__echo" in recorder.seen[0].tool_names
    results = [(r.content, r.is_error) for r in recorder.seen[1].last_tool_results()]
    assert results == [("echo: added by the cli", False)]
