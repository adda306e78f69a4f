"""Claude Code's flags, as the Claude Agent SDK and Claude Code users pass them: each honoured
end to end against the simulator, or refused with one line."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from mini_claude.cli import main
from mini_claude.simulator import Reply, Simulator
from tests.support.mcp import Recorder, call, stdio_entry
from tests.support.printing import point_cli_at


def _run(
    capsys: pytest.CaptureFixture[str], *argv: str
) -> tuple[int, list[dict[str, object]], str]:
    code = main(["-p", "go", "--output-format", "stream-json", *argv])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


@pytest.fixture
def recorder(simulator: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Recorder:
    point_cli_at(simulator, tmp_path / "project", monkeypatch)
    recorder = Recorder([])
    simulator.policy = recorder
    return recorder


def test_an_empty_system_prompt_is_not_taken_for_the_file_flag(
    recorder: Recorder, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys)
    built_in = recorder.seen[-1].system
    code, _, err = _run(capsys, "--system-prompt", "", "--verbose")
    assert code == 0, err
    assert recorder.seen[-1].system == built_in
    code, _, err = _run(capsys, "--system-prompt", "You are a pirate.")
    assert code == 0, err
    assert recorder.seen[-1].system.startswith("You are a pirate.")


def test_comma_joined_tool_rules_allow_each_tool(
    recorder: Recorder, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    recorder.steps = [call("write_file", path="a.txt", content="x\n"), Reply("ok")]
    code, _, err = _run(capsys, "--allowedTools", "Read,Write")
    assert code == 0, err
    assert (tmp_path / "project" / "a.txt").read_text() == "x\n"


@pytest.mark.parametrize("flag", ["--max-budget-usd", "--betas", "--json-schema"])
def test_flags_we_cannot_honour_are_refused_in_one_line(
    recorder: Recorder, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["-p", "go", flag, "1"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2
    assert err.count("\n") == 1 and f"{flag} is not supported" in err
    assert not recorder.seen


def test_session_id_names_the_new_session_and_must_be_a_uuid(
    recorder: Recorder, capsys: pytest.CaptureFixture[str]
) -> None:
    chosen = str(uuid.uuid4())
    code, lines, err = _run(capsys, "--session-id", chosen)
    assert code == 0, err
    assert {line["session_id"] for line in lines} == {chosen}
    code, lines, err = _run(capsys, "--session-id", "not-a-uuid")
    assert code == 2 and "--session-id must be a UUID" in err


def test_tools_chooses_the_tools_offered(
    recorder: Recorder, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "--tools", "Read,Grep")
    assert code == 0, err
    assert sorted(recorder.seen[0].tool_names) == ["grep_search", "read_file"]
    code, _, err = _run(capsys, "--tools", "Read,Teleport")
    assert code == 2 and "unknown tool(s) Teleport" in err


def test_settings_json_grants_as_a_settings_file_would(
    recorder: Recorder, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    recorder.steps = [call("write_file", path="b.txt", content="y\n"), Reply("ok")]
    settings = json.dumps({"permissions": {"allow": ["Write"]}})
    code, _, err = _run(capsys, "--settings", settings)
    assert code == 0, err
    assert (tmp_path / "project" / "b.txt").read_text() == "y\n"
    code, _, err = _run(capsys, "--settings", "missing.json")
    assert code == 2 and "--settings: cannot read" in err


def test_add_dir_makes_a_folder_the_projects(
    recorder: Recorder, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    target = str(other / "c.txt")
    recorder.steps = [call("write_file", path=target, content="z\n"), Reply("ok"),
                      call("write_file", path=target, content="z\n"), Reply("ok")]
    code, _, err = _run(capsys, "--permission-mode", "acceptEdits")
    assert not (other / "c.txt").exists()
    code, _, err = _run(capsys, "--permission-mode", "acceptEdits", "--add-dir", str(other))
    assert code == 0, err
    assert (other / "c.txt").read_text() == "z\n"


def test_mcp_config_json_adds_a_server_and_strict_leaves_out_the_projects(
    recorder: Recorder, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    project = tmp_path / "project"
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": stdio_entry()}}))
    recorder.steps = [call("mcp__flagged__echo", text="hi"),
                      lambda conv: Reply(conv.last_tool_results()[0].content)]
    config = json.dumps({"mcpServers": {"flagged": stdio_entry()}})
    code, lines, err = _run(capsys, "--mcp-config", config, "--strict-mcp-config", "--yes")
    assert code == 0, err
    assert lines[-1]["result"] == "echo: hi"
    offered = recorder.seen[0].tool_names
    assert "mcp__flagged__echo" in offered
    assert not any(name.startswith("mcp__proj__") for name in offered)


def test_agents_json_adds_a_sub_agent_type(
    recorder: Recorder, simulator: Simulator, capsys: pytest.CaptureFixture[str]
) -> None:
    agents = json.dumps({"poet": {"description": "writes short poems", "prompt": "Rhyme."}})
    code, _, err = _run(capsys, "--agents", agents)
    assert code == 0, err
    tools = simulator.requests[-1].body["tools"]
    task = next(t for t in tools if t["name"] == "task")
    assert "poet: writes short poems" in task["description"]


def test_dangerously_skip_permissions_is_bypass(
    recorder: Recorder, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, err = _run(capsys, "--dangerously-skip-permissions")
    assert code == 0, err
    assert lines[0]["permissionMode"] == "bypassPermissions"


def test_partial_messages_stream_the_reply(
    recorder: Recorder, capsys: pytest.CaptureFixture[str]
) -> None:
    recorder.steps = [Reply("a streamed answer")]
    code, lines, err = _run(capsys, "--include-partial-messages")
    assert code == 0, err
    deltas = [line["event"]["delta"]["text"] for line in lines  # type: ignore[index]
              if line["type"] == "stream_event"]
    assert "".join(deltas) == "a streamed answer"


def test_a_refused_call_has_its_permission_denied_line(
    recorder: Recorder, capsys: pytest.CaptureFixture[str]
) -> None:
    recorder.steps = [call("run_shell", command="touch x"), Reply("could not")]
    code, lines, err = _run(capsys)
    assert code == 0, err
    denied = [line for line in lines if line.get("subtype") == "permission_denied"]
    assert len(denied) == 1 and denied[0]["tool_name"] == "run_shell"
    tool_use_id = denied[0]["tool_use_id"]
    assert lines[-1]["permission_denials"][0]["tool_use_id"] == tool_use_id  # type: ignore[index]
