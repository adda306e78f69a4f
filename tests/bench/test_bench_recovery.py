"""Reading forgotten facts back through a pointer, and runs that repeat cell for cell."""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from pathlib import Path

import pytest

from mini_claude.bench.report import make_row
from mini_claude.bench.runner import registry_for, run_strategy
from mini_claude.bench.strategies import strategy_named
from mini_claude.scenario.policy import PAGE_LINES, WHOLE_FILE_LINES, ScriptPolicy
from mini_claude.scenario.script import (
    Script,
    Step,
    Turn,
    build_script,
    question_calls,
    read,
    recovery_calls,
)
from mini_claude.scenario.workload import (
    LINT_COMMAND,
    LOG_KEYWORD,
    ProjectPlan,
    plan_project,
    write_project,
)
from mini_claude.settings import Settings
from mini_claude.simulator import (
    SimConversation,
    SimMessage,
    TextPart,
    ToolResultPart,
    ToolUsePart,
)

TIMING_FIELDS = {"pipeline_ms_median", "pipeline_ms_worst"}


@pytest.fixture(scope="module")
def plan() -> ProjectPlan:
    return plan_project(7)


def needing_script(plan: ProjectPlan, fact_id: str) -> Script:
    step = Step("Looking at the layout.", (read("README.md"),))
    question = f"What did FACT-{fact_id} in {plan.facts[fact_id].where} say?"
    return Script((Turn("start", (step,), "ok"), Turn(question, (step,), "done",
                                                      needs=(fact_id,))),
                  plan.facts, recovery_calls(plan), question_calls(plan))


def request(script: Script, *context: str) -> SimConversation:
    """The second turn's first request: earlier context, then the question."""
    messages = [SimMessage("user", [TextPart(text)]) if i % 2 == 0 else
                SimMessage("assistant", [TextPart(text)]) for i, text in enumerate(context)]
    messages.append(SimMessage("user", [TextPart(script.turns[1].user)]))
    return SimConversation("anthropic", "sim", "system", messages, request_index=5)


def first_reply(script: Script, conv: SimConversation) -> tuple[ScriptPolicy, list[str]]:
    policy = ScriptPolicy(script)
    policy.begin_turn(1)
    reply = policy.respond(conv)
    return policy, [f"{c.name} {sorted(c.input.items())}" for c in reply.tool_calls]


def module_fact(plan: ProjectPlan) -> tuple[str, str]:
    module, fact = next(iter(plan.module_facts.items()))
    return fact.id, plan.module_path(module)


def test_a_missing_fact_with_its_path_in_context_is_read_back(plan: ProjectPlan) -> None:
    fact_id, path = module_fact(plan)
    script = needing_script(plan, fact_id)
    conv = request(script, f"[compacted]\n## Files read\n- {path}", "ok")
    policy, calls = first_reply(script, conv)
    assert calls == [f"read_file {[('path', path)]}"]
    assert [(r.turn, r.fact_ids, r.request_index) for r in policy.recoveries] == [
        (1, (fact_id,), 5)]
    assert len(policy.recovery_ids) == 1
    # The next request carries the file; the model goes on with the turn's own step.
    assert policy.respond(conv).tool_calls[0].input == {"path": "README.md"}


def test_a_question_that_names_the_file_is_pointer_enough(plan: ProjectPlan) -> None:
    fact_id, path = module_fact(plan)
    script = needing_script(plan, fact_id)
    assert path in script.turns[1].user  # the user names the file, nothing else does
    policy, calls = first_reply(script, request(script, "[compacted]\n## User requests\n- hi"))
    assert calls == [f"read_file {[('path', path)]}"]
    assert [r.fact_ids for r in policy.recoveries] == [(fact_id,)]


def test_a_question_that_names_a_log_search_runs_that_search(plan: ProjectPlan) -> None:
    fact = plan.keyword_facts[0]
    script = needing_script(plan, fact.id)
    assert "logs/app.log" in script.turns[1].user
    _, calls = first_reply(script, request(script, "[compacted]\n## User requests\n- hi"))
    assert calls == [f"grep_search {[('path', 'logs/app.log'), ('pattern', LOG_KEYWORD)]}"]


