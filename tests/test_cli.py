import os
import subprocess
import sys
from pathlib import Path

import pytest

from mini_claude import __version__
from mini_claude.cli import main
from mini_claude.simulator import Simulator
from tests.support.printing import point_at, run_from


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "MINI_CLAUDE_"))
    }
    base.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "mini_claude.cli", *args],
        env=base,
        cwd=cwd,
        text=True,
        capture_output=True,
        timeout=60,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
    )


def test_help_and_version_do_not_import_an_sdk() -> None:
    code = (
        "import sys\nfrom mini_claude.cli import main\n"
        "for argv in (['--help'], ['--version']):\n"
        "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
        "heavy = ('anthropic', 'openai', 'rich', 'prompt_toolkit')\n"
        "loaded = [m for m in heavy if m in sys.modules]\n"
        "print('LOADED', loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "LOADED []" in out.stdout
    assert "--print" in out.stdout and __version__ in out.stdout


def test_missing_configuration_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = run_cli(
        "-p",
        "hello",
        env={"MINI_CLAUDE_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)},
        cwd=tmp_path,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "ANTHROPIC_API_KEY" in lines[0]
    assert "OPENAI_API_KEY" in lines[0] and "mini-claude --demo" in lines[0]
    assert "Traceback" not in result.stderr


def test_bad_flag_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli("--provider", "gemini", cwd=tmp_path)
    assert result.returncode == 2 and "invalid choice" in result.stderr


def test_bad_environment_value_is_one_line(tmp_path: Path) -> None:
    result = run_cli(
        "-p",
        "x",
        env={
            "ANTHROPIC_API_KEY": "k",
            "MINI_CLAUDE_CONTEXT_WINDOW": "lots",
            "MINI_CLAUDE_HOME": str(tmp_path / "h"),
        },
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert "MINI_CLAUDE_CONTEXT_WINDOW" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("args", [(), ("-c",)])
def test_repl_refuses_without_a_terminal(tmp_path: Path, args: tuple[str, ...]) -> None:
    result = run_cli(
        *args, env={"ANTHROPIC_API_KEY": "k", "MINI_CLAUDE_HOME": str(tmp_path / "h")}, cwd=tmp_path
    )
    assert result.returncode == 2 and "terminal" in result.stderr


@pytest.mark.parametrize(
    "argv",
    [["--frobnicate"], ["--output-format", "yaml", "-p", "x"], ["--max-turns", "zero", "-p", "x"]],
)
def test_a_usage_error_is_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    _, err = capsys.readouterr()
    (line,) = err.splitlines()
    assert line.startswith("mini-claude: ") and line.endswith("(see mini-claude --help)")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-p", "hi", "-c", "--resume-at", ""], "--resume-at needs a message id"),
        (["-p", "hi", "-c", "--resume-at", "  "], "--resume-at needs a message id"),
        (["-p", "hi", "--model", ""], "--model needs a model name"),
        (["-p", "hi", "-r", ""], "--resume needs a session id"),
    ],
)
def test_an_empty_flag_value_is_refused_not_ignored(
    argv: list[str], message: str, simulator: Simulator, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], isolated_home: Path,
) -> None:
    point_at(simulator, "anthropic", monkeypatch)
    run_from(tmp_path / "project", monkeypatch)
    assert main(["-p", "first"]) == 0  # a session to continue
    capsys.readouterr()
    served = len(simulator.requests)
    assert main(argv) == 2
    _, err = capsys.readouterr()
    (line,) = err.strip().splitlines()
    assert message in line
    assert len(simulator.requests) == served  # nothing was sent
