"""Claude Code's tool names and input keys, for programs written against Claude Code.

The model always sees our tools (``write_file`` with ``path``); a program driving us
through the Claude Agent SDK expects Claude Code's (``Write`` with ``file_path``) in
the assistant lines, in ``permission_denials``, in ``can_use_tool`` questions and in
hook inputs. This view renames on the way out and back on the way in. Tools Claude
Code does not have (``compact``, ``search_history``, MCP tools) keep their names.
The name pairs come from ``project/claude_tools.py``; only the key renames live here.
"""

from __future__ import annotations

from typing import Any

from mini_claude.project.claude_tools import our_tool_names

# Claude Code's spelling of the tools we share (which of ours each is: claude_tools.py).
CLAUDE_SPELLINGS = (
    "Read", "Grep", "Glob", "Bash", "BashOutput", "KillShell", "Write", "Edit",
    "WebFetch", "Task", "TodoWrite",
)
EXTRA_NAMES = {"exit_plan_mode": "ExitPlanMode", "skill": "Skill"}
# Our input key -> Claude Code's, per tool of ours.
KEY_RENAMES: dict[str, dict[str, str]] = {
    "read_file": {"path": "file_path"},
    "write_file": {"path": "file_path"},
    "edit_file": {"path": "file_path", "old": "old_string", "new": "new_string"},
}


def _claude_names() -> dict[str, str]:
    """Asked at each use: the tools are declared when the session loads them, which may be
    after this module is imported."""
    names: dict[str, str] = {}
    for spelling in CLAUDE_SPELLINGS:
        for ours in our_tool_names(spelling):
            if ours != spelling:
                names.setdefault(ours, spelling)  # the first spelling wins (Glob over LS)
    names.update(EXTRA_NAMES)
    return names


def claude_tool_name(name: str) -> str:
    return _claude_names().get(name, name)


def our_name(name: str) -> str:
    """Our name for a Claude Code tool name as this view writes it."""
    ours = {claude: ours for ours, claude in _claude_names().items()}
    return ours.get(name, name)


def claude_input(name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """A call's input with Claude Code's keys (``name`` is our tool name)."""
    renames = KEY_RENAMES.get(name)
    if not renames:
        return dict(tool_input)
    return {renames.get(key, key): value for key, value in tool_input.items()}


def our_input(name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """The reverse of :func:`claude_input` (``name`` is our tool name)."""
    renames = KEY_RENAMES.get(name)
    if not renames:
        return dict(tool_input)
    back = {claude: ours for ours, claude in renames.items()}
    return {back.get(key, key): value for key, value in tool_input.items()}


class ToolNames:
    """How a run writes tool names and inputs: ours, or Claude Code's (the SDK path)."""

    def __init__(self, claude: bool) -> None:
        self.claude = claude

    def name(self, name: str) -> str:
        return claude_tool_name(name) if self.claude else name

    def input(self, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
        return claude_input(name, tool_input) if self.claude else dict(tool_input)


OURS = ToolNames(claude=False)
