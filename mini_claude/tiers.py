"""One vocabulary for the context tiers: each tier's name, number, verb and noun.

The tier reports, the REPL, the headless output and the benchmark all read this
table, so a new tier is one module (under ``context/``) and one row here.
Numbers follow the order of the pipeline: 0 at admission (each result as it
enters), 1-3 the cheap tiers before every call, 4 the summary. The steps that
run beside tier 3 (clear-thinking before every call; relief and fold when one
turn outgrows the window) carry its number.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TierRow:
    name: str  # as reports, events, transcripts and the benchmark name it
    number: int
    verb: str  # what it did to what it counts: "cleared"
    noun: str = "result"  # what it counts, one of them
    plural: str = ""  # when not noun + "s"
    cost_row: bool = False  # a row of the benchmark's cost-of-history-edits table

    def counted(self, count: int) -> str:
        """``1 result``, ``3 thinking blocks``."""
        noun = self.noun if count == 1 else (self.plural or self.noun + "s")
        return f"{count} {noun}"


TIERS: dict[str, TierRow] = {
    row.name: row
    for row in (
        TierRow("persist", 0, "saved"),
        TierRow("truncate", 0, "cut"),
        TierRow("budget", 1, "trimmed", cost_row=True),
        TierRow("snip", 2, "cleared", cost_row=True),
        TierRow("microcompact", 3, "cleared", cost_row=True),
        TierRow("clear_thinking", 3, "dropped", "thinking block"),
        # Relief is microcompact's clearing run under pressure inside a turn, before a
        # summary that would come too soon; its reports count as microcompact's.
        TierRow("relief", 3, "cleared"),
        TierRow("fold", 3, "folded", "old call"),
        TierRow("compact", 4, "summarized", "message", cost_row=True),
    )
}
UNKNOWN = TierRow("?", -1, "edited")


def tier_row(name: str) -> TierRow:
    """The row of a tier; an unknown name still reads as "edited N results"."""
    return TIERS.get(name, UNKNOWN)


def cost_rows() -> list[str]:
    """The tiers whose history edits the benchmark prices, in pipeline order."""
    return [row.name for row in TIERS.values() if row.cost_row]


def at_admission() -> list[str]:
    return [row.name for row in TIERS.values() if row.number == 0]
