"""The benchmark's pieces on their own: workload, script, policy, strategies, scoring."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from mini_claude.bench.report import judge, make_row
from mini_claude.bench.runner import RequestRecord, RunResult, _check_needs
from mini_claude.bench.strategies import (
    CODEX_BEST,
    LEARN_CLAUDE_CODE_THRESHOLD,
    STRATEGIES,
    claude_code_with,
    codex_best_for,
    codex_with,
    peer_candidates,
    strategy_named,
)
from mini_claude.context.placeholders import (
    budget_marker,
    cut_to_head_and_tail,
    persisted_notice,
    truncation_marker,
)
from mini_claude.conversation import ToolResultBlock
from mini_claude.scenario.policy import (
    PAGE_LINES,
    WHOLE_FILE_LINES,
    ScriptPolicy,
    paging_calls,
    saved_output,
)
from mini_claude.scenario.script import (
    FULL_TURNS,
    LONG_IDLE_SECONDS,
    MIN_NEED_DISTANCE,
    Call,
    Script,
    Step,
    Turn,
    build_script,
)
from mini_claude.scenario.workload import ProjectPlan, plan_project, write_project
from mini_claude.settings import Settings
from mini_claude.simulator import (
    RecordedRequest,
    SimConversation,
    SimMessage,
    TextPart,
    ToolResultPart,
    ToolUsePart,
)


@pytest.fixture(scope="module")
def plan() -> ProjectPlan:
    return plan_project(7)


@pytest.fixture(scope="module")
def project(plan: ProjectPlan, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("workload") / "project"
    write_project(plan, root)
    return root


@pytest.fixture(scope="module")
def script(plan: ProjectPlan) -> Script:
    return build_script(plan, turns=FULL_TURNS)


# ---- workload ------------------------------------------------------------------------


def test_same_seed_gives_the_same_bytes(plan: ProjectPlan, project: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    write_project(plan_project(7), again)
    files = sorted(p.relative_to(project) for p in project.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    for name in files:
        assert (project / name).read_bytes() == (again / name).read_bytes()
    other = plan_project(8)
    assert other.facts != plan.facts


def test_project_has_realistic_sizes(plan: ProjectPlan, project: Path) -> None:
    lines = [len((project / plan.module_path(m)).read_text().splitlines())
             for m in plan.module_lines]
    assert len(lines) >= 20
    assert min(lines) >= 50 and max(lines) >= 700
    for log in ("logs/app.log", "logs/worker.log", "logs/access.log"):
        assert (project / log).stat().st_size >= 100_000
    tests = subprocess.run(["bash", "scripts/run_tests.sh"], cwd=project, capture_output=True,
                           text=True, check=False)
    assert tests.returncode == 1
    assert len(tests.stdout) > 30_000 and "passed" in tests.stdout.splitlines()[-1]


def test_each_fact_is_planted_once(plan: ProjectPlan, project: Path) -> None:
    text = "\n".join(p.read_text(encoding="utf-8") for p in project.rglob("*") if p.is_file())
    for fact in plan.facts.values():
        assert text.count(fact.line) == 1, fact
    assert len(set(re.findall(r"FACT-[A-Z0-9]+: ", text))) == len(plan.facts)


# ---- the script --------------------------------------------------------------------


def _raw_output(call: Call, root: Path) -> str:
    """What the call's tool would print, computed without the agent."""
    if call.name == "read_file":
        return (root / str(call.input["path"])).read_text(encoding="utf-8")
    if call.name == "run_shell":
        done = subprocess.run(["bash", "-c", str(call.input["command"])], cwd=root,
                              capture_output=True, text=True, check=False)
        return done.stdout + done.stderr
    if call.name == "grep_search":
        pattern = re.compile(str(call.input["pattern"]))
        base = root / str(call.input.get("path", "."))
        files = [base] if base.is_file() else [p for p in base.rglob("*") if p.is_file()]
        return "\n".join(line for f in files for line in f.read_text().splitlines()
                         if pattern.search(line))
    return ""


