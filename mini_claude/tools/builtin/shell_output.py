"""shell_output: what a background shell printed since the last read, and its state."""

from __future__ import annotations

from typing import Any

from mini_claude.protocol import ToolOutput, ToolSpec
from mini_claude.tool_kinds import ToolTraits
from mini_claude.tools.background import BackgroundShell, ShellRead
from mini_claude.tools.base import NeverAsks, Prepared, ToolContext
from mini_claude.tools.common import ToolError, plural, reports_tool_errors

SPEC = ToolSpec(
    name="shell_output",
    description=(
        "What a background shell printed since the last read, and its state (running or "
        "exit code). `filter`: only lines matching this regex (the rest are skipped)."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "shell_id": {"type": "string", "description": "bash_1, as run_shell said."},
            "filter": {"type": "string", "description": "A regular expression."},
        },
        "required": ["shell_id"],
        "additionalProperties": False,
    },
)


def shell_header(shell: BackgroundShell) -> str:
    """``[shell bash_1: running (12 s) · python -m http.server · log: …]``."""
    return f"[shell {shell.id}: {shell.state()} · {shell.command} · log: {shell.log_path}]"


class ShellOutputTool(NeverAsks):
    spec = SPEC
    # Never asks: it reads what an approved command printed.
    traits = ToolTraits(claude_names=("BashOutput",), plan_mode=True)

    @reports_tool_errors
    async def run(self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared) -> ToolOutput:
        shell_id = str(args.get("shell_id", ""))
        pattern = args.get("filter")
        if pattern is not None and not isinstance(pattern, str):
            raise ToolError("filter must be a regular expression (a string)")
        shell = ctx.shells.get(shell_id)
        await shell.output_settled()
        # The state first: output read after an exit is then known to be complete.
        header = shell_header(shell)
        read = ctx.shells.read_new(shell_id, pattern, ctx.settings.tool_output_cap_chars)
        return ToolOutput(f"{header}\n{_body(read, pattern)}")


def _body(read: ShellRead, pattern: str | None) -> str:
    if read.new_bytes == 0:
        return "(no new output)"
    notes: list[str] = []
    if read.matched_lines is not None:
        notes.append(f"{plural(read.matched_lines, 'line')} of the new output matched {pattern!r}")
        if read.omitted_bytes:
            notes.append("the rest of the matches did not fit; read the log for them")
    elif read.omitted_bytes:
        notes.append(f"{read.omitted_bytes:,} bytes in the middle left out; the log has them")
    if read.dropped_bytes:
        notes.append(f"{read.dropped_bytes:,} bytes were dropped for good: the log keeps the "
                     "first and last bytes of a shell's output (MINI_CLAUDE_SHELL_LOG_CAP_BYTES)")
    text = read.text.rstrip("\n") or "(no matching lines)"
    return text + "".join(f"\n({note})" for note in notes)
