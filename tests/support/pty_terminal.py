"""`mini-claude` in a real pseudo-terminal, its screen read back through a terminal emulator.

pexpect runs the installed command; pyte plays the terminal (and answers the
cursor-position requests prompt_toolkit sends, so the bottom toolbar is drawn).
Every step polls the screen with a generous limit.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pexpect
import pyte

from mini_claude.simulator import Simulator

WAIT_SECONDS = 30.0
CPR_REQUEST = b"\x1b[6n"
COMMAND = str(Path(sys.executable).with_name("mini-claude"))


class Screen:
    """A pyte screen of any size fed by the child; answers cursor-position requests."""

    def __init__(self, child: pexpect.spawn, columns: int, rows: int) -> None:
        self.child = child
        self.screen = pyte.Screen(columns, rows)
        self.stream = pyte.ByteStream(self.screen)

    def pump(self) -> None:
        try:
            data = self.child.read_nonblocking(65536, timeout=0.05)
        except (pexpect.TIMEOUT, pexpect.EOF):
            return
        for chunk in re.split(b"(" + re.escape(CPR_REQUEST) + b")", data):
            if chunk == CPR_REQUEST:
                row, column = self.screen.cursor.y + 1, self.screen.cursor.x + 1
                self.child.send(f"\x1b[{row};{column}R")
            else:
                self.stream.feed(chunk)

    @property
    def rows(self) -> list[str]:
        return [line.rstrip() for line in self.screen.display]

    @property
    def text(self) -> str:
        return "\n".join(self.rows)

    @property
    def last_row(self) -> str:
        return self.rows[-1]

    @property
    def bottom(self) -> str:
        """The lowest row with anything on it: the status bar, at the prompt or during a turn."""
        filled = [line for line in self.screen.display if line.strip()]
        return filled[-1] if filled else ""

    @property
    def has_empty_prompt(self) -> bool:
        return any(row == ">" for row in self.rows)

    def wait(self, predicate: Callable[[Screen], bool], what: str) -> None:
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline:
            self.pump()
            if predicate(self):
                return
        raise AssertionError(f"timed out waiting for {what}; the screen:\n{self.text}")

    def wait_text(self, needle: str) -> None:
        self.wait(lambda s: needle in s.text, repr(needle))

    def type(self, keys: str) -> None:
        self.child.send(keys)


def write_notes_project(folder: Path) -> Path:
    """A project folder with one 70-line notes file to search and read."""
    folder.mkdir()
    (folder / "notes.txt").write_text(
        "".join(f"note {i}: the build uses make and the tests use pytest\n" for i in range(70)))
    return folder


Spawn = Callable[..., Screen]


def spawner(project: Path, *, size_in_env: bool = False) -> Iterator[Spawn]:
    """Body of a ``spawn`` fixture: starts the command against a simulator, kills leftovers.

    ``size_in_env`` also sets COLUMNS and LINES, which pins the size rich sees (a test
    that resizes the terminal must leave them out).
    """
    children: list[pexpect.spawn] = []

    def start(sim: Simulator, *args: str, columns: int = 100, rows: int = 30) -> Screen:
        env = dict(os.environ)
        env.update({
            "ANTHROPIC_API_KEY": "test-key",
            "ANTHROPIC_BASE_URL": sim.anthropic_base_url,
            "MINI_CLAUDE_MODEL": "sim-model",
            "MINI_CLAUDE_CONTEXT_WINDOW": "12000",
            "MINI_CLAUDE_MAX_RETRIES": "0",
            "TERM": "xterm-256color",
        })
        if size_in_env:
            env.update({"COLUMNS": str(columns), "LINES": str(rows)})
        child = pexpect.spawn(COMMAND, list(args), cwd=str(project), env=env,
                              dimensions=(rows, columns))
        children.append(child)
        return Screen(child, columns, rows)

    yield start
    for child in children:
        if child.isalive():
            child.terminate(force=True)
