"""todo_write: the model keeps its plan for multi-step work as a checklist.

The whole list is sent every time (no partial updates to get wrong). The
tool only validates and stores it in the conversation's plan and reports the
change; the agent publishes and records the new version, and compaction writes it back.
"""

from __future__ import annotations

from typing import Any

from mini_claude.plan import MAX_ITEMS, PlanError, parse_todos
from mini_claude.protocol import PlanChanged, ToolOutput, ToolSpec
from mini_claude.tool_kinds import ToolTraits
from mini_claude.tools.base import NeverAsks, Prepared, ToolContext
from mini_claude.tools.common import error_output

SPEC = ToolSpec(
    name="todo_write",
    description=(
        "Your plan for work of three or more steps, as a todo list; send the whole list each "
        "time. One item in_progress at a time; mark items completed as soon as they are done. "
        f"At most {MAX_ITEMS} items."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "description": "The whole list, in order.",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string"},
                        "status": {
                            "type": "string",
                            "enum": ["pending", "in_progress", "completed"],
                        },
                    },
                    "required": ["content", "status"],
                },
            },
        },
        "required": ["todos"],
        "additionalProperties": False,
    },
)


class TodoWriteTool(NeverAsks):
    spec = SPEC
    traits = ToolTraits(claude_names=("TodoWrite",), plan_mode=True)

    async def run(
        self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared
    ) -> ToolOutput:
        try:
            items = parse_todos(args.get("todos"))
        except PlanError as exc:
            return error_output(f"todo list not saved: {exc}")
        ctx.plan.replace(items)
        done, total = ctx.plan.counts()
        if not total:
            return ToolOutput("Todo list cleared.", effects=(PlanChanged(),))
        return ToolOutput(
            f"Todo list saved ({done}/{total} done). Keep it current as you work:\n"
            + ctx.plan.checklist(),
            display=f"saved ({done}/{total} done)",  # the screen shows the checklist itself
            effects=(PlanChanged(),),
        )
