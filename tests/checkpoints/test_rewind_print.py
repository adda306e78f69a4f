"""Print mode: --fork-session leaves the original alone, --resume-at continues from a message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mini_claude.cli import main
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.transcript import list_sessions, load_session
from tests.support.printing import PROVIDERS, parse_lines, point_at

pytest_plugins = ["tests.support.printing"]


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_fork_session_and_resume_at(simulator: Simulator, provider: str, project: Path,
                                    isolated_home: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    point_at(simulator, provider, monkeypatch)
    simulator.policy = ScriptedPolicy([
        Reply("Reading the readme.", [ToolCall("read_file", {"path": "README.md"})]),
        Reply("FIRST-ANSWER about the readme."),
        Reply("SECOND-ANSWER about the code."),
    ], final=Reply("Forked answer."))
    code, out, _ = run(["-p", "what is in the readme", "--output-format", "stream-json"], capsys)
    assert code == 0
    lines = parse_lines(out)
    session_id = lines[0]["session_id"]
    first_answer = next(line["uuid"] for line in lines if line["type"] == "assistant"
                        and "FIRST-ANSWER" in json.dumps(line))
    assert run(["-p", "now the code", "-c"], capsys)[0] == 0
    original = isolated_home / "transcripts" / f"{session_id}.jsonl"
    before = original.read_bytes()

    code, out, err = run(["-p", "try again", "-r", session_id, "--fork-session",
                          "--resume-at", first_answer, "--output-format", "stream-json"], capsys)
    assert code == 0, err
    fork_id = parse_lines(out)[0]["session_id"]
    assert fork_id != session_id
    assert original.read_bytes() == before  # byte-identical
    sent = json.dumps(simulator.requests[-1].body["messages"])
    assert "FIRST-ANSWER" in sent and "SECOND-ANSWER" not in sent and "now the code" not in sent
    forked = load_session(isolated_home / "transcripts" / f"{fork_id}.jsonl")
    assert forked.meta["forked_from"] == session_id
    assert forked.conversation.messages[-1].text == "Forked answer."
    listed = {s.session_id: s.forked_from for s in list_sessions(isolated_home / "transcripts")}
    assert listed == {session_id: "", fork_id: session_id}


def test_fork_and_resume_at_need_a_session_to_resume(
        simulator: Simulator, project: Path, isolated_home: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    point_at(simulator, "anthropic", monkeypatch)
    code, _, err = run(["-p", "hello", "--fork-session"], capsys)
    assert code == 2 and "--fork-session needs -c" in err
    assert run(["-p", "hello"], capsys)[0] == 0
    code, _, err = run(["-p", "hello", "-c", "--resume-at", "0123abcd"], capsys)
    assert code == 2 and "no message with id '0123abcd'" in err