def test_a_question_that_only_names_a_report_needs_a_pointer_in_context(
        plan: ProjectPlan) -> None:
    fact = plan.command_facts[LINT_COMMAND]
    script = needing_script(plan, fact.id)
    assert fact.where in script.turns[1].user and LINT_COMMAND not in script.turns[1].user
    policy, calls = first_reply(script, request(script, "[compacted]\n## User requests\n- hi"))
    assert calls == ["read_file [('path', 'README.md')]"]  # nothing says which command: lost
    assert policy.recoveries == [] and policy.recovery_ids == set()


def test_a_fact_still_in_context_needs_no_call(plan: ProjectPlan) -> None:
    fact_id, path = module_fact(plan)
    script = needing_script(plan, fact_id)
    stated = f"Earlier I found FACT-{fact_id} was {plan.facts[fact_id].value}."
    policy, calls = first_reply(script, request(script, f"read {path}", stated))
    assert calls == ["read_file [('path', 'README.md')]"]
    assert policy.recoveries == []


def test_a_command_fact_is_recovered_by_running_the_command_again(plan: ProjectPlan) -> None:
    command, fact = next(iter(plan.command_facts.items()))
    script = needing_script(plan, fact.id)
    placeholder = f"[cleared: run_shell `{command}`, 300 lines; full text at /tmp/x.txt]"
    _, calls = first_reply(script, request(script, "go", placeholder))
    assert calls == [f"run_shell {[('command', command)]}"]


def run_once(plan: ProjectPlan, script: Script, template: Path, workdir: Path) -> dict[str, object]:
    run = asyncio.run(run_strategy(strategy_named("mini"), script, window=32_000,
                                   template=template, workdir=workdir))
    row = asdict(make_row(run))
    return {k: v for k, v in row.items() if k not in TIMING_FIELDS}


def test_two_runs_give_the_same_row_cell_for_cell(plan: ProjectPlan, tmp_path: Path) -> None:
    script = build_script(plan, turns=6)
    write_project(plan, tmp_path / "template")
    first = run_once(plan, script, tmp_path / "template", tmp_path / "run")
    second = run_once(plan, script, tmp_path / "template", tmp_path / "run")
    assert first == second
    assert first["requests"] and first["needed"]


def test_the_summarizer_mode_is_a_bench_switch() -> None:
    from mini_claude.bench import build_parser
    from mini_claude.bench.suite import BenchOptions

    assert BenchOptions.from_args(build_parser().parse_args([])).summarizer == "realistic"
    poor = BenchOptions.from_args(build_parser().parse_args(["--summarizer", "poor"]))
    assert poor.summarizer == "poor"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--summarizer", "perfect"])


def test_with_no_pointer_left_the_model_searches_its_history_when_it_can(
    plan: ProjectPlan,
) -> None:
    fact_id = plan.command_facts[LINT_COMMAND].id
    script = needing_script(plan, fact_id)
    conv = request(script, "[compacted]\n## User requests\n- hi")
    conv.tool_names = ["read_file", "search_history"]
    policy, calls = first_reply(script, conv)
    assert calls == [f"search_history {[('literal', True), ('query', f'FACT-{fact_id}')]}"]
    assert [r.fact_ids for r in policy.recoveries] == [(fact_id,)]
    conv.tool_names = ["read_file"]  # a peer row: no such tool, the fact is lost
    policy, calls = first_reply(script, conv)
    assert calls == ["read_file [('path', 'README.md')]"] and policy.recoveries == []


def test_every_fact_but_the_report_ones_has_a_question_call(plan: ProjectPlan) -> None:
    script = build_script(plan)
    named = set(script.asked)
    reports = {f.id for c, f in plan.command_facts.items() if "logs/" not in c}
    assert named == set(plan.facts) - reports
    for turn in script.turns:  # each question does name where its fact is
        for fact_id in turn.needs:
            assert plan.facts[fact_id].where in turn.user


