"""Claude Code's tool names and ours: an agent file's ``tools`` and a command's
``allowed-tools`` written for Claude Code keep their meaning here."""

from __future__ import annotations

CLAUDE_CODE_TOOLS = {
    "read": "read_file",
    "grep": "grep_search",
    "glob": "list_files",
    "ls": "list_files",
    "bash": "run_shell",
    "bashoutput": "shell_output",
    "killshell": "kill_shell",
    "killbash": "kill_shell",
    "write": "write_file",
    "edit": "edit_file",
    "multiedit": "edit_file",
    "webfetch": "web_fetch",
    "task": "task",
    "todowrite": "todo_write",
}


def our_tool_name(name: str) -> str:
    """Our name for a Claude Code tool name (any case); any other name as it is."""
    return CLAUDE_CODE_TOOLS.get(name.lower(), name)
