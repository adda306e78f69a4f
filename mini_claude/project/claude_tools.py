"""Claude Code's tool names and ours: an agent file's ``tools`` and a command's
``allowed-tools`` written for Claude Code keep their meaning here. Each tool declares its
Claude Code names (:mod:`mini_claude.tool_kinds`); this asks them."""

from __future__ import annotations

from mini_claude.tool_kinds import known_tools


def our_tool_names(name: str) -> tuple[str, ...]:
    """Our tools for a Claude Code tool name (any case); any other name as it is."""
    return known_tools().called(name) or (name,)
