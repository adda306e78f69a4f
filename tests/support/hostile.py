"""The real command line against the simulator, for the hostile-input and data-safety tests.

``run`` calls the entry point in this process (stdin given as bytes); ``start``
runs it as a process that can be signalled. Both speak to the strict simulator,
whose refusals the tests check after every run.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from mini_claude.cli import main
from mini_claude.simulator import Simulator

Provider = Literal["anthropic", "openai"]
PROVIDERS: tuple[Provider, ...] = ("anthropic", "openai")
KEY = "sk-test-0123456789abcdef"
WAIT_SECONDS = 30.0
ENDPOINT_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
)


@dataclass(frozen=True)
class Outcome:
    code: int
    out: str
    err: str


@dataclass
class Cli:
    """`mini-claude` in a project folder, pointed at the simulator with one provider."""

    project: Path
    home: Path
    sim: Simulator
    provider: Provider
    capsys: pytest.CaptureFixture[str]
    extra_env: dict[str, str] = field(default_factory=dict)
    unset: set[str] = field(default_factory=set)  # variables to leave out of the environment

    def variables(self) -> dict[str, str]:
        names = (
            ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", self.sim.anthropic_base_url)
            if self.provider == "anthropic"
            else ("OPENAI_API_KEY", "OPENAI_BASE_URL", self.sim.openai_base_url)
        )
        values = {
            names[0]: KEY,
            names[1]: names[2],
            "MINI_CLAUDE_PROVIDER": self.provider,
            "MINI_CLAUDE_HOME": str(self.home),
            "MINI_CLAUDE_MODEL": "sim-sonnet",
            **self.extra_env,
        }
        return {k: v for k, v in values.items() if k not in self.unset}

    def run(self, *args: str, stdin: bytes | None = None, cwd: Path | None = None) -> Outcome:
        self.capsys.readouterr()
        piped: Any = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8") if stdin else None
        with pytest.MonkeyPatch.context() as patch, open(os.devnull) as nothing:
            for name in ENDPOINT_VARIABLES:
                patch.delenv(name, raising=False)
            for name, value in self.variables().items():
                patch.setenv(name, value)
            patch.chdir(cwd or self.project)
            patch.setattr(sys, "stdin", piped or nothing)
            code = main(list(args))
        out, err = self.capsys.readouterr()
        return Outcome(code, out, err)

    def start(self, *args: str, stdin: int | None = subprocess.DEVNULL) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "mini_claude.cli", *args],
            cwd=self.project,
            env={
                **{k: v for k, v in os.environ.items() if k not in ENDPOINT_VARIABLES},
                **self.variables(),
            },
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def transcripts(self) -> list[Path]:
        return sorted((self.home / "transcripts").glob("*.jsonl"))


def make_cli(tmp_path: Path, sim: Simulator, provider: Provider, capsys: Any) -> Cli:
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True, exist_ok=True)
    (project / "pkg" / "core.py").write_text("def add(a, b):\n    return a + b\n")
    (project / "README.md").write_text("# demo project\n")
    return Cli(project, tmp_path / "home", sim, provider, capsys)


def refused(sim: Simulator) -> list[str]:
    """Requests the strict simulator refused as the real API would (faults aside)."""
    return [
        str(r.error) for r in sim.requests if r.status == 400 and r.fault != "prompt_too_long"
    ]


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_records(path: Path) -> list[dict[str, Any]]:
    """Every line of a file as strict JSON in strict UTF-8; fails on anything less."""
    text = path.read_bytes().decode("utf-8")  # strict: no lone surrogates, no bad bytes
    return [
        json.loads(line, parse_constant=_refuse_constant) for line in text.splitlines() if line
    ]


def stored_blocks(path: Path) -> list[dict[str, Any]]:
    return [
        block
        for record in strict_records(path)
        if record["type"] == "message"
        for block in record["message"]["blocks"]
    ]


def wait_for(condition: Callable[[], bool], what: str, seconds: float = WAIT_SECONDS) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.fixture(params=PROVIDERS)
def cli(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    simulator: Simulator,
    capsys: pytest.CaptureFixture[str],
) -> Cli:
    """The command line in a small project, once per provider (a test file may define its
    own ``cli`` to prepare more)."""
    provider: Provider = request.param
    return make_cli(tmp_path, simulator, provider, capsys)
