"""Folding: old exchanges whose results were cleared become one line each.

A cleared exchange still costs the call (its id, name and input), the assistant's
words around it and a placeholder naming the saved copy: about 90 tokens, most of
what a long turn carries once its results are cleared. Folding turns a run of such
exchanges into lines of one text block (tool, target, size, saved file, and the
assistant's own words) with the saved results' folder named once; a later fold
adds a block after it, so the earlier one, and the prompt cache up to it, stay
as they were. Only whole
exchanges go, so no call ever loses its result; a message with thinking never
does, since the server checks it word for word. The transcript keeps every
exchange as it was, and records a fold as what changed (messages removed, the
receiving messages rewritten), not as the whole new history.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from mini_claude.context.placeholders import describe_result
from mini_claude.context.summary_request import is_boundary
from mini_claude.conversation import (
    Message,
    ResultState,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from mini_claude.text import shorten

FOLD_HEADING = "[Earlier tool calls, folded to one line each"
FOLD_MORE = "[More earlier tool calls, folded the same way:]"
# A short result that was never cleared is kept in its line whole, up to this size.
INLINE_RESULT_CHARS = 300
# The assistant's words beside a folded call are kept up to this size.
SAID_CHARS = 400


@dataclass(frozen=True, slots=True)
class Folded:
    messages: list[Message]
    removed: list[int]  # indexes (in the history before) of the messages folded away
    replaced: dict[int, Message]  # index (before) -> the message with the fold text joined

    @property
    def exchanges(self) -> int:
        return len(self.removed) // 2


def fold_exchanges(messages: Sequence[Message], keep_last: int, folder: str) -> Folded | None:
    """Fold every foldable exchange before the last ``keep_last`` messages.

    Runs of foldable exchanges are folded into the user message just before
    each run (so the roles still alternate), as a block after any fold already there.
    None when nothing can be folded.
    """
    out: list[Message] = []
    removed: list[int] = []
    replaced: dict[int, Message] = {}
    limit = max(0, len(messages) - keep_last)
    index = 0
    while index < len(messages):
        end = _run_end(messages, index, limit) if out and _can_receive(out[-1]) else index
        if end > index:
            lines = [line for i in range(index, end, 2)
                     for line in _lines_of(messages[i], messages[i + 1], folder)]
            out[-1] = _with_lines(out[-1], lines, folder)
            replaced[index - 1] = out[-1]  # a run never starts right after another one
            removed.extend(range(index, end))
            index = end
            continue
        out.append(messages[index])
        index += 1
    return Folded(out, removed, replaced) if removed else None


def _run_end(messages: Sequence[Message], start: int, limit: int) -> int:
    """Where the run of foldable exchanges starting at ``start`` ends (``start``: none)."""
    index = start
    while index < limit - 1 and _foldable(messages, index):
        index += 2
    return index


def _can_receive(message: Message) -> bool:
    """A user message the fold text may join: anything but a summary boundary."""
    return message.role == "user" and not is_boundary(message)


def _foldable(messages: Sequence[Message], index: int) -> bool:
    """An assistant message with calls only (and words), answered by cleared results."""
    if index + 1 >= len(messages):
        return False
    call, answer = messages[index], messages[index + 1]
    if call.role != "assistant" or not call.tool_uses:
        return False
    if any(not isinstance(b, (TextBlock, ToolUseBlock)) for b in call.blocks):
        return False
    if answer.role != "user" or any(not isinstance(b, ToolResultBlock) for b in answer.blocks):
        return False
    ids = {u.id for u in call.tool_uses}
    if {r.tool_use_id for r in answer.tool_results} != ids:
        return False
    return all(_result_foldable(r) for r in answer.tool_results)


def _result_foldable(block: ToolResultBlock) -> bool:
    if block.state == ResultState.CLEARED:
        return bool(block.saved_path)
    return block.state == ResultState.FULL and len(block.content) <= INLINE_RESULT_CHARS


def _lines_of(call: Message, answer: Message, folder: str) -> list[str]:
    said = " ".join(b.text.strip() for b in call.blocks if isinstance(b, TextBlock)).strip()
    results = {r.tool_use_id: r for r in answer.tool_results}
    lines: list[str] = []
    for use in call.tool_uses:
        lines.append(f"- {_line_for(results[use.id], folder)}")
    if said:
        lines[0] += f" · said: {shorten(said, SAID_CHARS)}"
    return lines


def _line_for(block: ToolResultBlock, folder: str) -> str:
    error = " (an error)" if block.is_error else ""
    if block.state == ResultState.CLEARED and block.saved_path:
        saved = block.saved_path
        if os.path.dirname(saved) == folder:
            saved = os.path.basename(saved)
        return f"{describe_result(block)}{error} → {saved}"
    name = block.tool_name or "tool"
    head = f"{name} {shorten(block.target, 80)}".strip() if block.target else name
    return f"{head}{error} → {block.content.strip() or '(no output)'}"


def _with_lines(message: Message, lines: list[str], folder: str) -> Message:
    """The message with a block of the lines added after what it holds.

    A later fold adds a block of its own rather than lengthening the earlier one:
    the earlier block stays byte for byte, so the prompt cache still holds
    everything up to it (see :mod:`mini_claude.context.cache_anchor`).
    """
    folded_before = any(is_fold_block(b) for b in message.blocks)
    heading = FOLD_MORE if folded_before else _heading(folder)
    return Message(message.role, [*message.blocks, TextBlock(heading + "\n" + "\n".join(lines))])


def is_fold_block(block: object) -> bool:
    return isinstance(block, TextBlock) and block.text.startswith((FOLD_HEADING, FOLD_MORE))


def _heading(folder: str) -> str:
    return (
        f"{FOLD_HEADING}; a saved result named below is a file in {folder}, and the "
        "transcript has every call as it was:]"
    )


def folder_of(messages: Sequence[Message]) -> str | None:
    """The folder the saved results live in (the first one found), for the fold heading."""
    for message in messages:
        for block in message.tool_results:
            if block.state == ResultState.CLEARED and block.saved_path:
                return os.path.dirname(block.saved_path)
    return None
