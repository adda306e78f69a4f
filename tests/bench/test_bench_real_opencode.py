"""The real opencode as a row: our script in its tools, its notices and its one-message
compaction request read back in ours, and the verdict that counts it."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import pytest

from mini_claude.bench import EXIT_FAILED, build_parser
from mini_claude.bench import main as bench_main
from mini_claude.bench.opencode_suite import (
    MODELLED_RIVAL,
    OPENCODE_SETTINGS,
    OPENCODE_WINDOWS,
    chosen_setting,
    verdict_lines,
    write_tuning,
)
from mini_claude.bench.real_opencode import (
    OPENCODE_ENV,
    REAL_OPENCODE,
    SUMMARY_OPENING,
    OpenCodePolicy,
    from_opencode,
    history_of,
    project_config,
    result_in_our_words,
    summary_request,
    to_opencode,
)
from mini_claude.bench.report import Row
from mini_claude.bench.sessions import QUICK_SESSION
from mini_claude.bench.suite import BenchOptions, opencode_jobs
from mini_claude.scenario.policy import paging_calls, saved_output
from mini_claude.scenario.script import Call, edit, grep, listing, read, shell
from mini_claude.simulator import SimClock, SimConversation, SimMessage, Simulator
from mini_claude.simulator.summary import asked_for
from mini_claude.simulator.types import TextPart, ToolResultPart, ToolUsePart
from tests.support.bench_rows import bench_row


def test_our_calls_become_opencodes_tools_with_absolute_paths(tmp_path: Path) -> None:
    assert to_opencode(read("pkg/a.py", offset=5, limit=10), tmp_path).input == {
        "filePath": str(tmp_path / "pkg/a.py"), "offset": 5, "limit": 10}
    changed = to_opencode(edit("pkg/a.py", "x", "y"), tmp_path)
    assert changed.name == "edit" and changed.input["oldString"] == "x"
    assert to_opencode(shell("bash scripts/lint.sh"), tmp_path).input == {
        "command": "bash scripts/lint.sh"}
    assert to_opencode(grep("dead lock", "logs"), tmp_path).input == {
        "pattern": "dead lock", "path": str(tmp_path / "logs")}
    assert to_opencode(listing("pkg"), tmp_path).name == "glob"
    with pytest.raises(ValueError):
        to_opencode(Call("search_history", {"query": "x"}), tmp_path)


def _conv(call: Call, content: str) -> SimConversation:
    return SimConversation("anthropic", "m", "", [
        SimMessage("assistant", [ToolUsePart("t1", call.name, dict(call.input))]),
        SimMessage("user", [ToolResultPart("t1", content)])])


def test_a_read_stopped_at_its_size_cap_is_read_on_in_pages(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text("".join(f"x{n}\n" for n in range(900)), encoding="utf-8")
    content = ("<path>big.py</path>\n<type>file</type>\n<content>\n1: x0\n\n(Output capped at "
               "50 KB. Showing lines 1-283. Use offset=284 to continue.)\n</content>")
    call = read("big.py")
    conv = _conv(call, result_in_our_words(content, call, tmp_path))
    found = saved_output(conv.last_tool_results()[0], conv)
    assert found is not None and (found.lines, found.first_unread) == (900, 284)
    assert [c.input["offset"] for c in paging_calls(found)] == [284, 634]


def test_a_command_output_saved_to_a_file_is_paged_at_its_end(tmp_path: Path) -> None:
    saved = tmp_path / "tool_1"
    saved.write_text("".join(f"{n}\n" for n in range(1, 1_001)), encoding="utf-8")
    content = f"...output truncated...\n\nFull output saved to: {saved}\n\n990\n1000\n"
    call = shell("bash scripts/run_tests.sh")
    conv = _conv(call, result_in_our_words(content, call, tmp_path))
    found = saved_output(conv.last_tool_results()[0], conv)
    assert found is not None and found.saved_path == str(saved) and found.lines == 1_000
    assert paging_calls(found)[0].input["offset"] == 851


CARRIED = """[User]: "Why do the totals fail?"

