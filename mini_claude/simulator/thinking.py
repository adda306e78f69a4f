"""Thinking blocks as the Messages API checks them, at the strictest reading of the rules.

A block's signature binds its text and its prefix (system, tools, every earlier
message and every earlier block of its own message, ``cache_control`` left
out). A request with thinking enabled is refused when a block sent back was
modified, when anything before it changed (a tier edit, a summary, a dropped
earlier block), or when its tool loop's last assistant message does not start
with a thinking block. Blocks sent back are checked whether or not the request
enables thinking (the loop rule only applies when it does); a reply to a
request without thinking has none.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass
from typing import Any

from mini_claude.simulator.tokens import canonical_json
from mini_claude.simulator.types import WireError

SECRET = b"mini-claude simulator thinking"
DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
FINAL_ASSISTANT = (
    "{where}: Expected `thinking` or `redacted_thinking`, but found `{found}`. When `thinking` "
    "is enabled, a final `assistant` message must start with a thinking block (preceeding the "
    "lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking "
    "blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult "
    f"our documentation at {DOCS}"
)
MODIFIED = "{where}: Invalid `signature` in `thinking` block"
BOUND_ELSEWHERE = (
    "{where}: Invalid `signature` in `thinking` block. The block is bound to a different "
    "conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` "
    'to "drop_block".'
)
THINKING_TYPES = ("thinking", "redacted_thinking")


@dataclass(frozen=True, slots=True)
class ThinkingMode:
    kind: str  # "enabled" | "adaptive"
    budget_tokens: int = 0
    effort: str | None = None


def _mac(*parts: bytes) -> str:
    digest = hmac.new(SECRET, b"\x00".join(parts), hashlib.sha256).digest()[:18]
    return base64.urlsafe_b64encode(digest).decode()


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


class PrefixChain:
    """Hashes of the prompt up to each message boundary, computed once per request."""

    def __init__(self, system: list[dict[str, Any]], tools: list[dict[str, Any]],
                 messages: list[dict[str, Any]]) -> None:
        head = hashlib.blake2b(canonical_json(_strip([system, tools])).encode(), digest_size=16)
        self._at: list[bytes] = [head.digest()]
        for message in messages:
            step = hashlib.blake2b(self._at[-1], digest_size=16)
            step.update(canonical_json(_strip(message)).encode("utf-8", "surrogatepass"))
            self._at.append(step.digest())

    def before(self, message_index: int, earlier_blocks: list[dict[str, Any]]) -> bytes:
        """The prefix of a block: messages before it, and its message's earlier blocks."""
        inner = canonical_json(_strip(earlier_blocks)).encode("utf-8", "surrogatepass")
        return hashlib.blake2b(self._at[message_index] + inner, digest_size=16).digest()


def sign(text: str, prefix: bytes) -> str:
    """``<text mac>.<prefix mac>``: which half fails tells a modified block from a moved one."""
    return f"{_mac(text.encode('utf-8', 'surrogatepass'))}.{_mac(prefix)}"


def redacted_data(prefix: bytes) -> str:
    return "sim-redacted." + _mac(prefix)


def thinking_mode(body: dict[str, Any]) -> ThinkingMode | None:
    """Validate ``thinking`` and ``output_config``; None when thinking is off."""
    raw = body.get("thinking")
    config = body.get("output_config")
    effort = config.get("effort") if isinstance(config, dict) else None
    if effort is not None and effort not in ("low", "medium", "high", "xhigh", "max"):
        raise WireError(
            "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'"
        )
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise WireError("thinking: Input should be a valid dictionary")
    kind = raw.get("type")
    if kind == "disabled":
        return None
    if kind == "adaptive":
        return ThinkingMode("adaptive", effort=effort)
    if kind != "enabled":
        raise WireError(
            f"thinking: Input tag '{kind}' found using 'type' does not match any of the expected "
            "tags: 'enabled', 'disabled', 'adaptive', 'between_tools'"
        )
    budget = raw.get("budget_tokens")
    if not isinstance(budget, int) or isinstance(budget, bool):
        raise WireError("thinking.enabled.budget_tokens: Field required")
    if budget < 1024:
        raise WireError(
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
        )
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, int) and max_tokens <= budget:
        raise WireError(
            "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
            f"documentation at {DOCS}#max-tokens-and-context-window-size"
        )
    return ThinkingMode("enabled", budget, effort)


def check_thinking(
    mode: ThinkingMode | None,
    chain: PrefixChain,
    messages: list[dict[str, Any]],
    tool_choice: Any,
) -> None:
    """Refuse what the API refuses: a thinking block sent back must be intact and bound to
    its prefix whatever the request says; with thinking on, the tool loop rules too."""
    if mode is not None and isinstance(tool_choice, dict) and tool_choice.get("type") in (
        "any", "tool"
    ):
        raise WireError("Thinking may not be enabled when tool_choice forces tool use.")
    for m_index, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        for b_index, block in enumerate(message["content"]):
            if block.get("type") in THINKING_TYPES:
                _verify(block, chain.before(m_index, message["content"][:b_index]),
                        f"messages.{m_index}.content.{b_index}")
    if mode is not None:
        _check_final_assistant(messages)


def _verify(block: dict[str, Any], prefix: bytes, where: str) -> None:
    if block.get("type") == "redacted_thinking":
        if block.get("data") != redacted_data(prefix):
            raise WireError(BOUND_ELSEWHERE.format(where=where))
        return
    text, signature = block.get("thinking"), block.get("signature")
    if not isinstance(text, str) or not isinstance(signature, str) or "." not in signature:
        raise WireError(MODIFIED.format(where=where))
    text_mac, prefix_mac = signature.split(".", 1)
    if not hmac.compare_digest(text_mac, _mac(text.encode("utf-8", "surrogatepass"))):
        raise WireError(MODIFIED.format(where=where))
    if not hmac.compare_digest(prefix_mac, _mac(prefix)):
        raise WireError(BOUND_ELSEWHERE.format(where=where))


def _check_final_assistant(messages: list[dict[str, Any]]) -> None:
    """In a tool loop the last assistant message must open with its thinking."""
    if len(messages) < 2 or messages[-1]["role"] != "user":
        return
    if not any(b.get("type") == "tool_result" for b in messages[-1]["content"]):
        return
    index = len(messages) - 2
    content = messages[index]["content"]
    first = content[0].get("type") if content else "nothing"
    if first not in THINKING_TYPES:
        raise WireError(FINAL_ASSISTANT.format(where=f"messages.{index}.content.0.type",
                                               found=first))


def reply_thinking(text: str, redacted: bool, prefix: bytes) -> dict[str, Any]:
    """The thinking block that opens a reply, signed for the prompt it answers."""
    if redacted:
        return {"type": "redacted_thinking", "data": redacted_data(prefix)}
    return {"type": "thinking", "thinking": text, "signature": sign(text, prefix)}
