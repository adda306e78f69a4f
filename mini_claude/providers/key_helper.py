"""``apiKeyHelper``: a command from the user's own settings prints the API key; it is run
when the session starts without a key, and again when the server refuses the key (401),
as Claude Code does for keys that expire."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from mini_claude.protocol import AuthenticationFailed, ModelRequest, Provider, StreamEvent

if TYPE_CHECKING:
    from mini_claude.settings import Settings

HELPER_TIMEOUT_SECONDS = 30.0


class KeyHelperError(Exception):
    """The helper failed; one line that never holds what it printed on stdout."""


def run_key_helper(command: str, timeout: float = HELPER_TIMEOUT_SECONDS) -> str:
    """The key the helper prints (its stdout, stripped)."""
    try:
        done = subprocess.run(command, shell=True, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        raise KeyHelperError(f"apiKeyHelper gave no key within {timeout:g} s") from None
    except OSError as exc:
        raise KeyHelperError(f"apiKeyHelper could not run: {exc.strerror or exc}") from None
    key = done.stdout.strip()
    if done.returncode != 0 or not key:
        why = next(iter(done.stderr.strip().splitlines()), "") or "no output"
        raise KeyHelperError(f"apiKeyHelper failed (exit {done.returncode}): {why[:200]}")
    return key


class RefreshedKey:
    """Forwards to the adapter built with the helper's key; a 401 before any of the reply
    arrived runs the helper again and, with a new key, sends the request once more."""

    def __init__(self, build: Callable[[str], Provider], settings: Settings,
                 run: Callable[[str], str] = run_key_helper) -> None:
        assert settings.api_key_helper is not None
        self.helper = settings.api_key_helper
        self.build = build
        self.run = run
        self.key = settings.api_key or run(self.helper)
        self.inner = build(self.key)
        self.name = self.inner.name

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        started = False
        try:
            async for event in self.inner.stream(request):
                started = True
                yield event
        except AuthenticationFailed:
            if started or not self._refresh():
                raise
            async for event in self.inner.stream(request):
                yield event

    def _refresh(self) -> bool:
        try:
            key = self.run(self.helper)
        except KeyHelperError:
            return False
        if key == self.key:
            return False
        self.key = key
        old, self.inner = self.inner, self.build(key)
        del old  # closed with the event loop's clients; a stale key is never sent again
        return True

    async def close(self) -> None:
        await self.inner.close()
