"""The history's bookkeeping: the conversation and its transcript kept in step.

Every message enters both (the transcript gets the original, untouched text),
every later edit of a tool result is recorded, tool results pass tier 0 on the
way in, and every tool call is answered, even when the user interrupts.
The agent drives this unit; the property tests drive the same one.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from mini_claude.context.base import ResultStore
from mini_claude.context.compact import RangeSummary
from mini_claude.context.fold import Folded
from mini_claude.context.persist import admit_result
from mini_claude.context.placeholders import count_lines
from mini_claude.conversation import (
    INTERRUPTED_RESULT,
    Block,
    Conversation,
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    target_of,
)
from mini_claude.protocol import CompactReason, TierReport, ToolOutput
from mini_claude.sanitize import clean_message
from mini_claude.settings import Settings
from mini_claude.transcript import Transcript

NO_RESPONSE = "(no response)"
INTERRUPTED_OUTPUT_NOTE = (
    "[interrupted: the user stopped the command before it finished; above is what it "
    "printed until then]"
)


def interrupted_output(printed: str) -> str:
    """What an interrupted command printed, marked so the model knows it did not finish."""
    return f"{printed}\n{INTERRUPTED_OUTPUT_NOTE}" if printed.strip() else (
        "(no output yet)\n" + INTERRUPTED_OUTPUT_NOTE
    )


@dataclass(frozen=True, slots=True)
class AdmittedResult:
    """One tool result: as it enters the context, as the tool returned it, and what tier 0 did."""

    block: ToolResultBlock
    original: ToolResultBlock
    report: TierReport | None
    images: tuple[ImageBlock, ...] = ()  # sent after the results, in the same message


class History:
    """One conversation and its transcript; the agent's only way to change either."""

    def __init__(
        self,
        transcript: Transcript,
        conversation: Conversation,
        store: ResultStore,
        settings: Settings,
    ) -> None:
        self.transcript = transcript
        self.conversation = conversation
        self.store = store
        self.settings = settings
        conversation.on_replace = self._record_edit
        self._tool_ids = {u.id for m in conversation.messages for u in m.tool_uses}

    def _record_edit(self, block: ToolResultBlock) -> None:
        self.transcript.edit(block.state.name.lower(), block)

    def append(self, message: Message, original: Message | None = None) -> None:
        """Add to the conversation and the transcript (the original, untouched text)."""
        message = clean_message(message)  # the one door into history: always replayable
        original = clean_message(original) if original is not None else None
        self.transcript.message(original or message)
        self.conversation.append(message)

    def append_reply(self, message: Message) -> Message:
        """Append the model's reply; returns it with the tool call ids it was recorded under."""
        message = self._with_fresh_ids(clean_message(message))
        self.append(message if message.blocks else Message("assistant", [TextBlock(NO_RESPONSE)]))
        return message

    def _with_fresh_ids(self, message: Message) -> Message:
        """Rename tool call ids the server used before (some OpenAI-compatible servers
        number calls per reply: ``call_0`` every time). An id must name one call, or an
        edit of its result lands on another one when the transcript is replayed."""
        blocks: list[Block] = []
        for block in message.blocks:
            if isinstance(block, ToolUseBlock):
                if block.id in self._tool_ids:
                    fresh = next(
                        f"{block.id}_{n}"
                        for n in itertools.count(2)
                        if f"{block.id}_{n}" not in self._tool_ids
                    )
                    block = replace(block, id=fresh)
                self._tool_ids.add(block.id)
            blocks.append(block)
        if blocks == message.blocks:
            return message
        return Message(message.role, blocks)

    def admit(self, use: ToolUseBlock, output: ToolOutput) -> AdmittedResult:
        """Tier 0 on one tool's output; nothing enters the history until :meth:`close_results`."""
        original = ToolResultBlock(
            use.id,
            output.content,
            output.is_error,
            use.name,
            target_of(use),
            len(output.content),
            count_lines(output.content),
        )
        block, report = admit_result(output, use, self.store, self.settings)
        return AdmittedResult(block, original, report, output.images)

    def close_results(
        self,
        uses: Sequence[ToolUseBlock],
        results: Sequence[AdmittedResult],
        *,
        interrupted: bool = False,
        partial: Mapping[str, str] | None = None,
        trailing: Sequence[Block] = (),
    ) -> None:
        """Answer every tool_use, marking the unfinished ones as interrupted.

        A call that printed something before it was stopped (``partial``, by tool_use
        id) is answered with that output, through tier 0 like any result. ``trailing``
        blocks (the user's steering messages) follow the results in the same message.
        """
        admitted = [r.block for r in results]
        originals = [r.original for r in results]
        for use in uses[len(results) :]:
            printed = (partial or {}).get(use.id)
            if printed is not None:
                result = self.admit(use, ToolOutput(interrupted_output(printed), is_error=True))
                admitted.append(result.block)
                originals.append(result.original)
                continue
            block = ToolResultBlock(use.id, INTERRUPTED_RESULT, True, use.name, target_of(use))
            admitted.append(block)
            originals.append(block)
        after: list[Block] = [*(image for r in results for image in r.images), *trailing]
        self.append(Message("user", [*admitted, *after]), Message("user", [*originals, *after]))
        for original, block in zip(originals, admitted, strict=True):
            if block is not original and block.content != original.content:
                self.transcript.edit(block.state.name.lower(), block)
        if interrupted:
            self.transcript.event("interrupted", during="tools")

    def fold(self, folded: Folded) -> None:
        """Replace the history with its folded form; the transcript records what changed."""
        self.conversation.replace_all(folded.messages)
        self.transcript.fold(folded.removed, folded.replaced)

    def summarize_range(self, result: RangeSummary) -> None:
        """Part of the history became a summary: the transcript records the history from
        where it starts (what came before it is not written again)."""
        self.conversation.replace_all(result.messages)
        self.transcript.range_summary(result.start, result.end, result.inserted, result.summary,
                                      result.messages[result.start:])

    def record_compaction(
        self, reason: CompactReason, summary: str, tokens_before: int, tokens_after: int
    ) -> None:
        """The history was rebuilt around a summary: the transcript gets the new history."""
        self.transcript.compaction(
            reason, summary, tokens_before, tokens_after, self.conversation.messages
        )
