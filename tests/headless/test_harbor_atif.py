"""Harbor runs mini-claude: the installed-agent adapter runs a real print-mode session
against the simulator, converts its stream-json to ATIF inside the "container", and
Harbor's own models (in a Python 3.12 environment: see tests/support/harbor_venv.py, slow
the first time) check the trajectory and fill in the trial's tokens."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mini_claude.headless.atif import convert, main
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.harbor_venv import harbor_python
from tests.support.printing import PROVIDERS

REPO = Path(__file__).resolve().parents[2]
CHECK = REPO / "tests" / "support" / "harbor_check.py"


def stand_in_cli(folder: Path) -> Path:
    """``mini-claude`` on PATH, as ``uv tool install`` would leave it, running this tree."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "mini-claude"
    script.write_text(
        f'#!/bin/sh\nPYTHONPATH={REPO} exec {sys.executable} -m mini_claude.cli "$@"\n')
    script.chmod(0o755)
    return folder


@pytest.mark.integration  # Harbor's own environment takes minutes to make: `make integration`
@pytest.mark.timeout(1_500)  # creating the Harbor environment the first time takes minutes
@pytest.mark.parametrize("provider", PROVIDERS)
def test_harbor_runs_a_task_and_its_models_accept_the_trajectory(
    provider: str, project: Path, simulator: Simulator, tmp_path: Path,
) -> None:
    python = harbor_python()
    simulator.policy = ScriptedPolicy([
        Reply("Writing the notes.",
              [ToolCall("write_file", {"path": "NOTES.md", "content": "# notes\n"})]),
        Reply("The notes are written."),
    ])
    base_url = (simulator.anthropic_base_url if provider == "anthropic"
                else simulator.openai_base_url)
    prefix = provider.upper()
    keys = {f"{prefix}_API_KEY": "test-key-harbor", f"{prefix}_BASE_URL": base_url}
    logs = tmp_path / "agent-logs"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "OPENAI"))}
    env["PATH"] = f"{stand_in_cli(tmp_path / 'bin')}:{env['PATH']}"
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(
        [str(python), str(CHECK), str(project), str(logs), f"{provider}/sim-sonnet",
         "Write notes about this project.", json.dumps(keys)],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["valid"] is True and report["errors"] == []
    assert (project / "NOTES.md").read_text() == "# notes\n"
    assert {"mini-claude.jsonl", "trajectory.json", "prompt.txt", "home"} <= set(report["logs"])
    context = report["context"]
    assert context["n_input_tokens"] > 0 and context["n_output_tokens"] > 0
    trajectory = json.loads((logs / "trajectory.json").read_text())
    user, act, answer = trajectory["steps"]
    assert user == {"step_id": 1, "source": "user", "message": "Write notes about this project."}
    (call,) = act["tool_calls"]
    assert call["function_name"] == "write_file" and call["arguments"]["path"] == "NOTES.md"
    (observed,) = act["observation"]["results"]
    assert observed["source_call_id"] == call["tool_call_id"]
    assert observed["content"].startswith("Created NOTES.md")
    assert answer["message"] == "The notes are written." and answer["model_name"] == "sim-sonnet"
    assert trajectory["final_metrics"]["total_steps"] == 3
    assert trajectory["agent"]["extra"]["provider"] == provider
    requests = simulator.requests
    assert requests and {r.protocol for r in requests} == {provider}
    for path in logs.rglob("*"):  # the key went through the environment, into no file
        if path.is_file():
            assert b"test-key-harbor" not in path.read_bytes(), path


def test_the_lines_of_one_reply_are_one_step_and_stray_results_are_left_out() -> None:
    """Claude Code writes a line per content block of a reply, under one message id."""
    reply = {"id": "msg_1", "model": "m", "usage": {"input_tokens": 5, "output_tokens": 2,
                                                    "cache_read_input_tokens": 3}}
    lines: list[dict[str, Any]] = [
        {"type": "system", "subtype": "init", "session_id": "s", "model": "m", "tools": []},
        {"type": "assistant", "message": {**reply, "content": [{"type": "text", "text": "A"}]}},
        {"type": "assistant", "message": {**reply, "content": [
            {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "x"}}]}},
        {"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text",
                                                                      "text": "body"}]},
            {"type": "tool_result", "tool_use_id": "unknown", "content": "lost"}]}},
        {"type": "assistant", "message": {"id": "msg_2", "content": [
            {"type": "text", "text": "B"}]}},
    ]
    steps = convert(lines)["steps"]
    assert [s["message"] for s in steps] == ["A", "B"]
    assert steps[0]["tool_calls"][0]["tool_call_id"] == "t1"
    assert steps[0]["observation"]["results"] == [{"source_call_id": "t1", "content": "body"}]
    assert steps[0]["metrics"]["prompt_tokens"] == 8 and steps[0]["metrics"]["cached_tokens"] == 3


def test_export_atif_leaves_out_a_cut_last_line_and_refuses_an_empty_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    stream = tmp_path / "run.jsonl"
    stream.write_text('{"type": "result", "usage": {}, "total_cost_usd": 0.5}\n{"type": "assi')
    out = tmp_path / "t.json"
    assert main([str(stream), "-o", str(out)]) == 0
    assert json.loads(out.read_text())["final_metrics"]["total_cost_usd"] == 0.5
    assert "1 line(s) were not JSON objects" in capsys.readouterr().err
    (tmp_path / "empty.jsonl").write_text("")
    assert main([str(tmp_path / "empty.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has no stream-json lines" in err
