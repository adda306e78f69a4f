"""Shared types of the context pipeline: where cleared text goes."""

from __future__ import annotations

from typing import Protocol


class ResultStore(Protocol):
    """Writes full tool output to disk so that nothing cleared is lost."""

    def save(self, tool_name: str, content: str) -> str | None:
        """Write ``content`` and return its path, or None when the disk refused."""
        ...

