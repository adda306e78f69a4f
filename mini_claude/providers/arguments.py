"""Tool-call arguments as the model streamed them, parsed once the call is complete."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mini_claude.protocol import RAW_ARGUMENTS_KEY
from mini_claude.sanitize import has_non_finite


def parse_tool_input(parts: Sequence[str]) -> dict[str, Any]:
    """The JSON object the model sent; anything else is kept raw so the tool can say why."""
    raw = "".join(parts)
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
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
