"""The real-CLI comparison against a late server: notes beside the loop, all of it paid for."""

from __future__ import annotations

import asyncio
import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from mini_claude.bench import main
from mini_claude.bench.report import make_row
from mini_claude.bench.runner import run_strategy
from mini_claude.bench.sessions import QUICK_SESSION
from mini_claude.bench.strategies import strategy_named
from mini_claude.scenario.workload import write_project
from mini_claude.simulator.latency import Latency

# Small enough that the quick session makes notes updates at all.
NOTES_WINDOW = 20_000


def test_notes_run_beside_the_loop_and_are_in_the_cost(tmp_path: Path) -> None:
    """Against a server answering notes a second late, mini-claude's loop keeps sending while
    an update is on its way; every notes request the server answered is priced in the row;
    and the script's idle gaps (minutes of simulated time) are not slept."""
    plan = QUICK_SESSION.plan()
    script = QUICK_SESSION.script(plan)
    write_project(plan, tmp_path / "template")
    run = asyncio.run(run_strategy(strategy_named("mini"), script, window=NOTES_WINDOW,
                                   template=tmp_path / "template", workdir=tmp_path / "run",
                                   latency=Latency(side_s=1.0, main_s=0.0)))
    row = make_row(run)
    notes = [r for r in run.requests if r.is_notes and r.answered]
    assert not run.turn_errors and row.overflowed == 0
    assert notes and row.notes_updates == len(notes)
    assert run.calls_during_notes > 0
    assert row.cost_usd == pytest.approx(sum(r.cost for r in run.requests if r.answered))
    assert sum(r.cost for r in notes) > 0
    assert run.wall_seconds < sum(turn.idle_before for turn in script.turns)


def test_without_latency_the_loop_waits_for_each_notes_update(tmp_path: Path) -> None:
    """The normal run keeps one order of requests: nothing is sent while notes are made."""
    plan = QUICK_SESSION.plan()
    script = QUICK_SESSION.script(plan)
    write_project(plan, tmp_path / "template")
    run = asyncio.run(run_strategy(strategy_named("mini"), script, window=NOTES_WINDOW,
                                   template=tmp_path / "template", workdir=tmp_path / "run"))
    assert make_row(run).notes_updates > 0 and run.calls_during_notes == 0


def test_the_late_run_writes_its_own_report_without_the_model(tmp_path: Path) -> None:
    """`--real-claude --latency`: the real CLI and mini-claude only, at both windows, in
    real-claude-late.md and .json; the normal report is left alone."""
    out = tmp_path / "report"
    out.mkdir()
    (out / "real-claude.md").write_text("kept\n", encoding="utf-8")
    with redirect_stdout(io.StringIO()):
        code = main(["--real-claude", "--latency", "0.3,0", "--seed", "7", "--turns", "2",
                     "--out", str(out), "--jobs", "2"])
    assert code == 0
    assert (out / "real-claude.md").read_text(encoding="utf-8") == "kept\n"
    text = (out / "real-claude-late.md").read_text(encoding="utf-8")
    assert "0.3 s late" in text and "| model of it |" not in text and "calls during" in text
    data = json.loads((out / "real-claude-late.json").read_text(encoding="utf-8"))
    assert data["latency"] == {"side_s": 0.3, "main_s": 0.0}
    assert sorted((r["window"], r["row"]) for r in data["rows"]) == [
        (100_000, "mini-claude"), (100_000, "real CLI"),
        (200_000, "mini-claude"), (200_000, "real CLI")]
    assert all(r["cost_usd"] > 0 and r["turn_errors"] == 0 for r in data["rows"])
    assert [r["window"] for r in data["ratios"]] == [200_000, 100_000]


@pytest.mark.parametrize(("argv", "message"), [
    (["--latency", "20,1"], "--latency goes with --real-claude"),
    (["--real-claude", "--latency", "soon"], "--latency is 'side,main' in seconds"),
    (["--real-claude", "--latency=-1,0"], "0 or more"),
])
def test_a_bad_latency_is_a_one_line_error(argv: list[str], message: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "out").exists()
