"""kill_shell: stop a background shell and everything it started."""

from __future__ import annotations

import asyncio
from typing import Any

from mini_claude.protocol import ToolOutput, ToolSpec
from mini_claude.tool_kinds import ToolTraits
from mini_claude.tools.base import NeverAsks, Prepared, ToolContext
from mini_claude.tools.builtin.shell_output import shell_header
from mini_claude.tools.common import reports_tool_errors

SPEC = ToolSpec(
    name="kill_shell",
    description="Stop a background shell (run_shell run_in_background) and all it started.",
    input_schema={
        "type": "object",
        "properties": {
            "shell_id": {"type": "string", "description": "bash_1, as run_shell said."},
        },
        "required": ["shell_id"],
        "additionalProperties": False,
    },
)


class KillShellTool(NeverAsks):
    spec = SPEC
    # Never asks: it only stops what an approved command started.
    traits = ToolTraits(claude_names=("KillShell", "KillBash"), plan_mode=True)

    @reports_tool_errors
    async def run(self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared) -> ToolOutput:
        shell_id = str(args.get("shell_id", ""))
        shell = ctx.shells.get(shell_id)
        if not shell.running:
            return ToolOutput(f"{shell_header(shell)}\nIt was no longer running.")
        await asyncio.to_thread(ctx.shells.stop, shell_id)
        await shell.output_settled()
        return ToolOutput(f"{shell_header(shell)}\nStopped.")