def test_full_session_is_long_and_varied(script: Script) -> None:
    assert len(script.turns) == FULL_TURNS
    assert script.tool_calls >= 300
    names = {c.name for t in script.turns for s in t.steps for c in s.calls}
    assert names == {"read_file", "grep_search", "list_files", "run_shell", "edit_file"}
    paths = [str(c.input["path"]) for t in script.turns for s in t.steps for c in s.calls
             if c.name == "read_file"]
    assert len(paths) - len(set(paths)) >= 30  # plenty of re-reads
    assert script.long_idle_turns >= 5
    assert all(t.idle_before >= LONG_IDLE_SECONDS[0] for t in script.turns[6::6])
    assert script.needs >= 20


def test_needs_come_after_a_reveal_far_enough_back(script: Script) -> None:
    last_seen: dict[str, int] = {}
    for index, turn in enumerate(script.turns):
        for fact_id in turn.needs:
            assert fact_id in last_seen, fact_id
            assert index - last_seen[fact_id] >= MIN_NEED_DISTANCE
            assert f"FACT-{fact_id}" in turn.user
            assert script.facts[fact_id].line not in turn.user
        for fact_id in turn.reveals:
            last_seen[fact_id] = index


def test_declared_reveals_are_in_the_real_output(script: Script, project: Path,
                                                 tmp_path: Path) -> None:
    """Replays the script's calls on a copy of the project (edits included, in order)."""
    root = tmp_path / "replay"
    subprocess.run(["cp", "-r", str(project), str(root)], check=True)
    for turn in script.turns:
        outputs = []
        for step in turn.steps:
            for call in step.calls:
                if call.name == "edit_file":
                    path = root / str(call.input["path"])
                    text = path.read_text()
                    assert text.count(str(call.input["old"])) == 1
                    path.write_text(text.replace(str(call.input["old"]), str(call.input["new"])))
                else:
                    outputs.append(_raw_output(call, root))
        seen = "\n".join(outputs)
        for fact_id in turn.reveals:
            assert script.facts[fact_id].line in seen, (turn.user, fact_id)


# ---- the policy --------------------------------------------------------------------


def _conversation(path: str, content: str, **extra: int) -> SimConversation:
    use = ToolUsePart("toolu_1", "read_file", {"path": path, **extra})
    return SimConversation("anthropic", "sim", "", [
        SimMessage("user", [TextPart("go")]),
        SimMessage("assistant", [TextPart("reading"), use]),
        SimMessage("user", [ToolResultPart("toolu_1", content)]),
    ])


def test_a_saved_module_is_read_whole_in_pages() -> None:
    notice = persisted_notice("read_file", "/h/tool-results/s/1-read_file.txt", 40_000, 782,
                              "     1\timport os\n", 1)
    saved = saved_output(ToolResultPart("toolu_1", notice), _conversation("src/a.py", notice))
    assert saved is not None and saved.lines == 782
    calls = paging_calls(saved)
    assert [c.input["offset"] for c in calls] == [1, 1 + PAGE_LINES, 1 + 2 * PAGE_LINES]
    assert all(c.input["path"] == "src/a.py" and c.input["limit"] == PAGE_LINES for c in calls)


def test_a_long_saved_file_is_read_at_both_ends_and_command_output_at_its_end() -> None:
    lines = WHOLE_FILE_LINES + 553
    notice = persisted_notice("read_file", "/h/r.txt", 130_000, lines, "x\n", 1)
    saved = saved_output(ToolResultPart("toolu_1", notice), _conversation("logs/app.log", notice))
    assert saved is not None
    assert [c.input["offset"] for c in paging_calls(saved)] == [1, lines - PAGE_LINES + 1]
    shell = persisted_notice("run_shell", "/h/out.txt", 38_000, 656, "collected\n", 1)
    conv = SimConversation("anthropic", "sim", "", [
        SimMessage("user", [TextPart("go")]),
        SimMessage("assistant", [ToolUsePart("toolu_1", "run_shell", {"command": "make"})]),
        SimMessage("user", [ToolResultPart("toolu_1", shell)]),
    ])
    saved = saved_output(ToolResultPart("toolu_1", shell), conv)
    assert saved is not None
    (call,) = paging_calls(saved)
    assert call.input["path"] == "/h/out.txt" and call.input["offset"] + call.input["limit"] > 656


