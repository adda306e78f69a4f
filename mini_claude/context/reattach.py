"""What the client itself writes back into the context after every summary.

A summary is only as good as the model that writes it. Some things must never
depend on it: the plan the model keeps, the skills it loaded, the index of what
the session has seen. Each of those is a source that renders its current state
as text; the rebuild puts that text, verbatim, into the boundary message after
the summary. Sources render from their own state (or from the whole history),
so what an earlier boundary carried is replaced, never nested.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeGuard

from mini_claude.conversation import Message, TextBlock

HEADER = "[Re-attached after compaction by the client: {title}]"


@dataclass(frozen=True, slots=True)
class Reattachment:
    """One block of the boundary: where it came from and its whole text."""

    source: str  # a short name: "ledger", "plan", "skill:<name>"
    title: str  # what the model reads in the header
    body: str

    @property
    def text(self) -> str:
        return f"{HEADER.format(title=self.title)}\n{self.body}"

    def block(self) -> TextBlock:
        return TextBlock(self.text)


class ReattachSource(Protocol):
    """Anything that must outlive every summary."""

    def reattachments(self, history: Sequence[Message]) -> list[Reattachment]:
        """What to re-attach now, given the whole history that is about to be compacted."""
        ...


def collect(sources: Iterable[ReattachSource], history: Sequence[Message]) -> list[Reattachment]:
    """Every source's blocks, in the order the sources were registered."""
    found: list[Reattachment] = []
    for source in sources:
        found.extend(source.reattachments(history))
    return found


def is_reattachment(block: object) -> TypeGuard[TextBlock]:
    """A boundary block written by a source (not the summary, user text or a file)."""
    return isinstance(block, TextBlock) and block.text.startswith(HEADER.split("{")[0])
