"""The summary call: what is sent, how an over-long input is shortened, what is kept of the reply.

The request repeats the last call's system prompt, tools and messages so the
server reads the history from its prompt cache, and adds one user message with
the instruction. Everything here is pure; the compactor does the I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources

from mini_claude.context.placeholders import cut_to_head_and_tail
from mini_claude.conversation import (
    Block,
    ImageBlock,
    Message,
    SummaryBlock,
    TextBlock,
    ToolResultBlock,
)
from mini_claude.prompts import SUMMARY_HEADING

TEMPLATE_PACKAGE = "mini_claude.templates"
TEMPLATE_NAME = "summary.md"

# Share of the input dropped when the server gives no numbers with "prompt too long".
DEFAULT_DROP_SHARE = 0.2
# A result cut for the summary request keeps at least this much of its head and tail.
CUT_RESULT_KEEP_CHARS = 2_000
# Extra share dropped on top of the measured excess: estimates and server counts differ.
DROP_MARGIN_SHARE = 0.05

_ANALYSIS = re.compile(r"<analysis>.*?(?:</analysis>|\Z)", re.DOTALL | re.IGNORECASE)
_SUMMARY = re.compile(r"<summary>(.*?)(?:</summary>|\Z)", re.DOTALL | re.IGNORECASE)
_STRAY_TAGS = re.compile(r"</?(?:analysis|summary)>", re.IGNORECASE)


def without_images(messages: Sequence[Message]) -> list[Message]:
    """Each image replaced by a line naming its file and size: a summary request never
    carries image data (a summary cannot keep it, and it would cost its tokens again).
    Messages without images are passed on as they are, so the cached prefix still holds."""
    out: list[Message] = []
    for message in messages:
        if not any(isinstance(b, ImageBlock) for b in message.blocks):
            out.append(message)
            continue
        blocks: list[Block] = [TextBlock(b.placeholder()) if isinstance(b, ImageBlock) else b
                               for b in message.blocks]
        out.append(Message(message.role, blocks))
    return out


def carries_images(messages: Sequence[Message]) -> bool:
    """True when a summary request of ``messages`` would stand a line for an image."""
    return any(isinstance(b, ImageBlock) for m in messages for b in m.blocks)


@cache
def instruction_template() -> str:
    """The instruction body, shipped as package data so it reads as prose, not code."""
    return resources.files(TEMPLATE_PACKAGE).joinpath(TEMPLATE_NAME).read_text(encoding="utf-8")


# Asked for when ``Settings.summary_keep_pointers`` is on: a fact the summary leaves out can
# be read back only while something in the context still says where it was.
KEEP_POINTERS_LINE = (
    "Keep in full: every file path, command and search of the whole session, those listed in "
    "an earlier summary included, however long the list; they are how anything left out can be "
    "found again."
)


def summary_instruction(
    focus: str | None = None,
    instructions: str | None = None,
    *,
    keep_pointers: bool = False,
    scope: str = "",
) -> str:
    """The final user message of a summary request; the heading lets servers and tests spot it.

    ``instructions`` come from the user's PreCompact hooks (or what the user typed when
    summarizing part of the conversation); ``scope`` says which part, when not all of it.
    """
    text = f"{SUMMARY_HEADING}\n\n{instruction_template().strip()}"
    if scope:
        text += f"\n\n{scope}"
    if keep_pointers:
        text += f"\n\n{KEEP_POINTERS_LINE}"
    focus = (focus or "").strip()
    if focus:
        text += f"\n\nFocus: {focus}"
    extra = (instructions or "").strip()
    if extra:
        text += f"\n\nAdditional instructions for this summary:\n{extra}"
    return text


def range_scope(messages: Sequence[Message], start: int, end: int) -> str:
    """What a summary of part of the conversation covers, for its instruction.

    A summary "from here" is asked with the whole history before it sent as it was (the
    prompt cache holds it), so the instruction names where the part begins; a summary "up
    to here" is sent only what it replaces, and is told that the rest stays.
    """
    if end == len(messages) and start > 0:
        first = " ".join(messages[start].text.split())[:200]
        return (
            f"Summarize only the last {end - start} messages of this conversation, from the "
            f"user's message that begins \u201c{first}\u201d on. The messages before that one "
            "stay in the context word for word: do not repeat them."
        )
    if end < len(messages):
        return (
            "This is the start of the conversation; the messages after it stay in the context "
            "word for word after your summary, which replaces only what you see here."
        )
    return ""


def extract_summary(reply: str) -> str:
    """The ``<summary>`` content; without tags, the reply minus any analysis scratchpad.

    An unclosed analysis swallows the rest of the reply, so a reply cut off while
    still thinking yields an empty summary, which the caller treats as a failure.
    """
    remainder = _ANALYSIS.sub("", reply)
    match = _SUMMARY.search(remainder)
    text = match.group(1) if match else remainder
    return _STRAY_TAGS.sub("", text).strip()


def unsent_suffix_start(messages: Sequence[Message]) -> int:
    """Index where the messages the last model call did not see begin.

    A trailing assistant message with tool calls has no results yet and cannot be
    sent; trailing plain user messages are the new request, kept word for word
    after the compaction anyway, and sending them would fold the instruction into
    the user's own message.
    """
    end = len(messages)
    if end and messages[end - 1].role == "assistant" and messages[end - 1].tool_uses:
        end -= 1
    while end and messages[end - 1].is_plain_user_message:
        end -= 1
    return end


def is_boundary(message: Message) -> bool:
    """The user message a previous compaction left, holding its summary."""
    return boundary_block(message) is not None


def boundary_block(message: Message) -> SummaryBlock | None:
    """The summary a previous compaction left in this message, if it is that boundary."""
    return next((b for b in message.blocks if isinstance(b, SummaryBlock)), None)


@dataclass(frozen=True, slots=True)
class ShapedInput:
    """The history to summarize, possibly with its oldest part left out."""

    messages: list[Message]
    dropped: int  # messages left out from the start
    cut: int = 0  # tool results cut to their head and tail

    @property
    def reshaped(self) -> bool:
        return bool(self.dropped or self.cut)


def drop_oldest(
    messages: Sequence[Message],
    tokens_to_drop: int,
    size_of: Callable[[Message], int],
) -> ShapedInput | None:
    """Leave out the oldest whole turns worth at least ``tokens_to_drop`` tokens.

    Whole turns (from one typed user message to the next) go first; when the
    history is one long turn, whole exchanges of it go instead, so a tool call
    never loses its result. A previous summary at the start is kept: it is small
    and stands for everything before it. Returns None when nothing can be dropped
    without leaving nothing to summarize.
    """
    keep_head = 1 if messages and is_boundary(messages[0]) else 0
    starts = [i for i in range(keep_head + 1, len(messages)) if _can_start(messages, i)]
    if not starts:
        return None
    sizes = [size_of(m) for m in messages]

    def dropped_tokens(start: int) -> int:
        return sum(sizes[keep_head:start])

    turn_starts = [i for i in starts if messages[i].is_plain_user_message]
    for candidates in (turn_starts, starts):
        for start in candidates:
            if dropped_tokens(start) >= tokens_to_drop:
                return _shaped(messages, keep_head, start)
    return None


def cut_results(
    messages: Sequence[Message],
    tokens_to_drop: int,
    size_of: Callable[[Message], int],
) -> ShapedInput | None:
    """Cut the largest tool results to their head and tail, in the request only.

    The last resort when no whole turn can be left out (one turn holds the whole
    history): the summary still sees the start and end of every result, and the
    transcript keeps them whole. None when even that cannot free enough.
    """
    shaped = list(messages)
    freed = 0
    for cut, (index, block_index, block) in enumerate(_largest_results(shaped), start=1):
        keep = max(CUT_RESULT_KEEP_CHARS, len(block.content) // 4)
        if len(block.content) <= keep:
            break
        before = size_of(shaped[index])
        text = cut_to_head_and_tail(block, keep, _left_out_marker)
        blocks = list(shaped[index].blocks)
        blocks[block_index] = replace(block, content=text)
        shaped[index] = Message(shaped[index].role, blocks)
        freed += before - size_of(shaped[index])
        if freed >= tokens_to_drop:
            return ShapedInput(shaped, 0, cut)
    return None


def _largest_results(messages: Sequence[Message]) -> list[tuple[int, int, ToolResultBlock]]:
    found = [
        (index, block_index, block)
        for index, message in enumerate(messages)
        for block_index, block in enumerate(message.blocks)
        if isinstance(block, ToolResultBlock)
    ]
    return sorted(found, key=lambda item: -len(item[2].content))


def _left_out_marker(chars: int) -> str:
    return f"[... {chars:,} chars left out of this summary request; the transcript has them ...]"


def _can_start(messages: Sequence[Message], index: int) -> bool:
    """A history may resume at a typed user message or at an assistant message."""
    message = messages[index]
    return message.is_plain_user_message or message.role == "assistant"


def _shaped(messages: Sequence[Message], keep_head: int, start: int) -> ShapedInput:
    dropped = start - keep_head
    note = TextBlock(
        f"[{dropped} earlier messages of this session are left out of this request so that it "
        "fits the context window; the transcript on disk still has them.]"
    )
    head_blocks = list(messages[0].blocks) if keep_head else []
    head = Message("user", [*head_blocks, note])
    return ShapedInput([head, *messages[start:]], dropped)


def tokens_to_drop(
    total_tokens: int, *, server_tokens: int | None = None, server_maximum: int | None = None
) -> int:
    """How much of an input to leave out after the server called it too long.

    The server's own numbers say by how much; the share is applied to our
    estimate because that is the scale the sizes are measured in.
    """
    if server_tokens and server_maximum and server_tokens > server_maximum:
        share = (server_tokens - server_maximum) / server_tokens + DROP_MARGIN_SHARE
    else:
        share = DEFAULT_DROP_SHARE
    return max(1, round(total_tokens * min(1.0, share)))
