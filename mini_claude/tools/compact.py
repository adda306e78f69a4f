"""compact: lets the model ask for a summary of the session.

A summary needs the model and the whole history, which a tool does not hold, so
the tool only records the request in its context; the agent summarizes before
its next request. Its arguments are checked by the registry like any other's.
"""

from __future__ import annotations

from typing import Any

from mini_claude.protocol import ToolOutput, ToolSpec
from mini_claude.tools.base import PermissionRequest, ToolContext

SPEC = ToolSpec(
    name="compact",
    description=(
        "Ask for the conversation to be summarized now, freeing context. Use it when a long "
        "piece of work is done and its details are no longer needed, before starting "
        "something new. `focus` names what the summary must keep in detail."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "focus": {
                "type": "string",
                "description": "What the summary should concentrate on (optional).",
            },
        },
        "additionalProperties": False,
    },
)


class CompactTool:
    spec = SPEC
    read_only = True

    def permission(self, args: dict[str, Any], ctx: ToolContext) -> PermissionRequest | None:
        return None

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        ctx.compaction_focus = args.get("focus", "")
        return ToolOutput(
            "Compaction requested; the conversation will be summarized before the next step."
        )