def test_a_whole_file_read_that_stopped_at_its_page_is_read_on_from_there() -> None:
    first = "     1\timport os\n(showing lines 1-412 of 782; call again with offset=413)"
    saved = saved_output(ToolResultPart("toolu_1", first), _conversation("src/a.py", first))
    assert saved is not None and saved.first_unread == 413
    assert [c.input["offset"] for c in paging_calls(saved)] == [413, 413 + PAGE_LINES]
    long = f"(showing lines 1-400 of {WHOLE_FILE_LINES + 553}; call again with offset=401)"
    saved = saved_output(ToolResultPart("toolu_1", long), _conversation("logs/app.log", long))
    assert saved is not None
    assert [c.input["offset"] for c in paging_calls(saved)] == [WHOLE_FILE_LINES + 553 - 349]
    whole = "     1\timport os\n     2\timport re"
    assert saved_output(ToolResultPart("toolu_1", whole), _conversation("src/a.py", whole)) is None


def _numbered(first: int, last: int) -> str:
    return "\n".join(f"{n:6}\tline {n} of the module" for n in range(first, last + 1))


@pytest.mark.parametrize("marker", [
    lambda n: budget_marker(n, "/h/tool-results/s/1-read_file.txt"),
    lambda n: truncation_marker(n, save_failed=False),
], ids=["budget, saved", "truncated, not saved"])
def test_a_file_read_cut_in_the_middle_is_read_where_its_line_numbers_jump(
        marker: Callable[[int], str]) -> None:
    whole = _numbered(1, 545)
    block = ToolResultBlock("toolu_1", whole, tool_name="read_file")
    cut = cut_to_head_and_tail(block, 6_000, marker)
    head_last = int(cut.split("\n[...")[0].strip().splitlines()[-1].split("\t")[0])
    tail_first = int(cut.split("...]\n\n")[1].splitlines()[0].split("\t")[0])
    saved = saved_output(ToolResultPart("toolu_1", cut), _conversation("src/a.py", cut))
    assert saved is not None and saved.cut == (head_last + 1, tail_first - 1)
    calls = paging_calls(saved)
    read_lines = {line for c in calls
                  for line in range(c.input["offset"], c.input["offset"] + c.input["limit"])}
    assert set(range(head_last + 1, tail_first)) <= read_lines
    assert all(c.input["path"] == "src/a.py" for c in calls)
    assert not read_lines & (set(range(1, head_last + 1)) | set(range(tail_first, 546)))


def test_a_cut_page_of_a_longer_read_is_read_in_the_gap_and_then_on() -> None:
    first = _numbered(1, 100) + "\n\n[... budget: 9,000 chars cut; full text at /h/r.txt ...]\n\n" \
        + _numbered(301, 412) + "\n(showing lines 1-412 of 782; call again with offset=413)"
    saved = saved_output(ToolResultPart("toolu_1", first), _conversation("src/a.py", first))
    assert saved is not None and saved.cut == (101, 300) and saved.first_unread == 413
    assert [(c.input["offset"], c.input["limit"]) for c in paging_calls(saved)] == [
        (101, 200), (413, PAGE_LINES), (413 + PAGE_LINES, PAGE_LINES)]


