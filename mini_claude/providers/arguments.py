"""Tool-call arguments as the model streamed them, parsed once the call is complete.

Both adapters come here, so the bounds hold for every provider: arguments nested
deeper than :data:`MAX_DEPTH` or longer than :data:`MAX_CHARS` are never parsed (the
parser, and everything that walks a value after it, recurses per level: 20,000
levels of arrays would end the process); the call answers with a tool error.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mini_claude.protocol import ARGUMENTS_REFUSED_KEY, RAW_ARGUMENTS_KEY
from mini_claude.sanitize import has_non_finite
from mini_claude.transcript_check import nesting_depth

MAX_DEPTH = 100  # real tool inputs nest a few levels
MAX_CHARS = 4_000_000
KEPT_RAW_CHARS = 2_000  # of refused arguments, for the transcript and the replay
def refused_arguments(raw: str) -> str | None:
    """Why these arguments are not parsed at all, or None."""
    if len(raw) > MAX_CHARS:
        return (
            f"The arguments are {len(raw):,} characters, more than the {MAX_CHARS:,} a tool "
            "call may send. Call the tool again with smaller arguments."
        )
    depth = nesting_depth(raw)
    if depth > MAX_DEPTH:
        return (
            f"The arguments nest {depth:,} levels deep, more than the {MAX_DEPTH} a tool call "
            "may use. Call the tool again with flatter arguments."
        )
    return None


def parse_tool_input(parts: Sequence[str]) -> dict[str, Any]:
    """The JSON object the model sent; anything else is kept raw so the tool can say why."""
    raw = "".join(parts)
    if not raw.strip():
        return {}
    refusal = refused_arguments(raw)
    if refusal is not None:
        return {RAW_ARGUMENTS_KEY: raw[:KEPT_RAW_CHARS], ARGUMENTS_REFUSED_KEY: refusal}
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return {RAW_ARGUMENTS_KEY: raw}
    if not isinstance(value, dict) or has_non_finite(value) or not _encodable(value):
        # ``1e999``, ``NaN``, ``Infinity`` parse in Python but are not JSON: kept raw, the
        # tool answers with an error, and nothing non-JSON reaches a request or a transcript.
        return {RAW_ARGUMENTS_KEY: raw}
    return value


def _encodable(value: dict[str, Any]) -> bool:
    """False when the JSON escaped a lone surrogate (``"\\ud800"``): no request holding that
    text can be sent again, so it would break every later call of the session."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
