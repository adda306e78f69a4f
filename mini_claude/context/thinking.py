"""Extended thinking through the context pipeline: what to request, and what no edit may break.

The API's rules for thinking blocks sent back (see the extended-thinking and
preserved-thinking docs):

- in a tool loop (the last user turn carries tool results) the last assistant
  message must start with its own thinking block, unmodified;
- on newer models a thinking block is bound to everything before it (system,
  tools, earlier messages and earlier thinking): change any of that and the
  block, and every later one, is refused.

So while a tool loop with thinking is open nothing before its last assistant
message may change: the cheap tiers wait for the turn to end, and a summary
inside the turn closes the loop (its tool calls and results become plain text).
At a turn boundary every earlier turn is finished; its thinking is dead weight
the API ignores, so :class:`ClearThinkingTier` drops all of it once the prompt
cache is cold or another tier has edited history anyway (that edit already
invalidated the thinking after it), like the server-side ``clear_thinking`` edit.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from mini_claude.conversation import (
    THINKING_BLOCKS,
    THINKING_CLEARED,
    Block,
    Conversation,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from mini_claude.models import model_key, provider_row
from mini_claude.protocol import ThinkingConfig, TierReport
from mini_claude.settings import Settings

# Models that think adaptively (and refuse or deprecate a fixed budget); the others
# take ``budget_tokens``. The Models API's capabilities win over this list.
ADAPTIVE_MODELS = (
    "claude-opus-4-6", "claude-sonnet-4-6", "claude-opus-4-7", "claude-opus-4-8",
    "claude-opus-5", "claude-sonnet-5", "claude-fable-5", "claude-mythos-5",
    "claude-haiku-5", "claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5",
    "claude-fable-5-1", "claude-fable-5-2", "claude-mythos-5-1", "claude-mythos-5-2",
    "claude-mythos-preview", "sim-adaptive",
)
DEFAULT_OPENAI_EFFORT = "medium"
MIN_BUDGET = 1_024


def thinks_adaptively(settings: Settings) -> bool:
    if settings.reported_thinking is not None:
        return settings.reported_thinking == "adaptive"
    return model_key(settings.model) in ADAPTIVE_MODELS


def thinking_config(settings: Settings) -> ThinkingConfig | None:
    """The request's thinking, from ``MINI_CLAUDE_THINKING_TOKENS`` and the efforts."""
    if provider_row(settings.provider).thinking == "effort":
        effort = settings.reasoning_effort or (
            DEFAULT_OPENAI_EFFORT if settings.thinking_tokens else None
        )
        return ThinkingConfig(effort=effort) if effort else None
    if settings.thinking_tokens <= 0:
        return None
    if thinks_adaptively(settings):
        # The budget is not sent; it only sizes max_tokens so thinking has room.
        return ThinkingConfig(budget_tokens=settings.thinking_tokens, adaptive=True,
                              effort=settings.effort)
    return ThinkingConfig(budget_tokens=max(MIN_BUDGET, settings.thinking_tokens),
                          effort=settings.effort)


def max_tokens_for(thinking: ThinkingConfig | None, max_tokens: int) -> int:
    """``max_tokens`` must exceed a thinking budget (adaptive thinking too needs the room),
    with room left for the answer."""
    if thinking is None or not thinking.budget_tokens:
        return max_tokens
    return max(max_tokens, thinking.budget_tokens + MIN_BUDGET)


def has_thinking(message: Message) -> bool:
    return any(isinstance(b, THINKING_BLOCKS) for b in message.blocks)


def open_loop_assistant(messages: Sequence[Message]) -> int | None:
    """Index of the assistant message a tool loop is waiting on, as the wire sees it.

    Consecutive user messages are sent as one, so tool results followed by typed
    text (an interrupted turn, a resumed session) still keep the loop open.
    """
    index = len(messages) - 1
    carries_results = False
    while index >= 0 and messages[index].role == "user":
        carries_results = carries_results or bool(messages[index].tool_results)
        index -= 1
    if index < 0 or not carries_results or not messages[index].tool_uses:
        return None
    return index


def thinking_loop_open(messages: Sequence[Message]) -> bool:
    """A tool loop whose assistant message carries thinking: nothing before it may change."""
    index = open_loop_assistant(messages)
    return index is not None and has_thinking(messages[index])


class ClearThinkingTier:
    """At a turn boundary, drops every finished turn's thinking once keeping it buys nothing."""

    def run(
        self, conversation: Conversation, *, cache_cold: bool, history_edited: bool,
        chars_per_token: float,
    ) -> TierReport | None:
        messages = conversation.messages
        if thinking_loop_open(messages) or not (cache_cold or history_edited):
            return None
        blocks = sum(1 for m in messages for b in m.blocks if isinstance(b, THINKING_BLOCKS))
        if not blocks:
            return None
        freed = max(0, conversation.drop_thinking())
        why = "prompt cache cold" if cache_cold else "history edited before it"
        return TierReport(
            "clear_thinking", blocks, freed, round(freed / max(chars_per_token, 1.0)),
            f"earlier turns' thinking, {why}",
        )


# ---- a summary inside a tool loop --------------------------------------------------


def without_thinking(messages: Sequence[Message]) -> list[Message]:
    """Copies with no thinking blocks (for a request whose history was reshaped)."""
    return [
        Message(m.role, [b for b in m.blocks if not isinstance(b, THINKING_BLOCKS)] or
                [TextBlock(THINKING_CLEARED)])
        for m in messages
    ]


def close_thinking_loop(messages: Sequence[Message]) -> list[Message] | None:
    """The history after a summary, without thinking whose prefix the summary replaced.

    Every thinking block goes (what came before it changed). If that leaves an open
    tool loop, its last calls and results become plain text, so the next request
    starts a fresh assistant turn instead of a loop missing its thinking. None when
    there is no thinking to remove.
    """
    if not any(has_thinking(m) for m in messages):
        return None
    stripped = without_thinking(messages)
    index = open_loop_assistant(stripped)
    if index is None:
        return stripped
    names = {u.id: u.name for u in stripped[index].tool_uses}
    stripped[index] = Message("assistant", [_as_text(b) for b in stripped[index].blocks])
    for position in range(index + 1, len(stripped)):
        message = stripped[position]
        stripped[position] = Message("user", [_result_as_text(b, names) for b in message.blocks])
    return stripped


def _as_text(block: Block) -> Block:
    if isinstance(block, ToolUseBlock):
        arguments = json.dumps(block.input, ensure_ascii=False)
        return TextBlock(f"[tool call {block.name} {arguments}]")
    return block


def _result_as_text(block: Block, names: dict[str, str]) -> Block:
    if isinstance(block, ToolResultBlock):
        name = names.get(block.tool_use_id, block.tool_name or "tool")
        failed = " (error)" if block.is_error else ""
        return TextBlock(f"[result of {name}{failed}]\n{block.content or '(empty)'}")
    return block