def test_a_long_file_read_whole_but_cut_in_the_middle_asks_for_nothing_past_its_end() -> None:
    lines = WHOLE_FILE_LINES + 200
    cut = _numbered(1, 100) + "\n\n[... budget: 9,000 chars cut; full text at /h/r.txt ...]\n\n" \
        + _numbered(lines - 99, lines)
    saved = saved_output(ToolResultPart("toolu_1", cut), _conversation("logs/app.log", cut))
    assert saved is not None and saved.cut == (101, lines - 100)
    assert paging_calls(saved) == []  # a long file is read at its start and end: both shown


def test_a_cut_command_output_is_not_read_again() -> None:
    text = "ok 1\n\n[... truncated: 9,000 chars cut ...]\n\nok 900"
    conv = SimConversation("anthropic", "sim", "", [
        SimMessage("user", [TextPart("go")]),
        SimMessage("assistant", [ToolUsePart("toolu_1", "run_shell", {"command": "make"})]),
        SimMessage("user", [ToolResultPart("toolu_1", text)]),
    ])
    assert saved_output(ToolResultPart("toolu_1", text), conv) is None


def test_a_page_is_never_paged_again() -> None:
    notice = persisted_notice("read_file", "/h/r.txt", 40_000, 900, "x\n", 1)
    conv = _conversation("src/a.py", notice, offset=1, limit=350)
    assert saved_output(ToolResultPart("toolu_1", notice), conv) is None


def test_script_policy_plays_steps_then_answers_and_reacts_to_saved_output() -> None:
    steps = (Step("one", (Call("read_file", {"path": "a.py"}),)),
             Step("two", (Call("list_files", {"path": "."}),)))
    script = Script((Turn("do it", steps, "all done"),), {})
    policy = ScriptPolicy(script, seed=3)
    policy.begin_turn(0)
    plain = SimConversation("anthropic", "sim", "", [SimMessage("user", [TextPart("do it")])])
    first = policy.respond(plain)
    assert first.text == "one" and first.tool_calls[0].input == {"path": "a.py"}
    assert first.tool_calls[0].id is not None and first.tool_calls[0].id.startswith("toolu_01")
    notice = persisted_notice("read_file", "/h/r.txt", 40_000, 500, "x\n", 1)
    paging = policy.respond(_conversation("a.py", notice))
    assert [c.input.get("offset") for c in paging.tool_calls] == [1]  # one page per step
    following = policy.respond(_conversation("a.py", notice))
    assert [c.input.get("offset") for c in following.tool_calls] == [351]
    assert policy.pages_read == 2
    assert policy.respond(_conversation("a.py", notice)).text == "two"  # handled once only
    assert policy.respond(plain).text == "all done"
    again = ScriptPolicy(script, seed=3)
    again.begin_turn(0)
    assert again.respond(plain).tool_calls[0].id == first.tool_calls[0].id


# ---- strategies --------------------------------------------------------------------


def _base(window: int) -> Settings:
    return Settings(model="sim-sonnet", context_window=window)


def test_strategies_are_only_settings() -> None:
    none = strategy_named("none").configure(_base(200_000))
    assert not none.auto_compact and none.snip_pct > 1 and none.budget_low_pct > 1
    assert none.persist_threshold_bytes > 10**9 and none.microcompact_idle_seconds > 10**8
    learn = strategy_named("learn").configure(_base(200_000))
    assert learn.autocompact_tokens == LEARN_CLAUDE_CODE_THRESHOLD
    assert learn.microcompact_idle_seconds == 0 and learn.keep_recent_results == 3
    assert learn.snip_pct > 1 and learn.auto_compact
    summary = strategy_named("summary").configure(_base(32_000))
    assert summary.autocompact_pct == 0.85 and summary.snip_pct > 1
    assert strategy_named("mini").configure(_base(32_000)) == _base(32_000)
    assert strategy_named("mini").ours


def test_claude_code_waits_for_the_window_unless_its_auto_compact_window_is_set() -> None:
    """As the real CLI does: unset, it compacts only when a request would not fit (it waits
    for the API's refusal); set, at its formula below that window."""
    reactive = claude_code_with(None)(_base(200_000))
    assert reactive.auto_compact and reactive.autocompact_tokens > reactive.window
    enforced = claude_code_with(100_000)(_base(200_000))
    assert enforced.autocompact_tokens == pytest.approx(100_000 - 20_000 - 13_000, abs=50)


