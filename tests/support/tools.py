"""Helpers for the tool tests: a context rooted in a temp project, and a scripted approver."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from mini_claude.permissions.asking import (
    Approver,
    PermissionDecision,
    PermissionRequest,
    allow_all,
)
from mini_claude.settings import Settings
from mini_claude.tools.base import ToolContext

T = TypeVar("T")


def tool_context(
    root: Path, *, approve: Approver = allow_all, env: dict[str, str] | None = None,
    **settings: Any,
) -> ToolContext:
    """A context whose home is the per-test MINI_CLAUDE_HOME that conftest sets."""
    home = Path(os.environ["MINI_CLAUDE_HOME"])
    return ToolContext(root=root, settings=Settings(home=home, **settings), approve=approve,
                       env=env)


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


@dataclass
class ScriptedApprover:
    """Answers every request with the same decision and remembers what it was asked."""

    decision: PermissionDecision
    requests: list[PermissionRequest] = field(default_factory=list)

    async def __call__(self, request: PermissionRequest) -> PermissionDecision:
        self.requests.append(request)
        return self.decision


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll a condition; True as soon as it holds, False after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def process_alive(pid: int) -> bool:
    """A live process, not a zombie waiting for a parent that may never reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def group_members(pgid: int) -> list[int]:
    """Live processes whose process group is ``pgid``."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members