[Assistant]: Reading the module.
[Assistant tool call]: read({"filePath":"/p/src/totals.py"})
[Tool result]: 1: FACT-T1 totals round half up
[Assistant tool call]: bash({"command":"pytest -q"})
[Tool error]: exit 1: 3 failed

[Synthetic context]: ignored"""


def test_the_serialized_history_is_read_back_as_the_calls_it_stands_for() -> None:
    ours = {"read": Call("read_file", {"path": "src/totals.py"})}

    def call_for(name: str, args: object) -> Call:
        return ours.get(name, Call(name, args if isinstance(args, dict) else {}))

    history = history_of(CARRIED, call_for)
    assert [m.role for m in history] == ["user", "assistant", "user", "assistant", "user"]
    assert history[0].is_plain_user_message
    uses = [b for m in history for b in m.blocks if isinstance(b, ToolUsePart)]
    assert [(u.name, u.input) for u in uses] == [
        ("read_file", {"path": "src/totals.py"}), ("bash", {"command": "pytest -q"})]

    results = [b for m in history for b in m.blocks if isinstance(b, ToolResultPart)]
    assert [r.tool_use_id for r in results] == [u.id for u in uses]
    assert "FACT-T1" in results[0].content and results[1].is_error


def test_a_call_the_script_did_not_make_is_read_in_our_words() -> None:
    project = Path("/p")
    assert from_opencode("read", {"filePath": "/p/src/a.py"}, project) == Call(
        "read_file", {"path": "src/a.py"})
    assert from_opencode("bash", {"command": "ls"}, project) == Call("run_shell",
                                                                     {"command": "ls"})
    assert from_opencode("todowrite", {"todos": []}, project).name == "todowrite"


def _request(prior: str | None) -> str:
    parts = [f"{SUMMARY_OPENING}\n\n<conversation>\n{CARRIED}\n</conversation>"]
    if prior is not None:
        parts.append("Here is the summary of the conversation before the <conversation> above:"
                     f"\n\n<prior-summary>\n{prior}\n</prior-summary>")
    parts.append("Create a new anchored summary so another coding agent can continue the work."
                 "\n- Preserve exact file paths.")
    return "\n\n".join(parts)


def test_the_instructions_are_read_apart_from_the_history_they_carry() -> None:
    conv = SimConversation("anthropic", "m", "", [SimMessage("user", [TextPart(
        _request("## User requests\n- \"Ship the release\""))])])
    request = summary_request(conv, lambda name, args: from_opencode(name, args, Path("/p")))
    assert request.is_summary_request
    instruction = request.messages[-1].text
    assert "FACT-T1" not in instruction and "prior-summary" not in instruction
    assert "files" in asked_for(instruction).kinds
    assert "Ship the release" in request.messages[0].text  # the earlier summary, first


def test_the_compaction_request_is_answered_as_a_summary_over_the_wire(tmp_path: Path) -> None:
    """Through the real SDK: the server records opencode's request as a summary, and the
    summary keeps what the carried history and the earlier summary hold."""
    script = QUICK_SESSION.script(QUICK_SESSION.plan())
    clock = SimClock(start=0.0)
    with Simulator(None, clock=clock) as sim:
        sim.policy = OpenCodePolicy(script, tmp_path, clock, sim.counter)
        client = anthropic.Anthropic(api_key="k", base_url=sim.anthropic_base_url,
                                     max_retries=0)
        reply = client.messages.create(model="m", max_tokens=4_000, messages=[
            {"role": "user", "content": _request("## User requests\n- \"Ship the release\"")}])
        record, = sim.requests
    text = "".join(b.text for b in reply.content if b.type == "text")
    assert record.is_summary_request
    assert "Why do the totals fail?" in text and "Ship the release" in text
    assert "## Files read\n- /p/src/totals.py" in text and "pytest -q" in text


def test_the_project_config_points_only_at_the_simulator() -> None:
    config = project_config("http://127.0.0.1:9", 32_000, {"prune": True}, output=4_096)
    provider = config["provider"]["anthropic"]
    assert provider["options"]["baseURL"] == "http://127.0.0.1:9/v1"
    model, = provider["models"].values()
    assert model["limit"] == {"context": 32_000, "output": 4_096}
    assert config["compaction"] == {"prune": True} and config["share"] == "disabled"
    json.dumps(config)  # written as the project's opencode.json


def _options(*flags: str) -> BenchOptions:
    return BenchOptions.from_args(build_parser().parse_args(["--real-opencode", *flags]))


def test_settings_are_searched_on_the_tuning_sessions_only_where_they_matter() -> None:
    jobs = opencode_jobs(_options("--sessions", "tuning"))
    assert {j.strategy for j in jobs} == {REAL_OPENCODE}
    for window in OPENCODE_WINDOWS:
        tried = {j.variant for j in jobs if j.window == window}
        assert tried == {n for n, s in enumerate(OPENCODE_SETTINGS) if window in s.windows}


def test_held_out_sessions_play_the_chosen_setting_beside_the_model_and_ours() -> None:
    options = _options()
    jobs = opencode_jobs(options)
    assert len(jobs) == len(options.sessions) * len(OPENCODE_WINDOWS) * 3
    real = [j for j in jobs if j.strategy == REAL_OPENCODE]
    assert all(j.variant == chosen_setting(j.window) for j in real)
    assert {j.strategy for j in jobs} == {REAL_OPENCODE, MODELLED_RIVAL, "mini"}


def _by(cells: dict[str, tuple[float, int]]) -> dict[tuple[int, int, str], Row]:
    return {(0, 32_000, key): bench_row(cost, strategy=key, window=32_000, ours=key == "mini",
                                        overflowed=overflowed)
            for key, (cost, overflowed) in cells.items()}


def test_ours_is_judged_against_the_cheaper_of_opencode_and_the_model() -> None:
    lines, found = verdict_lines(_by({REAL_OPENCODE: (5.0, 2), MODELLED_RIVAL: (8.0, 0),
                                      "mini": (4.5, 0)}), 1)
    assert found[0]["ours_over_cheapest"] == [pytest.approx(0.9)]  # opencode, refusals and all
    assert "NOT MET" in lines[-1]
    lines, found = verdict_lines(_by({REAL_OPENCODE: (9.0, 0), MODELLED_RIVAL: (6.0, 1),
                                      "mini": (4.5, 0)}), 1)
    assert found[0]["ours_over_cheapest"] == [pytest.approx(0.5)]  # an overflowing model: out


def test_the_tuning_report_keeps_the_cheapest_setting_refusals_and_all(tmp_path: Path) -> None:
    rows = {(32_000, 0): [bench_row(7.1, window=32_000, overflowed=10)],
            (32_000, 2): [bench_row(6.6, window=32_000, overflowed=14)],
            (32_000, 1): [bench_row(5.0, window=32_000, lost=3)]}
    text = write_tuning(tmp_path, ["seed 7"], rows, 1.0, 1)
    assert f"- best at 32K: {OPENCODE_SETTINGS[2].title} (the cheapest meeting the bar" in text
    saved = json.loads((tmp_path / "real-opencode-tuning.json").read_text(encoding="utf-8"))
    assert len(saved["candidates"]) == 3


def test_a_missing_cli_is_said_in_one_line_before_any_run(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    monkeypatch.setenv(OPENCODE_ENV, str(tmp_path / "no-such-opencode"))
    assert bench_main(["--real-opencode", "--out", str(tmp_path / "out")]) == EXIT_FAILED
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"mini-claude bench: no opencode CLI at {tmp_path / 'no-such-opencode'} " \
                      f"(set by {OPENCODE_ENV})"
    assert not (tmp_path / "out").exists()
