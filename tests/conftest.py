"""Fixtures every test shares: a private home for each test and a running model simulator."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from mini_claude.tools.registry import declare_builtin_tools

if TYPE_CHECKING:
    from mini_claude.settings import Settings
    from mini_claude.simulator import Simulator

declare_builtin_tools()  # as every front end does before it reads a rule

# Variables that could point a test at a real account or a real server.
REAL_ENDPOINT_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than there are cores. Many tests spend most of their time
    waiting on a child process, a terminal or the simulator, and a third worker on two cores
    fills that time (the suite took 433 s with two workers, 364 s with three)."""
    return (os.cpu_count() or 1) + 1


# Shared fixtures of the print-mode tests (the `project` they run in).
pytest_plugins = ["tests.support.printing", "tests.support.agent", "tests.support.hostile"]


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own ``MINI_CLAUDE_HOME`` and ``HOME``, so nothing reaches the real ones.

    Keys and base URLs from the developer's shell are removed: a test that needs
    a model talks to the simulator and sets what it needs itself.
    """
    home = tmp_path / "mini-claude-home"
    monkeypatch.setenv("MINI_CLAUDE_HOME", str(home))
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    for name in REAL_ENDPOINT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def simulator() -> Iterator[Simulator]:
    """A simulator on 127.0.0.1 answering "Done." until a test sets ``policy`` or injects faults."""
    from mini_claude.simulator import Simulator

    with Simulator() as sim:
        yield sim


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Settings with a 100K-token window and a private home, as the context tests use them."""
    from tests.support.context_builders import isolated_settings

    return isolated_settings(tmp_path, monkeypatch)
