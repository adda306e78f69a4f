"""Run as a process: rewind a saved session to a prompt and SIGKILL itself at a chosen step.

    python -m tests.support.rewind_kill HOME PROJECT SESSION PROMPT STEP N

STEP is ``stage`` (writing the new contents beside the files, before the commit) or
``place`` (putting them in place, after it); the process kills itself just before
the Nth such step. ``none`` lets the rewind finish.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

from mini_claude.checkpoints import restore
from mini_claude.permissions.asking import allow_all
from mini_claude.providers import create_provider
from mini_claude.session.rewind import Rewinder
from mini_claude.session.wiring import Session
from mini_claude.settings import Settings


def kill_before(step: str, nth: int) -> None:
    original = getattr(restore, f"_{step}")
    calls = 0

    def dying(*args: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == nth:
            os.kill(os.getpid(), signal.SIGKILL)
        original(*args)

    setattr(restore, f"_{step}", dying)


def main(home: str, project: str, session_id: str, prompt: str, step: str, nth: str) -> int:
    settings = Settings(provider="anthropic", model="sim-model", home=Path(home),
                        api_keys={"anthropic": "sk-test-kill"},
                        base_urls={"anthropic": "http://127.0.0.1:9"})
    session = Session(settings, Path(project), create_provider(settings), allow_all)
    agent = session.resume(session_id)
    rewinder = Rewinder(agent, session.checkpointer)
    point = next(p for p in rewinder.points() if p.text.startswith(prompt))
    if step != "none":
        kill_before(step, int(nth))
    rewinder.rewind(point, code=True, conversation=True)
    agent.transcript.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:]))