def test_peer_rows_go_without_the_ledger_and_search_history() -> None:
    assert "search_history" in registry_for(strategy_named("mini")).names()
    for key in ("claude-code", "codex", "server", "summary", "learn", "none"):
        strategy = strategy_named(key)
        assert "search_history" not in registry_for(strategy).names()
        assert strategy.configure(Settings(context_window=32_000)).ledger_tokens == 0


def _with_result(conv: SimConversation, tool_id: str, call_input: dict[str, object],
                 content: str) -> SimConversation:
    """``conv`` after the model called read_file with ``call_input`` and got ``content``."""
    return SimConversation(conv.protocol, conv.model, conv.system, [
        *conv.messages,
        SimMessage("assistant", [ToolUsePart(tool_id, "read_file", dict(call_input))]),
        SimMessage("user", [ToolResultPart(tool_id, content)]),
    ], request_index=conv.request_index + 1)


def test_a_recovery_read_that_stops_short_of_its_fact_reads_on_until_it_shows(
        plan: ProjectPlan) -> None:
    fact_id, path = module_fact(plan)
    fact = plan.facts[fact_id]
    script = needing_script(plan, fact_id)
    conv = request(script, "[compacted]\n## User requests\n- hi", "ok")
    policy = ScriptPolicy(script)
    policy.begin_turn(1)
    (recovery,) = policy.respond(conv).tool_calls
    lines = WHOLE_FILE_LINES + 600  # a long file: read for itself, only its start and end
    first_page = f"     1\tx\n(showing lines 1-300 of {lines:,}; call again with offset=301)"
    conv = _with_result(conv, str(recovery.id), recovery.input, first_page)
    (page,) = policy.respond(conv).tool_calls
    assert page.input == {"path": path, "offset": 301, "limit": PAGE_LINES}
    assert page.id in policy.recovery_ids
    without = _with_result(conv, str(page.id), page.input, "   301\ty")
    (on,) = policy.respond(without).tool_calls
    assert on.input["offset"] == 301 + PAGE_LINES  # not there yet: the next page
    found = _with_result(without, str(on.id), on.input, f"   700\t# FACT-{fact_id}: {fact.value}")
    assert policy.respond(found).tool_calls[0].input == {"path": "README.md"}  # found: on


def test_a_long_file_read_for_itself_is_still_read_only_at_its_end(plan: ProjectPlan) -> None:
    script = Script((Turn("go", (Step("Reading.", (read("logs/app.log"),)),), "done"),), {})
    policy = ScriptPolicy(script)
    policy.begin_turn(0)
    plain = SimConversation("anthropic", "sim", "", [SimMessage("user", [TextPart("go")])])
    (call,) = policy.respond(plain).tool_calls
    lines = WHOLE_FILE_LINES + 600
    first = f"     1\tx\n(showing lines 1-300 of {lines:,}; call again with offset=301)"
    (page,) = policy.respond(_with_result(plain, str(call.id), call.input, first)).tool_calls
    assert page.input["offset"] == lines - PAGE_LINES + 1


def test_a_page_that_stopped_before_its_last_line_is_read_on_from_there() -> None:
    script = Script((Turn("go", (Step("Reading.", (read("src/a.py"),)),), "done"),), {})
    policy = ScriptPolicy(script)
    policy.begin_turn(0)
    plain = SimConversation("anthropic", "sim", "", [SimMessage("user", [TextPart("go")])])
    (call,) = policy.respond(plain).tool_calls
    first = "     1\tx\n(showing lines 1-300 of 900; call again with offset=301)"
    conv = _with_result(plain, str(call.id), call.input, first)
    (page,) = policy.respond(conv).tool_calls
    assert (page.input["offset"], page.input["limit"]) == (301, PAGE_LINES)
    short = "   301\ty\n(showing lines 301-520 of 900; call again with offset=521)"
    conv = _with_result(conv, str(page.id), page.input, short)
    (rest,) = policy.respond(conv).tool_calls
    assert (rest.input["offset"], rest.input["limit"]) == (521, 301 + PAGE_LINES - 521)
    conv = _with_result(conv, str(rest.id), rest.input, "   521\tz")
    (after,) = policy.respond(conv).tool_calls
    assert after.input["offset"] == 301 + PAGE_LINES
