"""The model is told the permission mode on the user's message, never in the system prompt.

The mode changes during a session (Shift+Tab, an approved plan), and the system
prompt is the cached prefix of every request; so, as the todo reminder does, a
short note rides on the newest user message: in plan mode every time, otherwise
once after the mode changed.
"""

from __future__ import annotations

from mini_claude.conversation import Message, TextBlock
from mini_claude.permissions.modes import Permissions
from mini_claude.plan import REMINDER_TAG
from mini_claude.tools.base import ToolContext


def with_mode_reminder(message: Message, permissions: Permissions | None) -> Message:
    """The message with the mode note the model needs now (or unchanged)."""
    if permissions is None:
        return message
    mode = permissions.mode
    told = permissions.mode_told
    permissions.mode_told = mode
    row = permissions.row
    if not row.noted_every_turn and (told is None or told == mode):
        return message
    reminder = TextBlock(f"<{REMINDER_TAG}>{row.note}</{REMINDER_TAG}>")
    return Message(message.role, [*message.blocks, reminder])


def approved_plan(context: ToolContext) -> str | None:
    """The plan the user approved in this session, for the compaction boundary."""
    return context.rules.approved_plan if context.rules is not None else None
