"""``--input-format stream-json`` without the SDK: lines in, a turn per message, control
answers interleaved, and a clean end when stdin closes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mini_claude.simulator import Reply, Simulator
from tests.support.agent_sdk import ROOT, cli_environment
from tests.support.mcp import Recorder

FLAGS = ["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"]


def _user(text: str) -> str:
    return json.dumps({"type": "user", "session_id": "", "parent_tool_use_id": None,
                       "message": {"role": "user", "content": text}})


def _run(
    sim: Simulator, project: Path, stdin: str, *flags: str
) -> subprocess.CompletedProcess[str]:
    project.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **cli_environment(sim, "anthropic", project.parent / "home")}
    return subprocess.run([sys.executable, "-m", "mini_claude.cli", *FLAGS, *flags],
                          input=stdin, capture_output=True, text=True, cwd=project, env=env,
                          timeout=120, check=False)


def test_one_turn_per_message_and_control_lines_never_reach_the_model(
    simulator: Simulator, tmp_path: Path
) -> None:
    recorder = Recorder([Reply("first answer"), Reply("second answer")])
    simulator.policy = recorder
    initialize = json.dumps({"type": "control_request", "request_id": "req_1",
                             "request": {"subtype": "initialize", "hooks": None}})
    unknown = json.dumps({"type": "control_request", "request_id": "req_2",
                          "request": {"subtype": "stop_task", "task_id": "t"}})
    stdin = "\n".join([initialize, "not json", _user("first"), unknown, _user("second")]) + "\n"
    done = _run(simulator, tmp_path / "project", stdin)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    responses = {line["response"]["request_id"]: line["response"] for line in lines
                 if line["type"] == "control_response"}
    assert responses["req_1"]["subtype"] == "success"
    assert responses["req_2"]["subtype"] == "error" and "stop_task" in responses["req_2"]["error"]
    results = [line for line in lines if line["type"] == "result"]
    assert [r["result"] for r in results] == ["first answer", "second answer"]
    assert len({r["session_id"] for r in results}) == 1
    sent = [m.text for conv in recorder.seen for m in conv.messages if m.role == "user"]
    assert not any("control_request" in text or "initialize" in text for text in sent)
    assert "not JSON" in done.stderr


def test_stream_json_input_needs_stream_json_output(simulator: Simulator, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = {**os.environ, **cli_environment(simulator, "anthropic", tmp_path / "home"),
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "mini_claude.cli", "--input-format",
                           "stream-json"], input="", capture_output=True, text=True, cwd=project,
                          env=env, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.strip() == ("mini-claude: --input-format stream-json needs "
                                   "--output-format stream-json")
