"""task: hand one job to a sub-agent that works in a context of its own.

Running a sub-agent takes the model, the pipeline and a transcript, none of which a
tool holds: the session injects a runner, and this module only describes the tool
and checks its arguments. The sub-agent's final text is the whole result; nothing
else of its work enters the caller's context.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mini_claude.protocol import ToolOutput, ToolSpec
from mini_claude.tool_kinds import ToolTraits
from mini_claude.tools.base import NeverAsks, Prepared, ToolContext
from mini_claude.tools.common import error_output

TOOL_NAME = "task"
MAX_DESCRIPTION_CHARS = 80


@dataclass(frozen=True, slots=True)
class TaskRequest:
    description: str  # a few words, shown in the status bar
    prompt: str
    agent_type: str


TaskRunner = Callable[[TaskRequest, ToolContext], Awaitable[ToolOutput]]


def task_spec(types: Sequence[tuple[str, str]], default_type: str) -> ToolSpec:
    listing = "\n".join(f"- {name}: {description}" for name, description in types)
    return ToolSpec(
        name=TOOL_NAME,
        description=(
            "Hand a self-contained job to a sub-agent that works in its own context and "
            "returns only its final answer: use it for searches and reading that would fill "
            "your context (\"where is the config loaded, and how?\"), or for independent "
            "pieces of work. The sub-agent sees none of this conversation, so the prompt must "
            "say everything it needs and what to report back. Several task calls in one reply "
            "run at the same time.\n\nAgent types:\n" + listing
        ),
        input_schema={
            "type": "object",
            "properties": {
                "description": {
                    "type": "string",
                    "description": "A few words saying what the sub-agent does.",
                },
                "prompt": {
                    "type": "string",
                    "description": "The whole job: what to find or do, and what to report.",
                },
                "agent_type": {
                    "type": "string",
                    "description": f"Which kind of sub-agent (default {default_type}).",
                },
            },
            "required": ["description", "prompt"],
            "additionalProperties": False,
        },
    )


class TaskTool(NeverAsks):
    """Runs in the caller's permissions: the sub-agent's own calls ask, not this one."""

    traits = ToolTraits(rule_kind="name", rule_argument="agent_type",
                        claude_names=("Task", "Agent"), plan_mode=True, concurrent=True)

    def __init__(
        self, types: Sequence[tuple[str, str]], runner: TaskRunner, default_type: str
    ) -> None:
        self.spec = task_spec(types, default_type)
        self.type_names = [name for name, _ in types]
        self.runner = runner
        self.default_type = default_type

    async def run(
        self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared
    ) -> ToolOutput:
        prompt = str(args.get("prompt", ""))
        if not prompt.strip():
            return error_output("task needs a prompt: the whole job for the sub-agent")
        agent_type = str(args.get("agent_type") or self.default_type).strip()
        if agent_type not in self.type_names:
            return error_output(
                f"unknown agent_type {agent_type!r}; known types: {', '.join(self.type_names)}"
            )
        description = " ".join(str(args.get("description", "")).split())
        if not description:
            description = " ".join(prompt.split())
        if len(description) > MAX_DESCRIPTION_CHARS:
            description = description[: MAX_DESCRIPTION_CHARS - 1] + "…"
        return await self.runner(TaskRequest(description, prompt, agent_type), ctx)
