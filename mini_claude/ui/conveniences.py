"""What users of other agents type without thinking: `!command`, `@path`, `/model <Tab>`.

`!command` and `@path` go through the same tools, permission rules and tier 0
as the model's own calls: a shell command asks first unless allowed, a large
output is saved to disk and only a preview enters the conversation.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from mini_claude.conversation import ToolUseBlock
from mini_claude.models import alias_names, provider_row

if TYPE_CHECKING:  # the agent chain loads after the first prompt is drawn
    from mini_claude import events as ev
    from mini_claude.agent.loop import Agent

SHELL_PREFIX = "!"
MAX_PATH_COMPLETIONS = 50

@dataclass
class ShellContext:
    """Output of `!commands`, waiting to go to the model with the next message."""

    pending: list[str] = field(default_factory=list)

    def with_message(self, text: str) -> str:
        if not self.pending:
            return text
        notes, self.pending = self.pending, []
        return "\n\n".join([*notes, text])


def is_shell_command(text: str) -> bool:
    return text.startswith(SHELL_PREFIX) and bool(text[1:].strip())


async def run_user_shell(agent: Agent, command: str,
                         context: ShellContext) -> AsyncIterator[ev.Event]:
    """`!command`: the user's own command, run without a permission question (as Claude Code's
    bash mode); the output is kept for the model."""
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
    context.pending.append(f"[I ran a shell command myself: `{command}`]\n{block.content}")
    yield ev.Notice("the output goes to the model with your next message")



class PathCompleter(Completer):
    """Completes the `@path` word under the cursor from the project's files."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def get_completions(self, document: Document,
                        complete_event: CompleteEvent) -> Iterable[Completion]:
        word = document.get_word_before_cursor(WORD=True)
        if not word.startswith("@"):
            return
        typed = word[1:]
        folder, _, prefix = typed.rpartition("/")
        base = self.root / folder if folder else self.root
        try:
            entries = sorted(os.scandir(base), key=lambda e: e.name)
        except OSError:
            return
        shown = 0
        for entry in entries:
            if entry.name.startswith(".") or not entry.name.startswith(prefix):
                continue
            path = f"{folder}/{entry.name}" if folder else entry.name
            suffix = "/" if entry.is_dir() else ""
            yield Completion("@" + path + suffix, start_position=-len(word),
                             display=entry.name + suffix)
            shown += 1
            if shown >= MAX_PATH_COMPLETIONS:
                return


class ModelCompleter(Completer):
    """Completes `/model NAME` from the known models of the session's provider."""

    def __init__(self, provider: str, current: str, extra: Sequence[str] = ()) -> None:
        row = provider_row(provider)
        self.names = list(dict.fromkeys([
            row.default_model, *row.current_models, *alias_names(provider), current, *extra,
        ]))

    def get_completions(self, document: Document,
                        complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/model "):
            return
        typed = text[len("/model "):]
        if any(c.isspace() for c in typed):
            return
        for name in self.names:
            if name.startswith(typed):
                yield Completion(name, start_position=-len(typed))
