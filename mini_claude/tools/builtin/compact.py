"""compact: lets the model ask for a summary of the session.

A summary needs the model and the whole history, which a tool does not hold, so
the tool only reports the request as an effect; the agent summarizes before its
next request. Its arguments are checked by the registry like any other's.
"""

from __future__ import annotations

from typing import Any

from mini_claude.protocol import CompactionRequested, ToolOutput, ToolSpec
from mini_claude.tool_kinds import ToolTraits
from mini_claude.tools.base import NeverAsks, Prepared, ToolContext

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


class CompactTool(NeverAsks):
    spec = SPEC
    traits = ToolTraits(plan_mode=True, from_history=True, is_work=False)

    async def run(
        self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared
    ) -> ToolOutput:
        return ToolOutput(
            "Compaction requested; the conversation will be summarized before the next step.",
            effects=(CompactionRequested(args.get("focus") or None),),
        )
