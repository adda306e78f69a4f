"""JSON lines that are always written, whatever a tool's arguments hold.

A denial record copies a call's arguments; a tool may have stashed a private object
among them, and a model may have sent them nested thousands deep. Neither may cost
the run its result line: values are reduced to plain JSON (objects JSON cannot carry
become their type's name, nesting past a depth becomes a marker) before writing.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from typing import Any, TextIO

MAX_DEPTH = 64
TOO_DEEP = "[nested too deep]"


def json_safe(value: Any, depth: int = 0) -> Any:
    """``value`` as plain JSON data: dicts, lists, strings, finite numbers, booleans, null."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if depth >= MAX_DEPTH:
        return TOO_DEEP
    if isinstance(value, dict):
        return {str(k): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v, depth + 1) for v in value]
    return f"<{type(value).__name__}>"


def dumps_line(line: dict[str, Any]) -> str:
    """One JSON line; never raises for what a line holds."""
    try:
        return json.dumps(line, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return json.dumps(json_safe(line), ensure_ascii=False, allow_nan=False)


class OutputClosed(Exception):
    """Whoever read stdout has gone (``| head -1``): the run ends quietly."""


def write_or_close(out: TextIO, text: str) -> None:
    """Write and flush; when the reader is gone, point stdout at /dev/null (so the
    interpreter's own flush at exit stays quiet) and raise :class:`OutputClosed`."""
    try:
        out.write(text)
        out.flush()
    except BrokenPipeError:
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, out.fileno())
            os.close(devnull)
        raise OutputClosed from None
