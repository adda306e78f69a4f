"""One tier vocabulary: the reports, the REPL line, the headless schema and the benchmark
all speak from the same table."""

from __future__ import annotations

from mini_claude.bench.report import HISTORY_EDITING_TIERS, LOSS_CAUSES
from mini_claude.protocol import TIERS, TierReport, tier_row
from mini_claude.ui.render import tier_summary
from tests.support.printing import SCHEMA


def test_every_step_has_a_row_with_a_number_in_pipeline_order() -> None:
    for name in ("persist", "truncate", "budget", "snip", "microcompact", "clear_thinking",
                 "relief", "fold", "compact"):
        assert name in TIERS
    numbers = [row.number for row in TIERS.values()]
    assert numbers == sorted(numbers)
    assert tier_row("persist").number == 0 and tier_row("compact").number == 4


def test_a_report_and_the_repl_line_use_the_row_verb_and_noun() -> None:
    fold = TierReport("fold", 3, 900, 220, "old calls with cleared results folded")
    assert fold.describe().startswith("fold: 3 old calls folded, 220 tokens freed")
    thinking = TierReport("clear_thinking", 1, 80, 20)
    assert thinking.describe() == "clear_thinking: 1 thinking block dropped, 20 tokens freed"
    line = tier_summary([fold, thinking, TierReport("snip", 2, 10, 5)])
    assert line.startswith("context: fold folded 3 old calls, clear_thinking dropped 1 "
                           "thinking block, snip cleared 2 results;")
    assert TierReport("unknown", 2, 1, 1).describe().startswith("unknown: 2 results edited")


def test_the_headless_schema_accepts_exactly_the_tiers_of_the_table() -> None:
    tier_fired = SCHEMA["$defs"]["tier_fired"]["properties"]["tier"]["enum"]
    assert tier_fired == list(TIERS)


def test_the_benchmark_prices_the_history_edits_the_table_marks() -> None:
    assert HISTORY_EDITING_TIERS == ("budget", "snip", "microcompact", "compact")
    assert LOSS_CAUSES == ("compact", "microcompact", "snip", "budget")
