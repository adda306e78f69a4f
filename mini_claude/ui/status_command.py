"""Claude Code's ``statusLine`` setting: the user's command reads the session as JSON on stdin
and its first line of output is shown under our own status line.

It runs in the background, never more than once at a time and at most every
:data:`MIN_INTERVAL_SECONDS`; a slow or failing command leaves the last line it printed.
Only colours (SGR escapes) of its output are kept: any other escape could move the cursor
or retitle the terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import Callable
from typing import Any

from prompt_toolkit.formatted_text import ANSI, StyleAndTextTuples, to_formatted_text

from mini_claude.session.settings_files import StatusLineCommand
from mini_claude.visible import visible

MIN_INTERVAL_SECONDS = 0.3  # as Claude Code throttles its updates
TIMEOUT_SECONDS = 5.0
MAX_CHARS = 400
_ESCAPE = re.compile(r"\x1b\[[0-9;]*m|\x1b")  # a colour, or any other escape's start
_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def kept_colours(line: str) -> str:
    """The line with colours kept and every other control shown as a stand-in."""
    parts, last = [], 0
    for match in _ESCAPE.finditer(line):
        parts.append(visible(line[last:match.start()], one_line=True))
        token = match.group(0)
        parts.append(token if _COLOUR.fullmatch(token) else "")
        last = match.end()
    parts.append(visible(line[last:], one_line=True))
    return "".join(parts)


class StatusCommand:
    """The latest line of the user's status command, refreshed on request."""

    def __init__(self, command: StatusLineCommand, cwd: str,
                 redraw: Callable[[], None] = lambda: None) -> None:
        self.command = command
        self.cwd = cwd
        self.redraw = redraw
        self.line = ""
        self._last_run = 0.0
        self._task: asyncio.Task[None] | None = None
        self._pending: dict[str, Any] | None = None

    def fragments(self) -> StyleAndTextTuples:
        if not self.line:
            return []
        padding = " " * max(0, self.command.padding)
        return [("", padding), *to_formatted_text(ANSI(self.line))]

    def refresh(self, payload: dict[str, Any]) -> None:
        """Run the command with this session state soon (the newest state wins)."""
        self._pending = payload
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._run_pending())

    async def _run_pending(self) -> None:
        while self._pending is not None:
            wait = self._last_run + MIN_INTERVAL_SECONDS - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            payload, self._pending = self._pending, None
            self._last_run = time.monotonic()
            line = await self._run(payload)
            if line is not None and line != self.line:
                self.line = line
                self.redraw()

    async def _run(self, payload: dict[str, Any]) -> str | None:
        try:
            process = await asyncio.create_subprocess_shell(
                self.command.command, cwd=self.cwd, stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
                start_new_session=True)
        except OSError:
            return None
        try:
            out, _ = await asyncio.wait_for(
                process.communicate(json.dumps(payload).encode()), TIMEOUT_SECONDS)
        except (TimeoutError, OSError):
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            return None
        first = next(iter(out.decode("utf-8", errors="replace").splitlines()), "")
        return kept_colours(first[:MAX_CHARS])

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def status_payload(*, session_id: str, transcript_path: str, cwd: str, model: str,
                   version: str, cost_usd: float, api_seconds: float, wall_seconds: float,
                   tokens: int, window: int) -> dict[str, Any]:
    """What Claude Code sends its status command, plus the context meter's reading."""
    return {
        "hook_event_name": "Status",
        "session_id": session_id,
        "transcript_path": transcript_path,
        "cwd": cwd,
        "model": {"id": model, "display_name": model},
        "workspace": {"current_dir": cwd, "project_dir": cwd},
        "version": version,
        "output_style": {"name": "default"},
        "cost": {
            "total_cost_usd": round(cost_usd, 6),
            "total_duration_ms": int(wall_seconds * 1000),
            "total_api_duration_ms": int(api_seconds * 1000),
            "total_lines_added": 0,
            "total_lines_removed": 0,
        },
        "exceeds_200k_tokens": tokens > 200_000,
        "context_window": {"used_tokens": tokens, "window": window,
                           "used_percentage": round(100 * tokens / window, 1) if window else 0},
    }
