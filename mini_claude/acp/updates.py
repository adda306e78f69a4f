"""The agent's events as Agent Client Protocol session updates: one place for the mapping."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    PlanEntry,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from mini_claude import events as ev
from mini_claude.tool_kinds import ToolKind, known_tools

Update = (
    AgentMessageChunk
    | AgentThoughtChunk
    | UserMessageChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
)

# Our tool kinds in the protocol's words (the editor picks an icon by them).
ACP_KINDS: dict[ToolKind, Any] = {
    "read": "read",
    "edit": "edit",
    "shell": "execute",
    "search": "search",
    "web": "fetch",
    "other": "other",
}
TITLE_ARGUMENTS = ("path", "command", "pattern", "url", "description")
RESULT_CHARS = 20_000  # of a tool's result, in its update: the editor shows it, not the model
PROGRESS_LINES = 10


def text(value: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=value)


def message_chunk(value: str) -> AgentMessageChunk:
    return AgentMessageChunk(session_update="agent_message_chunk", content=text(value))


def thought_chunk(value: str) -> AgentThoughtChunk:
    return AgentThoughtChunk(session_update="agent_thought_chunk", content=text(value))


def user_chunk(value: str) -> UserMessageChunk:
    return UserMessageChunk(session_update="user_message_chunk", content=text(value))


def tool_kind(name: str) -> Any:
    return ACP_KINDS[known_tools().traits(name).kind]


def tool_title(name: str, arguments: dict[str, Any]) -> str:
    """``run_shell pytest -q``: the tool and what it works on, as print mode narrates it."""
    target = next((str(arguments[k]) for k in TITLE_ARGUMENTS if arguments.get(k)), "")
    first = target.strip().splitlines()[0] if target.strip() else ""
    return f"{name} {first}".rstrip()


def locations(arguments: dict[str, Any], root: Path) -> list[ToolCallLocation] | None:
    """The file a call works on, absolute, so the editor can follow along."""
    raw = arguments.get("path")
    if not isinstance(raw, str) or not raw.strip():
        return None
    path = Path(raw).expanduser()
    return [ToolCallLocation(path=str(path if path.is_absolute() else root / path))]


def tool_started(event: ev.ToolStarted, root: Path) -> ToolCallStart:
    """Pending until it runs: a question about it may come first."""
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=event.id,
        title=tool_title(event.name, event.input),
        kind=tool_kind(event.name),
        status="pending",
        locations=locations(event.input, root),
        raw_input=event.input,
    )


def running(tool_call_id: str) -> ToolCallProgress:
    return ToolCallProgress(session_update="tool_call_update", tool_call_id=tool_call_id,
                            status="in_progress")


def tool_finished(event: ev.ToolFinished) -> ToolCallProgress:
    """Completed or failed, with what the tool returned (a diff shown as one)."""
    if event.display and event.display_kind == "diff":
        shown = f"```diff\n{event.display[:RESULT_CHARS]}\n```"
    else:
        shown = event.result.content[:RESULT_CHARS]
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=event.id,
        status="failed" if event.result.is_error else "completed",
        content=[ContentToolCallContent(type="content", content=text(shown))] if shown else None,
        raw_output=event.result.content[:RESULT_CHARS],
    )


def tool_progress(event: ev.ToolProgress) -> ToolCallProgress:
    """A long command's latest lines, replacing the ones shown before."""
    recent = "\n".join(event.last_lines(PROGRESS_LINES))
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=event.tool_use_id,
        status="in_progress",
        content=[ContentToolCallContent(type="content", content=text(f"```\n{recent}\n```"))],
    )


def plan(event: ev.PlanUpdated) -> AgentPlanUpdate:
    return AgentPlanUpdate(
        session_update="plan",
        entries=[PlanEntry(content=item.content, priority="medium", status=item.status)
                 for item in event.items],
    )


def thinking(event: ev.Thinking) -> AgentThoughtChunk:
    if event.text:
        return thought_chunk(event.text)
    return thought_chunk("(reasoning not shown)" if event.redacted else "(thought)")


def update_for(event: ev.Event, root: Path) -> Update | None:
    """The update an editor shows for this event; None for events it has no place for
    (usage, tiers: the numbers live in the transcript and in print mode's JSON)."""
    from mini_claude.headless.printmode import narration

    if isinstance(event, ev.TextDelta):
        return message_chunk(event.text) if event.text else None
    if isinstance(event, ev.Thinking):
        return thinking(event)
    if isinstance(event, ev.ToolStarted):
        return tool_started(event, root)
    if isinstance(event, ev.ToolFinished):
        return tool_finished(event)
    if isinstance(event, ev.ToolProgress):
        return tool_progress(event)
    if isinstance(event, ev.PlanUpdated):
        return plan(event)
    if isinstance(event, ev.Notice | ev.Retrying | ev.CompactionStarted | ev.CompactionFinished
                  | ev.CompactionFailed):
        line = narration(event)
        return thought_chunk(line.strip(" ·") + "\n") if line else None
    return None