def test_codex_keeps_10k_bytes_of_an_output_unless_its_token_limit_for_outputs_is_set() -> None:
    """Unset, Codex keeps 10K bytes of each output of a model other than its own; its
    tool_output_token_limit replaces that with 4 bytes a token, and the tuning tries it."""
    assert codex_with(50_000)(_base(200_000)).truncate_chars == 10_000
    assert codex_with(50_000, 8_000)(_base(200_000)).truncate_chars == 32_000
    assert codex_with(50_000, 8_000)(_base(32_000)).autocompact_tokens == pytest.approx(
        0.9 * 32_000, abs=50)
    kept = {s.configure(_base(200_000)).truncate_chars for s in peer_candidates()["codex"]}
    assert kept == {10_000, 20_000, 32_000, 48_000}


def test_the_codex_row_takes_the_setting_tuned_at_the_nearer_window() -> None:
    codex = next(s for s in STRATEGIES if s.key == "codex")
    large, small = CODEX_BEST[200_000], CODEX_BEST[32_000]
    assert codex_best_for(100_000) == large and codex_best_for(1_000_000) == large
    assert codex_best_for(40_000) == small
    assert codex.configure(_base(200_000)) == codex_with(*large)(_base(200_000))
    assert codex.configure(_base(32_000)) == codex_with(*small)(_base(32_000))


# ---- scoring ----------------------------------------------------------------------


def _record(body: object, *, status: int = 200, summary: bool = False) -> RecordedRequest:
    record = RecordedRequest("anthropic", "/v1/messages", {}, body, status=status)
    record.is_summary_request = summary
    return record


def test_needs_are_checked_on_the_first_answered_request_of_the_turn() -> None:
    facts = plan_project(7).facts
    first, second = sorted(facts)[:2]
    script = Script((Turn("read", (), "ok"), Turn(f"need FACT-{first} FACT-{second}", (), "ok",
                                                   needs=(first, second))), facts)
    line = facts[first].line
    records = [
        _record({"messages": [{"content": [{"type": "tool_result", "content": line}]}]}),
        _record({"messages": [{"content": line}]}, status=400),  # refused: never seen
        _record({"messages": [{"content": "summary " + facts[second].line}]}, summary=True),
        _record({"system": "s", "messages": [{"content": [{"type": "text", "text":
                                                               f"kept: {line}"}]}]}),
        _record({"messages": [{"content": facts[second].line}]}),
    ]
    checks = _check_needs(script, records, [0, 1])
    assert [(c.fact_id, c.retained, c.request_index) for c in checks] == [
        (first, True, 3), (second, False, 3)]


def _run(key: str, *, cost_tokens: int, overflow: bool = False, retained: int = 2,
         recovered: int = 0, ours: bool = False) -> RunResult:
    from mini_claude.bench.runner import NeedCheck

    run = RunResult(key, key, ours, 32_000, 24_000)
    run.requests = [
        RequestRecord(0, 0, 1_000, 200, False, 0, 0, cost_tokens, 10, 1_100, ()),
        RequestRecord(1, 1, 40_000 if overflow else 2_000, 400 if overflow else 200, False,
                      0, 1_000, 500, 10, 2_000, (),
                      "prompt is too long: 40000 tokens > 32000 maximum" if overflow else None),
    ]
    run.needs = [NeedCheck(1, "X", i < retained, 1, recovered=retained <= i < retained + recovered)
                 for i in range(2)]
    run.pipeline_seconds = [0.001, 0.003]
    return run


