"""Headless runs end to end: print mode over HTTP against the simulator, output checked
against the shipped JSON Schema, each flag exercised as a CI job would use it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from mini_claude.cli import main
from mini_claude.simulator import Fault, Reply, ScriptedPolicy, SimConversation, Simulator, ToolCall
from tests.support.printing import PROVIDERS, RESULT, SCHEMA, parse_lines, parse_result, point_at


def test_the_schema_is_itself_valid_and_strict() -> None:
    Draft202012Validator.check_schema(SCHEMA)
    bad = {"type": "result", "subtype": "success", "is_error": True}
    assert not RESULT.is_valid(bad)


# ---- json ------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_json_prints_one_claude_code_shaped_result(
    provider: str,
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = ScriptedPolicy(
        [
            Reply("Reading.", tool_calls=[ToolCall("read_file", {"path": "pkg/core.py"})]),
            Reply(text="add() returns a + b"),
        ]
    )
    point_at(simulator, provider, monkeypatch)
    code = main(["-p", "what does add do?", "--output-format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = parse_result(out)
    assert result["type"] == "result" and result["subtype"] == "success"
    assert result["is_error"] is False and "errors" not in result
    assert result["result"] == "add() returns a + b"
    assert result["num_turns"] == 2 and result["stop_reason"] == "end_turn"
    usage = result["usage"]
    prompt = sum(usage[k] for k in ("input_tokens", "cache_creation_input_tokens",
                                    "cache_read_input_tokens"))
    assert prompt > 0 and usage["output_tokens"] > 0
    assert result["total_cost_usd"] > 0 and result["duration_ms"] >= result["duration_api_ms"]
    assert result["mini_claude"]["requests"] == 2
    assert result["mini_claude"]["peak_context_tokens"] > 0
    transcripts = list((Path(os.environ["MINI_CLAUDE_HOME"]) / "transcripts").glob("*.jsonl"))
    assert [p.stem for p in transcripts] == [result["session_id"]]
    assert "→ read_file pkg/core.py" in err  # tool activity still narrated on stderr


def test_a_failed_turn_is_an_error_result_with_exit_1(
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    point_at(simulator, "anthropic", monkeypatch)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "bad-key")
    code = main(["-p", "hello", "--output-format", "json"])
    out, err = capsys.readouterr()
    assert code == 1
    result = parse_result(out)
    # as Claude Code reports a refused call: "success" that is an error, the text in result
    assert result["subtype"] == "success" and result["is_error"] is True
    assert "ANTHROPIC_API_KEY" in result["result"] and "bad-key" not in out + err
    assert result["api_error_status"] == 401 and result["terminal_reason"] == "api_error"
    assert result["num_turns"] == 0 and result["stop_reason"] is None


# ---- a long session in both formats ----------------------------------------------------


def busy_policy(steps: int) -> ScriptedPolicy:
    """Reads big files, re-reads some, hits a missing file, an unknown tool and a denied
    command, then answers: enough to fire tiers and compact a small window."""
    calls: list[Reply] = []
    for i in range(steps):
        if i % 9 == 4:
            call = ToolCall("read_file", {"path": f"missing_{i}.py"})
        elif i % 11 == 6:
            call = ToolCall("run_shell", {"command": "rm -rf build"})
        elif i % 13 == 8:
            call = ToolCall("no_such_tool", {"x": 1})
        else:
            call = ToolCall("read_file", {"path": f"src/file_{i % 12}.py"})
        calls.append(Reply(f"Step {i}.", tool_calls=[call]))
    return ScriptedPolicy([*calls, Reply(text="All files reviewed.")])


def big_files(root: Path) -> None:
    (root / "src").mkdir(exist_ok=True)
    for n in range(12):
        body = "".join(f"def f_{n}_{j}(x):\n    return x * {j}  # padding\n" for j in range(90))
        (root / "src" / f"file_{n}.py").write_text(body)


@pytest.mark.parametrize("output_format", ["stream-json", "json"])
def test_a_long_session_with_compactions_and_tool_errors_validates_line_by_line(
    output_format: str,
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    big_files(project)
    point_at(simulator, "anthropic", monkeypatch)
    monkeypatch.setenv("MINI_CLAUDE_CONTEXT_WINDOW", "24000")
    monkeypatch.setenv("MINI_CLAUDE_SUMMARY_MIN_WORK", "4")
    # so that tier lines appear too: small cuts, each worth a cache break
    monkeypatch.setenv("MINI_CLAUDE_BUDGET_LOW_CHARS", "2000")
    monkeypatch.setenv("MINI_CLAUDE_BUDGET_MIN_FREE_PCT", "5")
    first, second = busy_policy(40), busy_policy(12)
    simulator.policy = first
    args = ["--output-format", output_format, "--yes", "--disallowed-tools", "run_shell(rm:*)"]
    code = main(["-p", "review every file", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    if output_format == "json":
        result = parse_result(out)
        assert result["mini_claude"]["compactions"] >= 1
        assert result["mini_claude"]["tokens_freed"]
        assert len(result["permission_denials"]) == 4
        return
    lines = parse_lines(out)
    assert lines[0]["subtype"] == "init" and lines[-1]["type"] == "result"
    assert sum(line["type"] == "result" for line in lines) == 1
    own = [line["subtype"] for line in lines if line["type"] == "mini_claude"]
    assert "compaction_started" in own and "compaction_finished" in own
    assert "tier_fired" in own and "usage" in own
    finished = next(line for line in lines if line.get("subtype") == "compaction_finished")
    assert finished["tokens_after"] < finished["tokens_before"]
    results = [line["message"]["content"][0] for line in lines if line["type"] == "user"]
    assert len(results) == 40 and sum(r["is_error"] for r in results) >= 10
    uses = [
        block["id"]
        for line in lines
        if line["type"] == "assistant"
        for block in line["message"]["content"]
        if block["type"] == "tool_use"
    ]
    assert [r["tool_use_id"] for r in results] == uses
    result = lines[-1]
    denied = result["permission_denials"]
    assert {d["tool_name"] for d in denied} == {"run_shell"} and len(denied) == 4
    assert all(d["tool_use_id"] in uses for d in denied)
    assert result["mini_claude"]["compactions"] >= 1
    assert result["num_turns"] == 41
    # the next run continues the compacted session; its lines validate too
    simulator.policy = second
    assert main(["-c", "-p", "and once more", *args]) == 0
    again = parse_lines(capsys.readouterr().out)
    assert again[0]["session_id"] == result["session_id"] == again[-1]["session_id"]


def test_retries_are_lines_of_their_own_in_stream_json(
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = ScriptedPolicy([Reply(text="made it")])
    simulator.inject(Fault("overloaded", on_request=1))
    point_at(simulator, "openai", monkeypatch)
    assert main(["-p", "hi", "--output-format", "stream-json"]) == 0
    lines = parse_lines(capsys.readouterr().out)
    (retry,) = [line for line in lines if line.get("subtype") == "retry"]
    assert retry["attempt"] == 1 and retry["delay_ms"] >= 0
    assert lines[-1]["result"] == "made it"


# ---- --max-turns -----------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_max_turns_stops_with_error_max_turns_and_the_session_continues(
    provider: str,
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def counted(conv: SimConversation) -> Reply:
        return Reply(text=f"resumed with {len(conv.tool_uses())} earlier tool calls")

    simulator.policy = ScriptedPolicy(
        [
            Reply("one", tool_calls=[ToolCall("list_files", {"path": "."})]),
            Reply("two", tool_calls=[ToolCall("read_file", {"path": "README.md"})]),
            Reply("three", tool_calls=[ToolCall("read_file", {"path": "pkg/core.py"})]),
            counted,
        ]
    )
    point_at(simulator, provider, monkeypatch)
    code = main(["-p", "look around", "--max-turns", "2", "--output-format", "json"])
    out, err = capsys.readouterr()
    assert code == 1, err
    result = parse_result(out)
    assert result["subtype"] == "error_max_turns" and result["is_error"] is True
    # Claude Code counts the turn it did not start: --max-turns 2 reports 3
    assert result["num_turns"] == 3 and result["stop_reason"] == "tool_use"
    assert result["terminal_reason"] == "max_turns"
    assert result["result"] == "two"
    assert len(simulator.requests) == 2
    assert main(["-c", "-p", "go on"]) == 0
    out, _ = capsys.readouterr()
    assert all(r.status == 200 for r in simulator.requests), [r.error for r in simulator.requests]
    assert "resumed with 3 earlier tool calls" in out  # the history the server got was whole


def test_max_turns_in_text_mode_says_why_on_stderr(
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = ScriptedPolicy(
        [Reply("one", tool_calls=[ToolCall("list_files", {"path": "."})])]
    )
    point_at(simulator, "openai", monkeypatch)
    assert main(["-p", "look", "--max-turns", "1"]) == 1
    _, err = capsys.readouterr()
    assert "stopped after 1 model calls (--max-turns)" in err


@pytest.mark.parametrize("value", ["0", "-3", "two"])
def test_a_bad_max_turns_is_a_usage_error(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["-p", "x", "--max-turns", value])
    assert exited.value.code == 2
    assert "--max-turns" in capsys.readouterr().err


def test_print_only_flags_without_p_are_refused_not_ignored(
    project: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--max-turns", "3", "--allowed-tools", "write_file"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--max-turns only applies to print mode" in err
    assert main(["--max-turns", "3", "--system-prompt", "be brief"]) == 2
    err = capsys.readouterr().err
    assert "--max-turns, --system-prompt only apply to print mode" in err


# ---- --allowed-tools / --disallowed-tools / settings files -----------------------------


def shell_policy(*commands: str) -> ScriptedPolicy:
    """One reply running every command, then an answer quoting each result's first line."""

    def quote(conv: SimConversation) -> Reply:
        return Reply(text=" | ".join(r.content.strip()[:120] for r in conv.last_tool_results()))

    calls = [ToolCall("run_shell", {"command": c}) for c in commands]
    return ScriptedPolicy([Reply(tool_calls=calls), quote])


