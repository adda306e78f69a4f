"""Cache diagnostics as the Messages API gives them (``diagnostics.previous_message_id``).

The server keeps a fingerprint of each request that asked for diagnostics,
keyed by its reply's id; the next request names that id and is told the first
place where its prompt departs from the earlier one: the model, the tools, the
system prompt, or an earlier message (appending messages is no departure).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from mini_claude.simulator.tokens import canonical_json, digest
from mini_claude.simulator.types import PromptUnit, WireError

KEPT_FINGERPRINTS = 4_096


@dataclass(frozen=True, slots=True)
class PrefixFingerprint:
    """Hashes and token counts only, never the prompt itself."""

    model: str
    tools: bytes
    system: bytes
    parameters: bytes  # other prompt-affecting parameters: tool_choice, thinking
    messages: tuple[bytes, ...]
    message_ends: tuple[int, ...]  # prompt tokens up to the end of each message
    head_tokens: int  # tools + system
    total_tokens: int


def _without_cache_control(value: Any) -> Any:
    """Moving a breakpoint changes nothing in the prompt itself."""
    if isinstance(value, dict):
        return {k: _without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_control(v) for v in value]
    return value


def fingerprint(
    body: dict[str, Any],
    tools: list[dict[str, Any]],
    system: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    units: list[PromptUnit],
) -> PrefixFingerprint:
    """``messages`` merged by role, ``units`` in prompt order (one per message block)."""
    head = len(tools) + len(system)
    head_tokens = sum(u.tokens for u in units[:head])
    ends: list[int] = []
    position, running = head, head_tokens
    for message in messages:
        count = max(1, len(message["content"]))
        running += sum(u.tokens for u in units[position : position + count])
        position += count
        ends.append(running)
    parameters = {"tool_choice": body.get("tool_choice"), "thinking": body.get("thinking")}
    return PrefixFingerprint(
        model=str(body.get("model")),
        tools=digest(canonical_json(_without_cache_control(tools))),
        system=digest(canonical_json(_without_cache_control(system))),
        parameters=digest(canonical_json(parameters)),
        messages=tuple(digest(canonical_json(_without_cache_control(m))) for m in messages),
        message_ends=tuple(ends),
        head_tokens=head_tokens,
        total_tokens=sum(u.tokens for u in units),
    )


def previous_id_of(body: dict[str, Any]) -> tuple[bool, str | None]:
    """(asked, previous id) from the request's ``diagnostics``, validated."""
    raw = body.get("diagnostics")
    if raw is None:
        return False, None
    if not isinstance(raw, dict):
        raise WireError("diagnostics: Input should be a valid dictionary")
    previous = raw.get("previous_message_id")
    if previous is not None and not isinstance(previous, str):
        raise WireError("diagnostics.previous_message_id: Input should be a valid string")
    return True, previous


def diagnose(
    previous: PrefixFingerprint | None, current: PrefixFingerprint
) -> dict[str, Any] | None:
    """The response's ``cache_miss_reason``, or None when the earlier prefix is intact."""
    if previous is None:
        return {"type": "previous_message_not_found"}
    missed = previous.total_tokens
    if previous.model != current.model:
        return {"type": "model_changed", "cache_missed_input_tokens": missed}
    if previous.tools != current.tools:
        return {"type": "tools_changed", "cache_missed_input_tokens": missed}
    if previous.system != current.system:
        return {"type": "system_changed", "cache_missed_input_tokens": missed}
    if previous.parameters != current.parameters:
        return {"type": "unavailable"}
    common = 0
    for old, new in zip(previous.messages, current.messages, strict=False):
        if old != new:
            break
        common += 1
    if common == len(previous.messages):
        return None
    kept = previous.message_ends[common - 1] if common else previous.head_tokens
    return {"type": "messages_changed", "cache_missed_input_tokens": max(0, missed - kept)}


class FingerprintStore:
    """Fingerprints by reply id, the oldest forgotten first."""

    def __init__(self) -> None:
        self._items: OrderedDict[str, PrefixFingerprint] = OrderedDict()

    def keep(self, message_id: str, print_: PrefixFingerprint) -> None:
        self._items[message_id] = print_
        while len(self._items) > KEPT_FINGERPRINTS:
            self._items.popitem(last=False)

    def get(self, message_id: str) -> PrefixFingerprint | None:
        return self._items.get(message_id)
