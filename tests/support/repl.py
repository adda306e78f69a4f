"""Driving the real REPL in-process: keys through a pipe, output into a string, a real simulator.

prompt_toolkit reads the pipe and draws to a dummy output; everything the REPL
prints to the scrollback goes through a rich Console into ``out``. Tests wait
for text or for the REPL to be back at its prompt, never for a fixed time.
"""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from mini_claude.permissions.asking import Approver
from mini_claude.permissions.mode_table import PermissionMode
from mini_claude.providers import create_provider
from mini_claude.session.wiring import Session
from mini_claude.settings import Settings
from mini_claude.simulator import Simulator
from mini_claude.ui.permissions import TerminalApprover
from mini_claude.ui.repl import Repl

WAIT_SECONDS = 90.0  # generous: a loaded 2-core machine is slow, never stuck


def sim_settings(sim: Simulator, home: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "provider": "anthropic",
        "model": "sim-model",
        "api_keys": {"anthropic": "test-key"},
        "base_urls": {"anthropic": sim.anthropic_base_url},
        "home": home,
        "max_retries": 0,
    }
    values.update(overrides)
    return Settings(**values)


async def until(predicate: Callable[[], bool], what: str, timeout: float = WAIT_SECONDS) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


@dataclass
class ReplDriver:
    repl: Repl
    pipe: PipeInput
    out: io.StringIO
    task: asyncio.Task[int]
    _prompts_used: int = 0

    @property
    def text(self) -> str:
        return self.out.getvalue()

    @property
    def session(self) -> Session:
        return self.repl.session

    async def wait_for(self, needle: str, *, after: int = 0) -> None:
        await until(lambda: needle in self.text[after:], repr(needle))

    async def at_prompt(self) -> None:
        """Wait for a prompt that has not been typed into yet."""
        await until(lambda: self.repl.at_prompt.is_set() and self.repl.prompts_shown
                    > self._prompts_used, "the prompt")

    async def submit(self, line: str) -> int:
        """Type a line at a fresh prompt; returns where the output stood, for ``wait_for``."""
        await self.at_prompt()
        self._prompts_used = self.repl.prompts_shown
        mark = len(self.text)
        self.pipe.send_text(line + "\r")
        return mark

    async def keys(self, keys: str) -> None:
        self.pipe.send_text(keys)

    async def turn_running(self) -> None:
        await until(lambda: self.repl.turn_running, "a running turn")

    async def exit(self) -> int:
        await self.submit("/exit")
        return await asyncio.wait_for(self.task, WAIT_SECONDS)


@asynccontextmanager
async def running_repl(settings: Settings, cwd: Path, *, approver: Approver | None = None,
                       resume: str | None = None,
                       mode_flag: PermissionMode | None = None) -> AsyncIterator[ReplDriver]:
    out = io.StringIO()
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        console = Console(file=out, width=200, color_system=None)
        session = Session(settings, cwd, create_provider(settings), approver or TerminalApprover(),
                          mode_flag=mode_flag)
        if resume:
            session.resume(resume)
        else:
            session.start_new()
        repl = Repl(session, console)
        task = asyncio.create_task(repl.run())
        driver = ReplDriver(repl, pipe, out, task)
        try:
            yield driver
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
