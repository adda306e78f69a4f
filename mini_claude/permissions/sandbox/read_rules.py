"""Deny rules on reading (``Read(./secrets/**)``, ``Read(~/private)``) become paths a sandboxed
command cannot read, as Claude Code merges them into ``sandbox.filesystem.denyRead``:
otherwise ``cat secrets/key`` would read what the Read tool may not.

bubblewrap hides paths, not patterns: a rule naming a path (or everything under a folder,
``folder/**``) hides that path; any other pattern hides what matches it when the command
starts (at most ``GLOB_LIMIT`` matches; a file made later by the same command is not).
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from mini_claude.permissions.rules import Rule
from mini_claude.tool_kinds import known_tools

READ_NAME = "Read"  # Claude Code's name: our tools that answer to it are the readers
GLOB_LIMIT = 200
GLOB_CHARS = "*?["


def read_deny_paths(deny: tuple[Rule, ...]) -> tuple[Path, ...]:
    """The existing paths the read deny rules name."""
    readers = known_tools().called(READ_NAME)
    found: dict[Path, None] = {}
    for rule in deny:
        if rule.kind != "path" or rule.pattern is None or rule.base is None:
            continue
        if not any(rule.applies_to(name) for name in readers):
            continue
        for path in _paths(rule.pattern, rule.base):
            found.setdefault(path, None)
    return tuple(found)


def _paths(pattern: str, base: Path) -> list[Path]:
    anchored = pattern.startswith("/")
    body = pattern.lstrip("/").rstrip("/")
    for suffix in ("/**", "/*"):
        if body.endswith(suffix) and not any(c in body[:-len(suffix)] for c in GLOB_CHARS):
            body = body[:-len(suffix)]
            break
    if not body:
        return [base]
    if anchored and not any(c in body for c in GLOB_CHARS):
        path = base / body
        return [path] if os.path.lexists(path) else []
    glob = body if anchored else f"**/{body}"  # a bare name matches at any depth
    try:
        return list(itertools.islice(base.glob(glob), GLOB_LIMIT))
    except (OSError, ValueError):
        return []
