"""The main loop does not stand still at a compaction, measured over real HTTP.

The simulator answers summary and notes requests ``SIDE_S`` late and the loop's own calls
``MAIN_S`` late (time scaled down from a real service's 20 s and 1 s); every event is timed
as it arrives. A compaction that waits for a side request shows as a step ``SIDE_S`` longer
than normal; one that does not is a normal step.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_claude.simulator.latency import Latency
from tests.support.stall import measure

SIDE_S = 3.0
MAIN_S = 0.1
MARGIN_S = 1.0  # a loaded machine's jitter; well below the side latency
CALLS = {40_000: 80, 200_000: 70}


@pytest.mark.parametrize("window", sorted(CALLS))
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_no_compaction_waits_for_a_side_request(
    provider: str, window: int, tmp_path: Path
) -> None:
    run = measure(provider, window, Latency(SIDE_S, MAIN_S), CALLS[window], tmp_path)
    assert run.of_turn_finished(), run.line()
    assert run.statuses == {200}, run.line()
    assert run.peak_prompt_tokens <= window, run.line()
    stalls = run.stalls_with_kind()
    assert stalls, f"no compaction in the turn: {run.line()}"
    # A compaction from notes that arrived (or the cheap tiers) is a normal step. One that
    # falls back to a summary call waits for that call alone, never for notes on their way
    # first (the old wait was both); at most one such fallback in the turn.
    for stall, summary in stalls:
        assert stall <= (SIDE_S if summary else 0.0) + MAIN_S + MARGIN_S, run.line()
    assert sum(summary for _, summary in stalls) <= 1, run.line()
    # Every notes request is used by a compaction but the one the turn ended on, which lands
    # while the user reads the answer and is the notes the next compaction takes, and one a
    # fallback summary overtook on its way (on a loaded machine an update can land a step
    # too late; the summary then replaced the history it describes). None is thrown away
    # otherwise (the full-length figures are in `make wait-bench`).
    overtaken = run.notes_overtaken()
    assert overtaken <= sum(not c.from_notes for c in run.compactions()), run.line()
    assert run.notes_requests - run.notes_used() <= 1 + overtaken, run.line()
    assert run.notes_thrown_away() <= overtaken, run.line()
