"""skill: loads one skill's instructions when the model decides the task needs them.

The system prompt lists only each skill's name and description; the body
comes in here, on demand, and the agent re-attaches it after every compaction.
"""

from __future__ import annotations

from typing import Any

from mini_claude.project.skills import load_text
from mini_claude.protocol import SkillLoaded, ToolOutput, ToolSpec
from mini_claude.tool_kinds import ToolTraits
from mini_claude.tools.base import NeverAsks, Prepared, ToolContext
from mini_claude.tools.common import error_output

SPEC = ToolSpec(
    name="skill",
    description=(
        "Load the instructions of one of the skills listed in the system prompt, by name. "
        "Load a skill as soon as the task matches its description, then follow it; its "
        "extra files are listed so you can read them with read_file."
    ),
    input_schema={
        "type": "object",
        "properties": {"name": {"type": "string", "description": "The skill's name."}},
        "required": ["name"],
        "additionalProperties": False,
    },
)


class SkillTool(NeverAsks):
    spec = SPEC
    traits = ToolTraits(plan_mode=True)

    async def run(
        self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared
    ) -> ToolOutput:
        name = str(args.get("name", "")).strip()
        skill = ctx.skills.get(name)
        if skill is None:
            known = ", ".join(ctx.skills.names()) or "none"
            return error_output(f"no skill named {name!r}; available skills: {known}")
        ctx.loaded_skills.add(skill.name)
        return ToolOutput(load_text(skill, ctx.root), effects=(SkillLoaded(skill.name),))