def test_allowed_tools_let_a_ci_job_run_exactly_what_it_needs_without_yes(
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = shell_policy("touch allowed.txt", "touch a.txt; touch chained.txt")
    point_at(simulator, "anthropic", monkeypatch)
    code = main(
        ["-p", "make files", "--allowed-tools", "run_shell(touch:*)", "--output-format", "json"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert (project / "allowed.txt").exists()
    assert not (project / "chained.txt").exists() and not (project / "a.txt").exists()
    result = parse_result(out)
    (denied,) = result["permission_denials"]
    assert denied["tool_input"] == {"command": "touch a.txt; touch chained.txt"}
    assert "Permission denied" in result["result"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_denied_write_and_edit_are_reported_with_the_arguments_the_model_sent(
    provider: str,
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Print mode asks nobody: both calls are refused and listed with exactly the model's
    arguments (nothing the permission step prepared rides along)."""
    (project / "notes.txt").write_text("alpha\nbeta\n")
    write = {"path": "new.txt", "content": "hello\n"}
    edit = {"path": "notes.txt", "old": "beta", "new": "BETA"}
    simulator.policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("write_file", write), ToolCall("edit_file", edit)]),
        Reply(text="could not write"),
    ])
    point_at(simulator, provider, monkeypatch)
    code = main(["-p", "write and edit", "--output-format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = parse_result(out)
    denied = result["permission_denials"]
    assert [(d["tool_name"], d["tool_input"]) for d in denied] == [
        ("write_file", write), ("edit_file", edit)
    ]
    assert not (project / "new.txt").exists()
    assert (project / "notes.txt").read_text() == "alpha\nbeta\n"


def test_disallowed_tools_win_over_yes_and_over_allow(
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (project / "keep.txt").write_text("precious")
    simulator.policy = shell_policy("ls && rm keep.txt", "echo fine")
    point_at(simulator, "openai", monkeypatch)
    code = main(
        [
            "-p",
            "clean up",
            "--yes",
            "--allowedTools",
            "run_shell",
            "--disallowedTools",
            "run_shell(rm:*),write_file",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert (project / "keep.txt").read_text() == "precious"
    assert "Permission denied by the rule 'run_shell(rm:*)' from --disallowed-tools" in out
    assert "fine" in out


def test_a_rule_that_cannot_be_read_is_a_usage_error(
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    point_at(simulator, "anthropic", monkeypatch)
    assert main(["-p", "x", "--allowed-tools", "todo_write(src/*)"]) == 2
    _, err = capsys.readouterr()
    assert err.count("\n") == 1 and "todo_write rules take none" in err
    assert simulator.requests == []


def test_a_hostile_project_file_cannot_allow_itself_the_shell_but_may_deny(
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = project / ".mini-claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(
        json.dumps({"permissions": {"allow": ["run_shell"], "deny": ["edit_file"]}})
    )
    simulator.policy = shell_policy("touch pwned.txt")
    point_at(simulator, "anthropic", monkeypatch)
    assert main(["-p", "hi"]) == 0
    out, err = capsys.readouterr()
    assert not (project / "pwned.txt").exists()
    assert err.count("are not used beyond their deny rules") == 1
    assert ".mini-claude/settings.json" in err
    simulator.policy = ScriptedPolicy(
        [
            Reply(
                tool_calls=[
                    ToolCall("edit_file", {"path": "README.md", "old": "demo", "new": "x"})
                ]
            ),
            lambda conv: Reply(text=conv.last_tool_results()[0].content),
        ]
    )
    assert main(["-p", "edit", "--yes"]) == 0
    out, _ = capsys.readouterr()
    assert "Permission denied by the rule 'edit_file'" in out
    assert (project / "README.md").read_text() == "# demo project\n"


def test_the_users_settings_file_may_allow(
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home = Path(os.environ["MINI_CLAUDE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["run_shell(touch:*)"]}})
    )
    simulator.policy = shell_policy("touch from-user-rule.txt")
    point_at(simulator, "openai", monkeypatch)
    assert main(["-p", "hi"]) == 0
    _, err = capsys.readouterr()
    assert (project / "from-user-rule.txt").exists(), err


# ---- system prompt ---------------------------------------------------------------------


def system_text(simulator: Simulator) -> str:
    return json.dumps(simulator.requests[-1].body)


def test_append_system_prompt_adds_standing_instructions(
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    point_at(simulator, "anthropic", monkeypatch)
    marker = "Always answer in French, job CI-4471."
    assert main(["-p", "hi", "--append-system-prompt", marker]) == 0
    body = system_text(simulator)
    assert marker in body and "You are mini-claude" in body


def test_system_prompt_file_replaces_the_built_in_instructions(
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (project / "role.md").write_text("You are a release-notes writer. Be brief.\n")
    point_at(simulator, "openai", monkeypatch)
    assert main(["-p", "hi", "--system-prompt-file", "role.md"]) == 0
    body = system_text(simulator)
    assert "release-notes writer" in body and "You are mini-claude" not in body
    assert str(project) in body  # the environment section stays


def test_a_missing_system_prompt_file_is_one_line_and_exit_2(
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    point_at(simulator, "openai", monkeypatch)
    assert main(["-p", "hi", "--system-prompt-file", "nope.md", "--output-format", "json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "nope.md" in err
    assert simulator.requests == []


# ---- interruption ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sig", "output_format"), [(signal.SIGTERM, "json"), (signal.SIGINT, "stream-json")]
)
def test_an_interrupted_run_still_ends_with_an_error_result(
    sig: signal.Signals,
    output_format: str,
    project: Path,
    simulator: Simulator,
) -> None:
    simulator.policy = ScriptedPolicy(
        [Reply("Waiting.", tool_calls=[ToolCall("run_shell", {"command": "sleep 30"})])]
    )
    env = {
        **os.environ,
        "MINI_CLAUDE_MODEL": "sim-sonnet",
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": simulator.anthropic_base_url,
    }
    command = [sys.executable, "-m", "mini_claude.cli", "-p", "wait", "--output-format"]
    command += [output_format, "--allowed-tools", "run_shell(sleep:*)"]
    proc = subprocess.Popen(
        command, cwd=project, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stderr is not None and proc.stdout is not None
        if output_format == "json":
            while "→ run_shell sleep 30" not in proc.stderr.readline():
                assert proc.poll() is None
        else:
            while '"type": "assistant"' not in proc.stdout.readline():
                assert proc.poll() is None
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + sig, err  # as a shell reports it: SIGTERM 143
    result = json.loads(out.splitlines()[-1])
    RESULT.validate(result)
    assert result["is_error"] is True and result["subtype"] == "error_during_execution"
    assert result["errors"] == ["interrupted"] and result["num_turns"] == 1
    assert "Traceback" not in err
