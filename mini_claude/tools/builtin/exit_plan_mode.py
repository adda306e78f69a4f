"""exit_plan_mode: the model hands its plan to the user, who approves it or asks for more.

Only meaningful in plan mode. The user either approves (the session leaves plan
mode for ``acceptEdits`` or ``default``, and the plan is kept: every compaction
writes it back) or keeps planning with feedback the model reads. Print mode
cannot ask: the plan is recorded and the model is told to end its turn with the
plan as its answer, so ``-p --permission-mode plan`` returns a plan and changes
nothing.
"""

from __future__ import annotations

from typing import Any

from mini_claude.permissions.asking import PermissionRequest
from mini_claude.permissions.mode_table import DEFAULT_MODE, mode_row, parse_mode
from mini_claude.protocol import ToolOutput, ToolSpec
from mini_claude.tool_kinds import ToolTraits
from mini_claude.tools.base import NeverAsks, Prepared, ToolContext
from mini_claude.tools.common import error_output
from mini_claude.tools.permission_gate import EXIT_PLAN_TOOL, permissions_of

MAX_PLAN_CHARS = 20_000
APPROVAL_QUESTION = "Ready to code? Here is the plan:"

SPEC = ToolSpec(
    name=EXIT_PLAN_TOOL,
    description=(
        "In plan mode, when you have finished exploring and your plan is ready: present it to "
        "the user for approval. Use it only for plans of work that changes code, not for "
        "research. The user approves it (you may then make changes) or gives feedback to plan "
        "further."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "plan": {
                "type": "string",
                "description": "The plan, in concise markdown: the steps, the files, the tests.",
            },
        },
        "required": ["plan"],
        "additionalProperties": False,
    },
)


class ExitPlanModeTool(NeverAsks):
    spec = SPEC
    # Never asks before it runs: approving the plan is the question run itself asks, and
    # the user's answer changes the mode.
    traits = ToolTraits(claude_names=("ExitPlanMode",), plan_mode=True)

    async def run(self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared) -> ToolOutput:
        plan = str(args.get("plan", "")).strip()[:MAX_PLAN_CHARS]
        permissions = permissions_of(ctx)
        if not permissions.row.read_only:
            return error_output(
                f"Not in plan mode (the mode is {permissions.mode}): there is no plan to "
                "approve. Go on with the work."
            )
        if not plan:
            return error_output("exit_plan_mode needs the plan: the steps you intend to take.")
        request = PermissionRequest(tool_name=EXIT_PLAN_TOOL, summary=APPROVAL_QUESTION,
                                    subject=EXIT_PLAN_TOOL, detail=plan)
        decision = await ctx.approve(request)
        if decision.allowed:
            mode = parse_mode(decision.mode or DEFAULT_MODE)
            permissions.approve_plan(plan, mode)
            how = ("edits inside the project now go through without asking"
                   if mode_row(mode).edits_unasked else "each change still asks the user")
            return ToolOutput(
                f"The user approved your plan; the permission mode is now {mode} ({how}). "
                "Start on the plan now, step by step.",
                display=f"plan approved · {mode}",
            )
        if not decision.asked:
            permissions.proposed_plan = plan
            return ToolOutput(
                "Nobody can approve a plan in this run (print mode), so nothing will be "
                "changed. End your turn now: reply with the plan as your final answer, "
                "without calling tools.",
                display="plan recorded (print mode does not approve plans)",
            )
        feedback = decision.reason or "no reason given"
        return ToolOutput(
            f"The user did not approve the plan and wants you to keep planning. Their "
            f"feedback: {feedback}\nStay in plan mode: revise the plan (read more if needed) "
            "and call exit_plan_mode again.",
            display=f"keep planning: {feedback}",
        )
