"""Fixtures of the agent's end-to-end tests: each test runs once per provider's wire, and
``make_run`` builds sessions against the simulator in the test's project."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_claude.simulator import Simulator
from tests.support.agent import PROVIDERS, run_factory


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_run(simulator: Simulator, isolated_home: Path, project: Path) -> Iterator[Any]:
    with run_factory(simulator, isolated_home, project) as make:
        yield make
