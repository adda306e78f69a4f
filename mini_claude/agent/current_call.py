"""The tool call being decided or run, for whoever answers its permission question
elsewhere (a controlling program wants the call's input and id, not just its summary)."""

from __future__ import annotations

from contextvars import ContextVar

from mini_claude.conversation import ToolUseBlock

CURRENT_CALL: ContextVar[ToolUseBlock | None] = ContextVar("current_call", default=None)
