"""mini-claude as a Harbor installed agent: one print-mode run per task, in the task's container.

    harbor run -d terminal-bench@2.0 -m anthropic/claude-sonnet-4-5 \\
        -a integrations.harbor.mini_claude_agent:MiniClaude

(see docs/harbor.md). The model is ``PROVIDER/MODEL``: ``anthropic/...`` speaks
Anthropic's API, anything else (``openai/...``, ``ollama/...``) the OpenAI-compatible one.
Keys and endpoints come from the host's environment or ``--ae KEY=VALUE``:
ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL, OPENAI_API_KEY / OPENAI_BASE_URL. They are passed to
the container's environment, never written into a command.

What is collected in the trial's agent logs: the stream-json lines of the run
(``mini-claude.jsonl``), its stderr, its transcripts (``home/``), and the ATIF trajectory
that ``mini-claude export-atif`` made of the lines inside the container
(``trajectory.json``), from which the trial's token counts and cost are filled in.

This file imports harbor (Python >= 3.12), so it lives outside the mini_claude package.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from harbor.agents.installed.base import BaseInstalledAgent, with_prompt_template
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext
from harbor.models.trajectories import Trajectory

# What `uv tool install` installs: the registry's package by default; a wheel path or a VCS
# URL through MINI_CLAUDE_PACKAGE (e.g. git+https://example.org/you/mini-claude).
DEFAULT_PACKAGE = "mini-claude"
PYTHON_VERSION = "3.12"
STREAM_FILE = "mini-claude.jsonl"
STDERR_FILE = "mini-claude.stderr.txt"
PROMPT_FILE = "prompt.txt"
TRAJECTORY_FILE = "trajectory.json"
INSTRUCTION_VARIABLE = "MINI_CLAUDE_TASK_INSTRUCTION"
PATH_SETUP = 'export PATH="$HOME/.local/bin:$PATH"; '
# Passed through from the host (or --ae) when set, the keys included.
FORWARDED = (
    "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL",
    "MINI_CLAUDE_CONTEXT_WINDOW", "MINI_CLAUDE_THINKING_TOKENS", "MINI_CLAUDE_EFFORT",
)


class MiniClaude(BaseInstalledAgent):
    """Installs mini-claude with uv and runs ``mini-claude -p`` on the task's instruction."""

    @staticmethod
    def name() -> str:
        return "mini-claude"

    def get_version_command(self) -> str | None:
        return f"{PATH_SETUP}mini-claude --version"

    def parse_version(self, stdout: str) -> str:
        return stdout.strip().removeprefix("mini-claude").strip()

    def _package(self) -> str:
        spec = self._get_env("MINI_CLAUDE_PACKAGE") or DEFAULT_PACKAGE
        if self._version and spec == DEFAULT_PACKAGE:
            return f"{spec}=={self._version}"
        return spec

    async def install(self, environment: BaseEnvironment) -> None:
        if await self.is_requested_version_installed(environment):
            return
        await self.ensure_system_dependencies(environment, ("curl", "bash", "git", "ripgrep"))
        await self.exec_as_agent(
            environment,
            command=(
                "set -euo pipefail; "
                "if ! command -v uv >/dev/null 2>&1; then "
                "curl -LsSf https://astral.sh/uv/install.sh | sh; fi; "
                f"{PATH_SETUP}"
                f"uv tool install --force --python {PYTHON_VERSION} "
                f"{shlex.quote(self._package())} && mini-claude --version"
            ),
        )

    def model_environment(self) -> dict[str, str]:
        """Provider, model, keys and endpoints for the run, from ``-m PROVIDER/MODEL``."""
        env = {name: value for name in FORWARDED if (value := self._get_env(name))}
        if self.model_name:
            provider, _, model = self.model_name.partition("/")
            if not model:
                provider, model = "", provider
            env["MINI_CLAUDE_MODEL"] = model
            if provider:
                env["MINI_CLAUDE_PROVIDER"] = "anthropic" if provider == "anthropic" else "openai"
        return env

    @with_prompt_template
    async def run(self, instruction: str, environment: BaseEnvironment,
                  context: AgentContext) -> None:
        logs = self.environment_logs_dir.as_posix()
        stream, stderr = f"{logs}/{STREAM_FILE}", f"{logs}/{STDERR_FILE}"
        prompt, trajectory = f"{logs}/{PROMPT_FILE}", f"{logs}/{TRAJECTORY_FILE}"
        env = {
            **self.model_environment(),
            **self._resolved_env_vars,
            "MINI_CLAUDE_HOME": f"{logs}/home",  # transcripts are collected with the logs
            INSTRUCTION_VARIABLE: instruction,
        }
        q = shlex.quote
        await self.exec_as_agent(
            environment,
            env=env,
            command=(
                f"{PATH_SETUP}mkdir -p {q(logs)}; "
                f'printf "%s" "${INSTRUCTION_VARIABLE}" > {q(prompt)}; '
                f"unset {INSTRUCTION_VARIABLE}; "
                f"mini-claude -p --output-format stream-json --yes < {q(prompt)} "
                f"> {q(stream)} 2> {q(stderr)}; status=$?; "
                f"mini-claude export-atif {q(stream)} --prompt-file {q(prompt)} "
                f"-o {q(trajectory)} 2>> {q(stderr)}; "
                "exit $status"
            ),
        )

    def convert_trajectory(self, logs_dir: Path) -> Trajectory | None:
        """The trajectory made inside the container, checked by Harbor's own model."""
        path = logs_dir / TRAJECTORY_FILE
        if not path.is_file():
            return None
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return Trajectory.model_validate(data)

    def populate_context_post_run(self, context: AgentContext) -> None:
        try:
            trajectory = self.convert_trajectory(self.logs_dir)
        except (OSError, ValueError) as exc:
            self.logger.warning(f"mini-claude's trajectory could not be read: {exc}")
            return
        if trajectory is None or trajectory.final_metrics is None:
            return
        metrics = trajectory.final_metrics
        context.cost_usd = metrics.total_cost_usd
        context.n_input_tokens = metrics.total_prompt_tokens or 0
        context.n_cache_tokens = metrics.total_cached_tokens or 0
        context.n_output_tokens = metrics.total_completion_tokens or 0
