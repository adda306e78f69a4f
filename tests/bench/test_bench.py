"""`mini-claude bench --quick` end to end: the real agent, the real SDK, the simulator."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from mini_claude.bench import main
from mini_claude.bench.report import COLUMNS
from mini_claude.bench.startup import measure as measure_startup

ROW_FIELDS = {
    "requests", "summary_requests", "overflowed", "peak_utilization", "input_tokens",
    "cache_read_share", "cache_write_tokens", "output_tokens", "cost_usd", "compactions",
    "retained", "needed", "retention", "recovered", "lost", "recovery_calls",
    "recovery_cost_usd", "estimate_error_mean_pct", "estimate_error_worst_pct",
    "pipeline_ms_median", "pipeline_ms_worst",
}


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path, str]:
    """One quick run shared by the tests below; every run keeps its files in a temp folder."""
    out = tmp_path_factory.mktemp("bench") / "report"
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        code = main(["--quick", "--windows", "32000", "--out", str(out), "--no-startup",
                     "--jobs", "4"])
    return code, out, buffer.getvalue()


def test_quick_run_writes_the_report_files(quick_report: tuple[int, Path, str]) -> None:
    code, out, stdout = quick_report
    assert code == 0
    report = (out / "report.md").read_text(encoding="utf-8")
    for _, title in COLUMNS:
        assert title in report
        assert title in stdout
    assert (out / "context.png").stat().st_size > 10_000
    assert "## Pipeline time against history length" in report
    assert "| 5,000 |" in report


def test_quick_run_has_a_complete_row_per_strategy(quick_report: tuple[int, Path, str]) -> None:
    _, out, _ = quick_report
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    rows = {row["strategy"]: row for row in results["rows"]}
    assert set(rows) == {"none", "learn", "summary", "claude-code", "codex", "server",
                         "mini"}
    for row in rows.values():
        assert set(row) >= ROW_FIELDS
        assert row["window"] == 32_000
        assert row["needed"] > 0
        assert row["input_tokens"] > 0 or row["strategy"] == "none"
    ours = rows["mini"]
    assert ours["overflowed"] == 0
    assert ours["compactions"] >= 1
    assert ours["cost_usd"] > 0
    assert 0 < ours["cache_read_share"] < 1
    # The history only grows without compaction: the small window must overflow.
    assert rows["none"]["overflowed"] > 0
    assert rows["none"]["peak_utilization"] > 1


def test_retention_is_checked_on_recorded_requests(quick_report: tuple[int, Path, str]) -> None:
    _, out, _ = quick_report
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    for run in results["runs"]:
        by_index = {r["index"]: r for r in run["requests"]}
        for need in run["needs"]:
            if need["request_index"] is None:
                assert not need["retained"]
                continue
            request = by_index[need["request_index"]]
            assert request["status"] == 200 and not request["is_summary"]
            assert request["turn"] == need["turn"]
    none_run = next(r for r in results["runs"] if r["strategy"] == "none")
    assert not all(n["retained"] for n in none_run["needs"])


def test_every_answered_request_is_priced_from_its_usage(
    quick_report: tuple[int, Path, str],
) -> None:
    _, out, _ = quick_report
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    for run in results["runs"]:
        row = next(r for r in results["rows"] if r["strategy"] == run["strategy"])
        answered = [r for r in run["requests"] if r["status"] == 200]
        dollars = sum(
            (r["input_tokens"] * 3 + r["cache_write_tokens"] * 3.75
             + r["cache_read_tokens"] * 0.30 + r["output_tokens"] * 15) / 1e6
            for r in answered
        )
        assert row["cost_usd"] == pytest.approx(dollars)
        assert row["input_tokens"] == sum(r["prompt_tokens"] for r in answered)


def test_unknown_strategy_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["--strategies", "mini,bogus", "--out", str(tmp_path)])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bogus" in err
    assert not (tmp_path / "report.md").exists()


def test_bad_window_is_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--windows", "32k,tiny"])
    assert exit_info.value.code == 2
    assert "'tiny' is not a window size" in capsys.readouterr().err


def test_startup_reaches_the_real_repl_prompt() -> None:
    times = measure_startup(1)
    assert times.note == ""
    assert len(times.version_ms) == 1 and times.version_ms[0] > 0
    assert len(times.prompt_ms) == 1 and times.prompt_ms[0] > 0


def test_quick_run_adds_ours_with_poor_summaries(quick_report: tuple[int, Path, str]) -> None:
    _, out, stdout = quick_report
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## Poor summaries" in report and "## Poor summaries" in stdout
    rows = [line for line in report.split("## Poor summaries", 1)[1].splitlines()
            if line.startswith(("| fair | 32K", "| poor | 32K"))]
    assert [row.split(" | ")[0] for row in rows] == ["| fair", "| poor"]
    assert rows[1].rstrip(" |").endswith("%")  # the cost beside the fair run's
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    [session] = results["poor_summary"]
    [poor] = session["rows"]
    assert poor["window"] == 32_000 and poor["needed"] > 0
    assert poor["retained"] + poor["recovered"] <= poor["needed"]


def test_quick_run_reports_the_wait_and_the_goals(quick_report: tuple[int, Path, str]) -> None:
    _, out, stdout = quick_report
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    rows = {row["strategy"]: row for row in results["rows"]}
    # A peer's every compaction is a summary call, so its user waits; ours serves some from
    # session notes, and the peers make no notes requests at all.
    assert rows["claude-code"]["wait_total_s"] > 0 and rows["claude-code"]["notes_updates"] == 0
    assert rows["mini"]["notes_updates"] > 0
    assert "32K cost goal:" in stdout and "32K wait goal:" in stdout
    assert "median" in stdout and "worst" in stdout
