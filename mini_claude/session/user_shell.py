"""The user's own `!command` and `#` notes: what they add goes to the model with the next
message, in every front end that offers them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mini_claude.conversation import ToolUseBlock

if TYPE_CHECKING:  # the agent chain loads after the REPL's first prompt is drawn
    from mini_claude import events as ev
    from mini_claude.agent.loop import Agent

SHELL_PREFIX = "!"


@dataclass
class PendingContext:
    """Notes waiting to go to the model before the user's next message."""

    pending: list[str] = field(default_factory=list)

    def add(self, note: str) -> None:
        self.pending.append(note)

    def with_message(self, text: str) -> str:
        """``text`` with every waiting note before it; the notes are sent once."""
        if not self.pending:
            return text
        notes, self.pending = self.pending, []
        return "\n\n".join([*notes, text])


def is_shell_command(text: str) -> bool:
    return text.startswith(SHELL_PREFIX) and bool(text[1:].strip())


async def run_user_shell(agent: Agent, command: str,
                         context: PendingContext) -> AsyncIterator[ev.Event]:
    """`!command`: the user's own command, run without a permission question (as Claude Code's
    bash mode), through the same tool, tier 0 and checkpoints as the model's; the output is
    kept for the model."""
    from mini_claude import events as ev
    from mini_claude.context.persist import admit_result
    from mini_claude.tools.permission_gate import users_own

    use = ToolUseBlock("user-shell", "run_shell", {"command": command})
    yield ev.ToolStarted(use.id, use.name, use.input)
    output = await agent.registry.execute(use.name, use.input, users_own(agent.tool_context))
    block, report = admit_result(output, use, agent.store, agent.settings)
    if report is not None:
        yield ev.TierFired(report)
    yield ev.ToolFinished(use.id, use.name, block, output.display, output.display_kind,
                          original=output.content)
    context.add(f"[I ran a shell command myself: `{command}`]\n{block.content}")
    yield ev.Notice("the output goes to the model with your next message")
