"""The server's cache diagnostics, each miss tied to the edit of ours that caused it.

The pipeline is built to keep the prompt cache warm; this checks the claim
against the server. Every history edit (a tier clearing or trimming results,
a compaction) is noted as it happens; when the next reply says the cached
prefix of the previous request was not reused, the miss is charged to the
edits made in between, or to nothing of ours.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mini_claude.protocol import CacheMiss
from mini_claude.text import format_tokens

# Reasons that are a diagnosis; the others say the server could not compare.
DIAGNOSED = {"messages_changed", "system_changed", "tools_changed", "model_changed"}
COMPACTION = "compaction"


@dataclass(frozen=True, slots=True)
class RecordedMiss:
    reason: str
    missed_tokens: int
    after: tuple[str, ...]  # our edits since the previous request, oldest first

    @property
    def cause(self) -> str:
        if any(edit.startswith(COMPACTION) for edit in self.after):
            return "compaction"
        return "history edit" if self.after else "unexplained"


@dataclass
class CacheMissLog:
    misses: list[RecordedMiss] = field(default_factory=list)
    diagnosed_replies: int = 0  # replies that came back from a request with diagnostics
    _edits: list[str] = field(default_factory=list)

    def note_edit(self, what: str) -> None:
        """A change to history the next request will carry (a tier name, ``compaction (auto)``)."""
        self._edits.append(what)

    def observe(self, miss: CacheMiss | None, *, diagnosed: bool) -> RecordedMiss | None:
        """One reply's diagnostics; returns the miss worth recording, if any."""
        edits, self._edits = tuple(self._edits), []
        if diagnosed:
            self.diagnosed_replies += 1
        if miss is None or miss.reason not in DIAGNOSED:
            return None
        recorded = RecordedMiss(miss.reason, miss.missed_tokens, edits)
        self.misses.append(recorded)
        return recorded

    def summary(self) -> str:
        """E.g. ``3 cache misses: 2 after history edits, 1 after a compaction, 41.0k tokens
        re-written``."""
        if not self.misses:
            if not self.diagnosed_replies:
                return "cache misses: the server sent no cache diagnostics"
            return f"0 cache misses in {self.diagnosed_replies} diagnosed replies"
        causes = [m.cause for m in self.misses]
        parts = [
            f"{causes.count('history edit')} after history edits",
            f"{causes.count('compaction')} after compactions",
            f"{causes.count('unexplained')} unexplained",
        ]
        shown = [p for p in parts if not p.startswith("0 ")]
        tokens = format_tokens(sum(m.missed_tokens for m in self.misses))
        noun = "miss" if len(self.misses) == 1 else "misses"
        return f"{len(self.misses)} cache {noun}: {', '.join(shown)}, {tokens} tokens re-written"
