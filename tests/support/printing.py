"""Print mode end to end: the environment that points the CLI at the simulator, a small
project to run it in, and the shipped JSON Schema that checks its output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from mini_claude.headless import load_schema
from mini_claude.simulator import Simulator

PROVIDERS = ("anthropic", "openai")


def point_at(sim: Simulator, provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINI_CLAUDE_MODEL", "sim-sonnet")
    if provider == "anthropic":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.anthropic_base_url)
    else:
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("OPENAI_BASE_URL", sim.openai_base_url)


def run_from(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The CLI runs in ``root`` with nothing on stdin, as ``mini-claude -p`` from a script."""
    root.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(root)
    monkeypatch.setattr("sys.stdin", open("/dev/null"))  # noqa: SIM115 - closed by pytest teardown
    return root


def point_cli_at(sim: Simulator, root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Print mode in ``root`` against the simulator on Anthropic's wire."""
    point_at(sim, "anthropic", monkeypatch)
    return run_from(root, monkeypatch)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "core.py").write_text(
        "def add(a, b):\n    return a + b\n\nclass Box:\n    pass\n"
    )
    (root / "README.md").write_text("# demo project\n")
    return run_from(root, monkeypatch)


SCHEMA = load_schema()
LINE = Draft202012Validator(SCHEMA)
RESULT = Draft202012Validator({"$ref": "#/$defs/result", "$defs": SCHEMA["$defs"]})


def parse_lines(out: str) -> list[dict[str, Any]]:
    lines = [json.loads(text) for text in out.splitlines()]
    for line in lines:
        LINE.validate(line)
    return lines


def parse_result(out: str) -> dict[str, Any]:
    (text,) = out.splitlines()  # json prints one object, on one line
    result: dict[str, Any] = json.loads(text)
    RESULT.validate(result)
    return result
