"""The token meter: one estimate of the next prompt's size, shared by every reader.

Characters divided by four drifts with content: prose and code run near four
characters per token, JSON, logs and file listings nearer two and a half, CJK text
close to one. So the meter anchors on what the server last counted and estimates
only what changed since:

- text appended since the anchor is weighed by its *shape* (the pieces a BPE
  pre-tokenizer would cut it into), which tracks such tokenizers within about 5%
  on most content, times a scale learnt from successive anchors, so a different
  tokenizer costs a few requests of learning, not accuracy;
- an edit made by a tier through :func:`apply_edit` is weighed the same way, so
  what it freed is subtracted exactly; any other shrinkage is converted at the
  whole-prompt ratio learnt from the last anchor.

The appended part is a small share of a large prompt, so the total stays close.
Without an anchor (before the first response, after a rebuild) the history is
weighed whole, through a memo that scans each text once, plus the system prompt
and tool schemas as measured on the first, nearly empty request.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from mini_claude.conversation import (
    Block,
    Conversation,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    ResultRef,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    block_chars,
    message_chars,
)
from mini_claude.protocol import ContextStatus
from mini_claude.settings import Settings

# Bounds for a learnt ratio; outside them the server's count is not about our text
# (an image, a proxy that rewrites prompts) and the ratio would mislead.
MIN_CHARS_PER_TOKEN = 1.0
MAX_CHARS_PER_TOKEN = 6.0
MIN_SHAPE_SCALE = 0.5
MAX_SHAPE_SCALE = 2.0
# The scale is total server tokens over total shape of the appended text, each sample
# weighted by its size and older samples fading: small deltas, where message framing
# is a large share, barely move it. The prior is worth a few medium-sized results.
SHAPE_PRIOR_TOKENS = 2_000.0
SHAPE_MEMORY = 0.7
MAX_FREED_SHARE = 0.1
MIN_SHAPE_SAMPLE_TOKENS = 200  # smaller deltas are mostly noise from the framing

# Role markers and block framing the server adds around every message.
MESSAGE_OVERHEAD_TOKENS = 4

MEMO_MIN_CHARS = 256  # shorter texts are cheaper to weigh than to look up
MEMO_MAX_CHARS = 4_000_000
# The system prompt and tool schemas are weighed at the first anchor of a history only
# when that history is short (a fresh session), so the history's own error stays small.
FIXED_LEARNING_MAX_CHARS = 16_000

_NON_ASCII = r"\x80-\U0010ffff"
# Pieces as a BPE pre-tokenizer cuts text: contractions, a word with one leading space
# or mark, up to three digits, a run of marks, line breaks, other whitespace. Most
# pieces are one token; long words and words glued to a mark often take more.
_PIECE = re.compile(
    rf"'(?:[sdmtSDMT]|ll|ve|re)"
    rf"|[^\r\nA-Za-z0-9{_NON_ASCII}]?[A-Za-z]+"
    rf"|[0-9]{{1,3}}"
    rf"| ?[^\sA-Za-z0-9{_NON_ASCII}]+[\r\n]*"
    rf"|\s*[\r\n]|\s+(?!\S)|\s"
)
_LONG_WORD = re.compile(r"[A-Za-z]{7,}")
_MARKED_WORD = re.compile(rf"[^\sA-Za-z0-9{_NON_ASCII}][A-Za-z]+")

# Tokens per feature, fitted once against a BPE tokenizer on code, Markdown, JSON,
# listings, logs, CSV and Chinese prose; within about 5% on most such text.
_PIECE_TOKENS = 1.0
_LONG_WORD_EXTRA_LETTER_TOKENS = 0.17  # per letter beyond the sixth
_LONG_WORD_FREE_LETTERS = 6
_MARKED_WORD_TOKENS = 0.3
# Characters outside ASCII, by UTF-8 length: accents and Cyrillic mostly merge into
# their neighbours, CJK is about a token each, emoji take several.
_TWO_BYTE_TOKENS = 0.6  # accents split the word they sit in; Cyrillic errs high, safely
_THREE_BYTE_TOKENS = 0.95
_FOUR_BYTE_TOKENS = 3.3
_TWO_BYTE = re.compile("[\u0080-\u07ff]")
_FOUR_BYTE = re.compile("[\U00010000-\U0010ffff]")


def shape_tokens(text: str) -> float:
    """Rough token count of ``text`` from its shape; linear time, no tokenizer needed."""
    if not text:
        return 0.0
    long_words = _LONG_WORD.findall(text)
    extra_letters = len("".join(long_words)) - _LONG_WORD_FREE_LETTERS * len(long_words)
    return (
        _PIECE_TOKENS * len(_PIECE.findall(text))
        + _LONG_WORD_EXTRA_LETTER_TOKENS * extra_letters
        + _MARKED_WORD_TOKENS * len(_MARKED_WORD.findall(text))
        + _non_ascii_tokens(text)
    )


def _non_ascii_tokens(text: str) -> float:
    non_ascii = len(text) - len(text.encode("ascii", errors="ignore"))
    if not non_ascii:
        return 0.0
    two_byte = len(_TWO_BYTE.findall(text))
    four_byte = len(_FOUR_BYTE.findall(text))
    three_byte = non_ascii - two_byte - four_byte
    return (
        _TWO_BYTE_TOKENS * two_byte
        + _THREE_BYTE_TOKENS * three_byte
        + _FOUR_BYTE_TOKENS * four_byte
    )


class ShapeMemo:
    """Shape tokens of texts already weighed, so a text is scanned once however often
    it is estimated (the history around a compaction is measured many times).

    Bounded by total characters; the oldest entries go first.
    """

    def __init__(self, max_chars: int = MEMO_MAX_CHARS) -> None:
        self.max_chars = max_chars
        self._shapes: dict[str, float] = {}
        self._chars = 0

    @property
    def remembered_chars(self) -> int:
        return self._chars

    def of_text(self, text: str) -> float:
        if len(text) < MEMO_MIN_CHARS:
            return shape_tokens(text)
        shape = self._shapes.get(text)
        if shape is None:
            shape = shape_tokens(text)
            self._remember(text, shape)
        return shape

    def of_block(self, block: Block) -> float:
        """The same text that :func:`block_chars` counts, weighed by shape."""
        if isinstance(block, TextBlock):
            return self.of_text(block.text)
        if isinstance(block, ToolUseBlock):
            arguments = json.dumps(block.input, ensure_ascii=False)
            return shape_tokens(block.name + block.id) + self.of_text(arguments)
        if isinstance(block, ToolResultBlock):
            return self.of_text(block.content) + shape_tokens(block.tool_use_id)
        if isinstance(block, ThinkingBlock):
            return self.of_text(block.thinking)
        if isinstance(block, RedactedThinkingBlock):
            return block_chars(block) / 4
        if isinstance(block, ImageBlock):
            return float(block.tokens)  # the provider's own formula, fixed when it was loaded
        return self.of_text(block.render())

    def of_messages(self, messages: Sequence[Message]) -> tuple[float, int]:
        """Shape tokens and characters of some messages."""
        shape = sum(self.of_block(b) for m in messages for b in m.blocks)
        return shape, sum(message_chars(m) for m in messages)

    def _remember(self, text: str, shape: float) -> None:
        if len(text) > self.max_chars:
            return
        self._shapes[text] = shape
        self._chars += len(text)
        while self._chars > self.max_chars:
            oldest = next(iter(self._shapes))
            del self._shapes[oldest]
            self._chars -= len(oldest)


@dataclass(frozen=True, slots=True)
class _Change:
    """What happened to a history since its anchor."""

    shape: float
    appended_chars: int
    appended_messages: int
    known_freed_shape: float
    unknown_freed_chars: int

    def freed_tokens(self, shape_scale: float, chars_per_token: float) -> float:
        return shape_scale * self.known_freed_shape + self.unknown_freed_chars / chars_per_token


@dataclass(frozen=True, slots=True)
class Anchor:
    """The prompt as it was sent, and what the server said it weighed."""

    tokens: int
    chars: int
    messages: int
    epoch: int


class TokenMeter:
    """Estimates the next prompt's tokens from the last reported usage plus what changed.

    Call :meth:`observe` with the usage of each response *before* the assistant
    reply is appended, so the anchor describes exactly the conversation that was sent.
    An anchored estimate reads only the messages appended since the anchor. Without
    an anchor in the current epoch the whole history is weighed, through a memo, so
    only text the meter has never seen is scanned.
    """

    def __init__(self, settings: Settings, fixed_chars: int) -> None:
        self.settings = settings
        self.fixed_chars = fixed_chars
        self._anchor: Anchor | None = None
        self._ratio: float | None = None
        self._scale_tokens = SHAPE_PRIOR_TOKENS  # decayed sums behind the shape scale
        self._scale_shape = SHAPE_PRIOR_TOKENS
        self._fixed_tokens: float | None = None
        self._fixed_learnt_from = FIXED_LEARNING_MAX_CHARS
        self._memo = ShapeMemo()
        self._known_freed_chars = 0  # freed since the anchor by edits that were weighed
        self._known_freed_shape = 0.0
        # The last estimate, keyed by the very conversation object (not its id, which a
        # short-lived conversation may share with the next one) and its state.
        self._cached: tuple[Conversation, tuple[int, ...], int] | None = None

    @property
    def chars_per_token(self) -> float:
        """The learnt whole-prompt ratio, or the configured one before the first response."""
        return self._ratio if self._ratio is not None else self.settings.chars_per_token

    @property
    def shape_scale(self) -> float:
        """Server tokens per shape token, learnt from successive anchors."""
        return _clamp(self._scale_tokens / self._scale_shape, MIN_SHAPE_SCALE, MAX_SHAPE_SCALE)

    @property
    def fixed_tokens(self) -> float:
        """Tokens of the system prompt and tool schemas, learnt or guessed from characters."""
        if self._fixed_tokens is not None:
            return self._fixed_tokens
        return self.fixed_chars / self.settings.chars_per_token

    def observe(self, usage_prompt_tokens: int, conversation: Conversation) -> None:
        """Anchor on the server's count (input + cache read + cache write) for the request sent."""
        if usage_prompt_tokens <= 0:
            return  # some compatible servers report nothing; keep the last good anchor
        messages = len(conversation)
        previous = self._anchor
        if previous is not None and previous.epoch == conversation.epoch:
            self._learn_shape_scale(previous, usage_prompt_tokens, conversation.messages,
                                    conversation.total_chars)
        elif conversation.total_chars < self._fixed_learnt_from:
            self._learn_fixed_tokens(usage_prompt_tokens, conversation)
        self._anchor = Anchor(
            usage_prompt_tokens, conversation.total_chars, messages, conversation.epoch
        )
        self._cached = None
        self._known_freed_chars = 0
        self._known_freed_shape = 0.0
        content_tokens = usage_prompt_tokens - MESSAGE_OVERHEAD_TOKENS * messages
        prompt_chars = self.fixed_chars + conversation.total_chars
        if content_tokens > 0 and prompt_chars > 0:
            ratio = prompt_chars / content_tokens
            self._ratio = _clamp(ratio, MIN_CHARS_PER_TOKEN, MAX_CHARS_PER_TOKEN)

    def resume_from(self, tokens: int, messages: int, fixed_chars: int,
                    conversation: Conversation) -> None:
        """A resumed history starts from the server's count of its last request (the first
        ``messages`` messages, sent with ``fixed_chars`` of system prompt and schemas), so
        the bar reads after ``-c`` what it read when the session ended."""
        if not 0 < messages <= len(conversation):
            return
        sent = Conversation(conversation.messages[:messages])
        sent.epoch = conversation.epoch
        now_fixed = self.fixed_chars
        self.fixed_chars = fixed_chars
        self.observe(tokens, sent)
        self.schemas_changed(now_fixed)  # a system prompt or tools that changed since

    def schemas_changed(self, fixed_chars: int) -> None:
        """Tools were added (an MCP server connected): shift what was learnt and the anchor
        by the schemas' difference, so the estimate does not wait for the next response."""
        delta = (fixed_chars - self.fixed_chars) / self.chars_per_token
        self.fixed_chars = fixed_chars
        if self._fixed_tokens is not None:
            self._fixed_tokens = max(0.0, self._fixed_tokens + delta)
        anchor = self._anchor
        if anchor is not None:
            tokens = max(0, round(anchor.tokens + delta))
            self._anchor = Anchor(tokens, anchor.chars, anchor.messages, anchor.epoch)
        self._cached = None

    def _learn_fixed_tokens(self, tokens: int, conversation: Conversation) -> None:
        """What the server counted beyond the history is the system prompt and tools.

        Any error in weighing the history lands here, so only a history smaller than
        the one the last value came from may replace it: at best the first request.
        """
        shape, _ = self._memo.of_messages(conversation.messages)
        history = self.shape_scale * shape + MESSAGE_OVERHEAD_TOKENS * len(conversation)
        self._fixed_tokens = max(0.0, tokens - history)
        self._fixed_learnt_from = conversation.total_chars

    def _learn_shape_scale(
        self, before: Anchor, tokens: int, messages: Sequence[Message], total_chars: int
    ) -> None:
        """Learn only from requests that mostly added text: there the server's growth
        is the appended text's weight, not a mix with guesses about what was freed."""
        change = self._change_since(before, messages, total_chars)
        if change.shape < MIN_SHAPE_SAMPLE_TOKENS:
            return  # too small to learn from: mostly framing noise
        if abs(change.unknown_freed_chars) > MAX_FREED_SHARE * change.appended_chars:
            return  # blurred by edits the meter could not weigh
        if change.known_freed_shape > MAX_FREED_SHARE * change.shape:
            return  # mostly an exchange of old text for new: a difference of two guesses
        net_shape = change.shape - change.known_freed_shape
        grown = tokens - before.tokens + change.unknown_freed_chars / self.chars_per_token
        grown -= MESSAGE_OVERHEAD_TOKENS * change.appended_messages
        grown = _clamp(grown, MIN_SHAPE_SCALE * net_shape, MAX_SHAPE_SCALE * net_shape)
        self._scale_tokens = SHAPE_MEMORY * self._scale_tokens + grown
        self._scale_shape = SHAPE_MEMORY * self._scale_shape + net_shape

    def _change_since(
        self, anchor: Anchor, messages: Sequence[Message], total_chars: int
    ) -> _Change:
        appended = messages[anchor.messages :]
        shape, appended_chars = self._memo.of_messages(appended)
        freed_chars = anchor.chars + appended_chars - total_chars
        return _Change(
            shape=shape,
            appended_chars=appended_chars,
            appended_messages=len(appended),
            known_freed_shape=self._known_freed_shape,
            unknown_freed_chars=freed_chars - self._known_freed_chars,
        )

    def note_edit(
        self,
        conversation: Conversation,
        ref: ResultRef,
        old: ToolResultBlock,
        new: ToolResultBlock,
    ) -> float:
        """Tokens an edit of history freed, weighed by shape; remembered for the estimate.

        Characters alone would convert the freed text at the prompt's average ratio,
        which is off when the freed text is denser or lighter than the average.
        """
        shape = self._memo.of_block(old) - self._memo.of_block(new)
        if self._predates_anchor(conversation, ref):
            self._known_freed_chars += len(old.content) - len(new.content)
            self._known_freed_shape += shape
            self._cached = None
        return self.shape_scale * shape

    def _predates_anchor(self, conversation: Conversation, ref: ResultRef) -> bool:
        """Messages appended after the anchor are weighed as they are now; older ones
        enter the estimate only through what was freed from them."""
        anchor = self._anchor
        return (
            anchor is not None
            and anchor.epoch == conversation.epoch
            and ref.message_index < anchor.messages
        )

    def is_anchored(self, conversation: Conversation) -> bool:
        """True when the last anchor was taken in this history's epoch."""
        return self._anchor is not None and self._anchor.epoch == conversation.epoch

    def estimate(self, conversation: Conversation) -> int:
        """Estimated prompt tokens of the next request for ``conversation``."""
        key = (conversation.epoch, conversation.version, self.fixed_chars)
        cached = self._cached
        if cached is not None and cached[0] is conversation and cached[1] == key:
            return cached[2]
        result = self._estimate(conversation.messages, conversation.epoch, conversation.total_chars)
        self._cached = (conversation, key, result)
        return result

    def estimate_messages(self, messages: Sequence[Message], *, epoch: int | None = None) -> int:
        """Estimated prompt tokens of a request carrying ``messages`` instead of the history.

        Given the history's ``epoch`` the messages count as a variant of it (a prefix,
        say, as a compaction planner measures) and are estimated from the last anchor
        taken in that epoch; without it they are weighed whole, as they will be once
        they replace the history.
        """
        return self._estimate(messages, epoch, sum(message_chars(m) for m in messages))

    def _estimate(
        self, messages: Sequence[Message], epoch: int | None, total_chars: int
    ) -> int:
        anchor = self._anchor
        if anchor is not None and epoch is not None and anchor.epoch == epoch:
            tokens = self._anchored_estimate(anchor, messages, total_chars)
        else:
            shape, _ = self._memo.of_messages(messages)
            tokens = self.fixed_tokens + self.shape_scale * shape
            tokens += MESSAGE_OVERHEAD_TOKENS * len(messages)
        return max(0, round(tokens))

    def _anchored_estimate(
        self, anchor: Anchor, messages: Sequence[Message], total_chars: int
    ) -> float:
        change = self._change_since(anchor, messages, total_chars)
        return (
            anchor.tokens
            + change.shape * self.shape_scale
            + MESSAGE_OVERHEAD_TOKENS * change.appended_messages
            - change.freed_tokens(self.shape_scale, self.chars_per_token)
        )

    def utilization(self, conversation: Conversation) -> float:
        window = self.settings.effective_window
        return self.estimate(conversation) / window if window > 0 else 1.0

    def status(self, conversation: Conversation) -> ContextStatus:
        """The one reading that the status bar, /context and the auto-compact trigger share."""
        settings = self.settings
        return ContextStatus(
            tokens=self.estimate(conversation),
            effective_window=settings.effective_window,
            window=settings.window,
            autocompact_at=settings.autocompact_tokens if settings.auto_compact else 0,
            anchored=self.is_anchored(conversation),
        )

    def tokens_for(self, chars: int) -> int:
        """Tokens a number of characters of history is worth at the learnt ratio."""
        return round(chars / self.chars_per_token)


def _clamp(value: float, low: float, high: float) -> float:
    return min(high, max(low, value))


def apply_edit(
    conversation: Conversation, ref: ResultRef, new: ToolResultBlock, meter: TokenMeter
) -> tuple[int, float]:
    """Swap a tool result; returns the characters and tokens it freed.

    The tokens are weighed by shape and the meter keeps its estimate exact about
    the edit.
    """
    old = conversation.result_at(ref)
    chars = conversation.replace_result(ref, new)
    return chars, meter.note_edit(conversation, ref, old, new)
