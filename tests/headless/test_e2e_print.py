"""The whole agent end to end: CLI print mode -> real SDK -> HTTP -> simulator, both providers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mini_claude.cli import main
from mini_claude.simulator import ExplorePolicy, Fault, Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.printing import PROVIDERS, point_at


@pytest.mark.parametrize("provider", PROVIDERS)
def test_multi_step_task_uses_every_tool(
    provider: str,
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = ExplorePolicy()
    point_at(simulator, provider, monkeypatch)
    code = main(["-p", "explore this project and take notes", "--yes"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Here is what I found" in out
    used = {line.split()[1] for line in err.splitlines() if line.startswith("→ ")}
    assert {
        "list_files",
        "read_file",
        "grep_search",
        "run_shell",
        "write_file",
        "edit_file",
    } <= used
    assert (project / "NOTES.md").exists()
    requests = simulator.requests
    assert len(requests) >= 6
    assert all(r.status == 200 and r.stream for r in requests), [r.error for r in requests]
    assert {r.protocol for r in requests} == {provider}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_writes_are_denied_without_yes_and_the_model_reads_why(
    provider: str,
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = ScriptedPolicy(
        [
            Reply(tool_calls=[ToolCall("run_shell", {"command": "touch created.txt"})]),
            lambda conv: Reply(text="result was: " + conv.last_tool_results()[0].content[:80]),
        ]
    )
    point_at(simulator, provider, monkeypatch)
    code = main(["-p", "make a file"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert not (project / "created.txt").exists()
    assert "denied" in out.lower()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_faults_are_retried_and_the_turn_completes(
    provider: str,
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = ScriptedPolicy(
        [
            Reply(tool_calls=[ToolCall("read_file", {"path": "pkg/core.py"})]),
            Reply(text="all good"),
        ]
    )
    simulator.inject(Fault("rate_limit", on_request=1, retry_after_ms=10))
    simulator.inject(Fault("overloaded", on_request=2))
    simulator.inject(Fault("server_error", on_request=4))
    simulator.inject(Fault("drop_after_text", on_request=5))
    point_at(simulator, provider, monkeypatch)
    code = main(["-p", "read core", "--output-format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    assert result["result"] == "all good"
    assert [r.status for r in simulator.requests][:4] == [429, 529, 200, 500]
    assert "retrying" in err


def test_authentication_failure_is_one_clear_line(
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    point_at(simulator, "anthropic", monkeypatch)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "bad-key")
    code = main(["-p", "hello"])
    _, err = capsys.readouterr()
    assert code == 1
    assert "ANTHROPIC_API_KEY" in err and "Traceback" not in err
    assert "bad-key" not in err


def test_stream_json_emits_one_event_per_line(
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = ScriptedPolicy([Reply(text="hi there")])
    point_at(simulator, "openai", monkeypatch)
    assert main(["-p", "hello", "--output-format", "stream-json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    kinds = [line["type"] for line in lines]
    assert kinds[0] == "system" and kinds[-1] == "result"
    assert "assistant" in kinds and lines[-1]["result"] == "hi there"
    assert any(line.get("subtype") == "usage" for line in lines)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_continue_resumes_the_newest_session(
    provider: str,
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = ScriptedPolicy(
        [
            Reply(text="the secret word is PELICAN"),
            lambda conv: Reply(text=f"I remember {len(conv.messages)} messages"),
        ]
    )
    point_at(simulator, provider, monkeypatch)
    assert main(["-p", "remember a word"]) == 0
    assert main(["--continue", "-p", "go on"]) == 0
    out, _ = capsys.readouterr()
    assert "I remember 3 messages" in out
    last_body = json.dumps(simulator.requests[-1].body)
    assert "PELICAN" in last_body
