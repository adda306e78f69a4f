"""Claude Code's command-line forms: options before or after the prompt, one-line usage errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mini_claude.cli import main
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator
from tests.support.printing import PROVIDERS, parse_result, point_at


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("argv", [
    ["-p", "--max-turns", "2", "hi"],
    ["hi", "-p", "--max-turns", "2"],
    ["--max-turns", "2", "-p", "hi"],
    ["-p", "hi", "--max-turns", "2"],
])
def test_options_and_the_prompt_in_any_order(
    argv: list[str],
    provider: str,
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = ScriptedPolicy([Reply(text="Hello back.")])
    point_at(simulator, provider, monkeypatch)
    code = main([*argv, "--output-format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = parse_result(out)
    assert result["result"] == "Hello back."
    (request,) = simulator.requests
    assert request.conversation is not None
    assert [m.text for m in request.conversation.messages] == ["hi"]


def test_a_prompt_after_a_rule_list_follows_a_double_dash(
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = ScriptedPolicy([Reply(text="Fine.")])
    point_at(simulator, "anthropic", monkeypatch)
    assert main(["-p", "--allowed-tools", "read_file", "--", "the prompt"]) == 0
    request = simulator.requests[0]
    assert request.conversation is not None
    assert request.conversation.messages[0].text == "the prompt"
    assert "Fine." in capsys.readouterr().out


@pytest.mark.parametrize("argv", [
    ["--bogus"],
    ["--provider", "gemini"],
    ["-p", "--max-turns", "zero", "hi"],
    ["one", "two"],
])
def test_a_usage_error_is_one_line(argv: list[str], tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "mini_claude.cli", *argv], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("mini-claude: ") and lines[0].endswith("(see mini-claude --help)")


def test_a_bad_rule_for_the_repl_is_one_line_before_anything_starts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setattr("sys.stdin", open("/dev/null"))  # noqa: SIM115 - closed by pytest
    monkeypatch.chdir(tmp_path)
    assert main(["--allowed-tools", "run_shell(unclosed"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "run_shell(unclosed" in err
