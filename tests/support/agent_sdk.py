"""The real Claude Agent SDK driving our CLI (``cli_path``) against the simulator."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from claude_agent_sdk import ClaudeAgentOptions

from mini_claude.simulator import Simulator

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]
OUR_CLI = Path(sys.executable).parent / "mini-claude"
DEADLINE = 120.0  # seconds for a whole conversation, on a loaded machine


def cli_environment(sim: Simulator, provider: str, home: Path) -> dict[str, str]:
    """What the SDK passes on to our CLI: the simulator, our code first on the path."""
    env = {
        "MINI_CLAUDE_MODEL": "sim-sonnet",
        "MINI_CLAUDE_HOME": str(home),
        "MINI_CLAUDE_PROVIDER": provider,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    if provider == "anthropic":
        env.update(ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=sim.anthropic_base_url)
    else:
        env.update(OPENAI_API_KEY="test-key", OPENAI_BASE_URL=sim.openai_base_url)
    return env


def sdk_options(sim: Simulator, provider: str, project: Path, **options: Any) -> ClaudeAgentOptions:
    project.mkdir(parents=True, exist_ok=True)
    home = project.parent / "mini-claude-home"
    stderr: list[str] = []
    return ClaudeAgentOptions(
        cli_path=str(OUR_CLI),
        cwd=str(project),
        env=cli_environment(sim, provider, home),
        stderr=stderr.append,
        **options,
    )


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """One conversation, bounded so a hang fails the test instead of the suite."""

    async def bounded() -> T:
        return await asyncio.wait_for(coroutine, DEADLINE)

    return asyncio.run(bounded())
