"""Session notes as a value: what the notes say and which messages they describe."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SessionNotes:
    """Notes that describe the first ``covered`` messages of history epoch ``epoch``."""

    text: str
    epoch: int
    covered: int
    history_tokens: int  # estimated tokens of the whole history when the update was asked for
    started_at: float = 0.0  # the session clock when the update was asked for
    ready_at: float = 0.0  # when its reply was in (or, in the benchmark, would have been)
