"""``@path`` in a message: the file's text attached, read the way ``read_file`` reads.

Used by the REPL for what the user types and by custom commands (in print mode too).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from mini_claude.conversation import ToolResultBlock, ToolUseBlock

if TYPE_CHECKING:  # the agent chain loads after the first prompt is drawn
    from mini_claude import events as ev
    from mini_claude.agent.loop import Agent

MENTION = re.compile(r"(?<![\w@])@([^\s@]+)")
TRAILING = ".,;:!?)]}'\""


async def attach_mentions(agent: Agent, text: str) -> tuple[str, list[ev.Event]]:
    """`@path` words that name files: their text is appended, read the way read_file reads."""
    from mini_claude import events as ev
    from mini_claude.context.persist import admit_result
    from mini_claude.context.placeholders import count_lines

    events: list[ev.Event] = []
    attachments: list[str] = []
    root = agent.tool_context.root
    for index, word in enumerate(dict.fromkeys(MENTION.findall(text))):
        path = word if (root / word).is_file() else word.rstrip(TRAILING)  # "@README.md."
        if not (root / path).is_file():
            continue
        use = ToolUseBlock(f"user-mention-{index}", "read_file", {"path": path})
        output = await agent.registry.execute(use.name, use.input, agent.tool_context)
        block, report = admit_result(output, use, agent.store, agent.settings)
        if report is not None:
            events.append(ev.TierFired(report))
        if block.is_error:
            events.append(ev.Notice(f"could not attach @{path}: {_first_line(block)}", "warning"))
            continue
        attachments.append(f"[Attached @{path}]\n{block.content}")
        events.append(ev.Notice(f"attached @{path} ({count_lines(output.content)} lines)"))
    return "\n\n".join([text, *attachments]), events


def _first_line(block: ToolResultBlock) -> str:
    return block.content.strip().split("\n", 1)[0]
