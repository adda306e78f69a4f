"""The real Claude Code CLI as a row: our script in its tools, its notices in our words."""

from __future__ import annotations

from pathlib import Path

import anthropic
import pytest

from mini_claude.bench.real_claude import (
    COMPACT_OPENING,
    REAL_CLAUDE,
    ClaudeCodePolicy,
    bundled_claude,
    real_auto_compact_window,
    result_in_our_words,
    run_real_claude,
    to_claude,
)
from mini_claude.bench.report import make_row
from mini_claude.bench.sessions import QUICK_SESSION
from mini_claude.bench.strategies import peer_candidates
from mini_claude.bench.suite import model_setting
from mini_claude.scenario.policy import paging_calls, saved_output
from mini_claude.scenario.script import Call, edit, grep, listing, read, shell
from mini_claude.scenario.workload import write_project
from mini_claude.settings import Settings
from mini_claude.simulator import SimClock, SimConversation, SimMessage, Simulator
from mini_claude.simulator.latency import Latency
from mini_claude.simulator.types import ToolResultPart, ToolUsePart


def test_our_calls_become_claude_codes_tools(tmp_path: Path) -> None:
    assert to_claude(read("pkg/a.py", offset=5, limit=10), tmp_path).input == {
        "file_path": str(tmp_path / "pkg/a.py"), "offset": 5, "limit": 10}
    assert to_claude(edit("pkg/a.py", "x", "y"), tmp_path).name == "Edit"
    assert to_claude(shell("bash scripts/lint.sh"), tmp_path).input == {
        "command": "bash scripts/lint.sh"}
    searched = to_claude(grep("dead lock", "logs"), tmp_path)
    assert searched.name == "Bash" and searched.input["command"] == "grep -rn 'dead lock' logs"
    assert to_claude(listing("pkg"), tmp_path).input["command"].startswith("find pkg ")
    with pytest.raises(ValueError):
        to_claude(Call("search_history", {"query": "x"}), tmp_path)


def _conv(call: Call, content: str) -> SimConversation:
    return SimConversation("anthropic", "m", "", [
        SimMessage("assistant", [ToolUsePart("t1", call.name, dict(call.input))]),
        SimMessage("user", [ToolResultPart("t1", content)])])


def test_a_persisted_output_is_paged_at_its_end_from_the_saved_file(tmp_path: Path) -> None:
    saved = tmp_path / "tool-results" / "b1.txt"
    saved.parent.mkdir()
    saved.write_text("".join(f"{n}\n" for n in range(1, 1_001)), encoding="utf-8")
    notice = (f"<persisted-output>\nOutput too large (223.5KB). Full output saved to: {saved}"
              "\n\nPreview (first 2KB):\n1\n2\n...\n</persisted-output>")
    call = shell("bash scripts/run_tests.sh")
    conv = _conv(call, result_in_our_words(notice, call, tmp_path))
    found = saved_output(conv.last_tool_results()[0], conv)
    assert found is not None and found.saved_path == str(saved) and found.lines == 1_000
    assert paging_calls(found)[0].input["offset"] == 851


def test_a_file_too_big_to_read_is_read_in_pages(tmp_path: Path) -> None:
    (tmp_path / "big.log").write_text("x\n" * 700, encoding="utf-8")
    refusal = ("File content (265.5KB) exceeds maximum allowed size (256KB). Use offset and "
               "limit parameters to read specific portions of the file.")
    call = read("big.log")
    conv = _conv(call, result_in_our_words(refusal, call, tmp_path))
    found = saved_output(conv.last_tool_results()[0], conv)
    assert found is not None and found.lines == 700
    assert [c.input["offset"] for c in paging_calls(found)] == [1, 351]


def test_the_auto_compact_window_is_set_only_below_the_models_window() -> None:
    assert real_auto_compact_window(200_000) is None
    assert real_auto_compact_window(100_000) == 100_000
    assert real_auto_compact_window(50_000) == 100_000


@pytest.mark.parametrize("window", [200_000, 100_000])
def test_the_model_row_runs_at_the_setting_the_real_cli_runs_with(window: int) -> None:
    """Beside the real CLI the model compacts where the CLI's own setting says: only where a
    request would not fit when the auto-compact window is unset, at 67K when it is 100K."""
    model = peer_candidates()["claude-code"][model_setting(window)]
    settings = model.configure(Settings(model="sim-sonnet", context_window=window))
    if real_auto_compact_window(window) is None:
        assert settings.autocompact_tokens > window
    else:
        assert settings.autocompact_tokens == pytest.approx(67_000, abs=50)


def test_the_clis_compaction_request_is_a_summary_held_as_late_as_one(tmp_path: Path) -> None:
    """The server itself records the CLI's compaction request as a summary (the one asked
    for, not the request after it), so it is answered as late as a summary and is never
    taken for the session's own call."""
    script = QUICK_SESSION.script(QUICK_SESSION.plan())
    clock = SimClock(start=0.0)
    with Simulator(None, clock=clock, latency=Latency(side_s=0.5, main_s=0.0)) as sim:
        sim.policy = ClaudeCodePolicy(script, tmp_path, clock, sim.counter)
        client = anthropic.Anthropic(api_key="k", base_url=sim.anthropic_base_url,
                                     max_retries=0)
        tools: list[anthropic.types.ToolParam] = [{
            "name": "Read", "description": "Read a file",
            "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}}]
        history: list[anthropic.types.MessageParam] = [
            {"role": "user", "content": script.turns[0].user},
            {"role": "assistant", "content": "Looking."}]
        compact = client.messages.create(
            model="sim-sonnet", max_tokens=4_000, tools=tools,
            messages=[*history, {"role": "user", "content": f"{COMPACT_OPENING}, please."}])
        client.messages.create(model="sim-sonnet", max_tokens=4_000, tools=tools,
                               messages=[*history, {"role": "user", "content": "go on"}])
        summary, after = sim.requests
    assert compact.content and summary.status == 200
    assert summary.is_summary_request and summary.is_side_request
    assert not after.is_summary_request
    assert summary.answered_at is not None and summary.answered_at - summary.received_at >= 0.5


def test_the_real_cli_plays_a_scripted_session_against_the_simulator(tmp_path: Path) -> None:
    """The installed CLI, over real HTTP: every turn answered, tools run, cost from the server."""
    binary = bundled_claude()
    assert binary is not None, "the agent SDK's bundled Claude Code CLI is not installed"
    plan = QUICK_SESSION.plan()
    script = QUICK_SESSION.script(plan)
    write_project(plan, tmp_path / "template")
    run = run_real_claude(binary, script, window=200_000, template=tmp_path / "template",
                          workdir=tmp_path / "run", auto_compact_window=None)
    row = make_row(run)
    assert run.strategy == REAL_CLAUDE and not run.turn_errors
    assert row.tool_calls >= script.tool_calls and row.overflowed == 0
    assert row.cost_usd > 0 and row.cache_read_share > 0.5
    assert row.retained + row.recovered == row.needed
