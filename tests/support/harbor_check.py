"""Run by the Harbor environment's Python 3.12 (not by pytest): the Harbor adapter runs one
task through a stand-in for the container, then Harbor's own models check what it left.

    python harbor_check.py PROJECT LOGS MODEL INSTRUCTION ENV_JSON

prints one JSON object: the trial context Harbor filled in, and the trajectory check.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path, PurePosixPath

from harbor.environments.base import ExecResult
from harbor.models.agent.context import AgentContext
from harbor.utils.trajectory_validator import TrajectoryValidator

from integrations.harbor.mini_claude_agent import TRAJECTORY_FILE, MiniClaude


class FolderEnvironment:
    """The container's part the adapter uses (``exec``), played by a folder on this machine."""

    def __init__(self, root: Path) -> None:
        self.root = root

    async def exec(self, command: str, cwd: str | None = None,
                   env: dict[str, str] | None = None, timeout_sec: int | None = None,
                   user: str | int | None = None) -> ExecResult:
        process = await asyncio.create_subprocess_exec(
            "bash", "-c", command, cwd=cwd or self.root, env={**os.environ, **(env or {})},
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), timeout_sec or 120)
        assert process.returncode is not None
        return ExecResult(stdout=out.decode(), stderr=err.decode(),
                          return_code=process.returncode)


async def main(project: Path, logs: Path, model: str, instruction: str,
               env: dict[str, str]) -> dict[str, object]:
    agent = MiniClaude(logs_dir=logs, model_name=model, extra_env=env,
                       environment_logs_dir=PurePosixPath(str(logs)))
    context = AgentContext()
    await agent.run(instruction, FolderEnvironment(project), context)  # type: ignore[arg-type]
    agent.populate_context_post_run(context)
    validator = TrajectoryValidator()
    valid = validator.validate(logs / TRAJECTORY_FILE)
    return {"context": context.model_dump(mode="json"), "valid": valid,
            "errors": validator.get_errors(), "logs": sorted(p.name for p in logs.iterdir())}


if __name__ == "__main__":
    project, logs, model, instruction, env = sys.argv[1:6]
    report = asyncio.run(main(Path(project), Path(logs), model, instruction, json.loads(env)))
    print(json.dumps(report))
