"""The benchmark counts with the real tokenizer, or refuses to run, or says so loudly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

RUN_BENCH = ("from mini_claude.bench import main; import sys; "
             "sys.exit(main(sys.argv[1:]))")


def _bench_without_tiktoken(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The benchmark in a child whose ``import tiktoken`` fails, as on a clone without it."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "tiktoken.py").write_text("raise ImportError('not installed')\n", encoding="utf-8")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shadow), str(root)])}
    return subprocess.run(
        [sys.executable, "-c", RUN_BENCH, "--quick", "--windows", "32000", "--strategies",
         "none", "--no-startup", "--no-scaling", "--no-poor-run", "--out",
         str(tmp_path / "out"), *args],
        capture_output=True, text=True, env=env, timeout=300, check=False)


def test_without_the_tokenizer_the_bench_refuses_in_one_line(tmp_path: Path) -> None:
    done = _bench_without_tiktoken(tmp_path)
    assert done.returncode == 1
    assert "real tokenizer is not installed" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out" / "report.md").exists()


@pytest.mark.slow
def test_asked_to_approximate_it_runs_and_says_so(tmp_path: Path) -> None:
    done = _bench_without_tiktoken(tmp_path, "--approximate-tokens")
    assert done.returncode == 0, done.stderr
    assert "WARNING: tokens counted as approximate" in done.stderr
    assert "tokens counted with approximate" in done.stdout
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "approximate (4 characters per token" in report