def test_row_figures_and_the_verdict() -> None:
    ours = make_row(_run("mini", cost_tokens=1_000, ours=True))
    assert ours.cost_usd == pytest.approx((1_500 * 3.75 + 1_000 * 0.30 + 20 * 15) / 1e6)
    assert ours.estimate_error_mean_pct == pytest.approx(5.0)
    assert ours.estimate_error_worst_pct == pytest.approx(10.0)
    assert ours.pipeline_ms_median == pytest.approx(2.0)
    assert ours.peak_utilization == pytest.approx(2_000 / 24_000)
    cheaper = make_row(_run("summary", cost_tokens=100))
    crashed = make_row(_run("none", cost_tokens=10, overflow=True))
    assert crashed.overflowed == 1 and crashed.cost_usd < ours.cost_usd
    verdict = judge([ours, cheaper, crashed], 32_000)
    assert verdict.ours_zero_overflow and not verdict.ours_cheapest and verdict.ours_retention_best
    assert not verdict.passed
    assert any("summary is cheaper" in note for note in verdict.notes)
    assert judge([ours, crashed], 32_000).passed  # an overflowing row does not count for cost


def test_a_recovered_fact_is_not_lost_but_a_lost_one_fails_the_bar() -> None:
    crashed = make_row(_run("none", cost_tokens=10, overflow=True))
    recovering = make_row(_run("mini", cost_tokens=1_000, retained=1, recovered=1, ours=True))
    assert (recovering.retained, recovering.recovered, recovering.lost) == (1, 1, 0)
    assert judge([recovering, crashed], 32_000).passed
    losing = make_row(_run("mini", cost_tokens=1_000, retained=1, ours=True))
    assert losing.lost == 1 and losing.lost_share == 0.5
    verdict = judge([losing, crashed], 32_000)
    # Fewest lost is judged against every row, an overflowing one included.
    assert not verdict.ours_retention_best and not verdict.ours_lost_within_limit
    assert any("none loses fewer facts" in note for note in verdict.notes)


def test_a_lost_fact_is_traced_to_the_edit_that_removed_it() -> None:
    from mini_claude.bench.report import loss_cause, loss_note
    from mini_claude.bench.runner import explain_losses

    facts = plan_project(7).facts
    kept_id, lost_id, unseen_id = sorted(facts)[:3]
    script = Script((Turn("read", (), "ok"),
                     Turn("need", (), "ok", needs=(kept_id, lost_id, unseen_id))), facts)

    def body(*ids: str) -> dict[str, object]:
        blocks = [{"type": "tool_result", "content": facts[i].line} for i in ids]
        return {"messages": [{"content": blocks}]}

    records = [_record(body(kept_id, lost_id)),
               _record(body(kept_id, lost_id), summary=True),  # summaries do not count
               _record(body(kept_id)),
               _record(body(kept_id))]
    joined = [RequestRecord(i, 0 if i < 3 else 1, 1, 200, i == 1, 0, 0, 0, 0, None, tiers)
              for i, tiers in enumerate([(), (), ("microcompact",), ()])]
    checks = explain_losses(_check_needs(script, records, [0, 3]), records, joined, script)
    causes = {c.fact_id: loss_cause(c) for c in checks}
    assert causes == {kept_id: "kept", lost_id: "microcompact", unseen_id: "never in context"}
    lost = next(c for c in checks if c.fact_id == lost_id)
    assert lost.last_seen == 0 and lost.lost_after == ("microcompact",)
    failed = _check_needs(script, [records[0], _record(body(), status=400)], [0, 1])
    assert {loss_cause(c) for c in failed} == {"turn failed"}
    run = RunResult("mini", "mini-claude", True, 32_000, 24_000)
    run.needs = checks
    assert loss_note(run) == ("mini-claude lost 2 of 3 needed facts (removed by: "
                              "1 microcompact, 1 never in context)")


def test_plot_is_skipped_with_a_note_without_matplotlib(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from mini_claude.bench.plot import MISSING, plot_runs

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes the import fail
    assert plot_runs([_run("mini", cost_tokens=1, ours=True)], tmp_path) == (None, MISSING)
    assert list(tmp_path.iterdir()) == []
