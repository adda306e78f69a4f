"""The task tool end to end: a session delegates to sub-agents over HTTP, both providers."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from mini_claude import events as ev
from mini_claude.agent.subagent import task_transcripts_dir
from mini_claude.cli import main
from mini_claude.conversation import INTERRUPTED_RESULT, validate
from mini_claude.permissions.asking import PermissionDecision, PermissionRequest
from mini_claude.session.wiring import Session
from mini_claude.simulator import Fault, FunctionPolicy, Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.simulator.policies import system_contains, user_contains
from mini_claude.simulator.types import SimConversation
from mini_claude.transcript import load_session
from tests.support.printing import point_at
from tests.support.reliability import PROVIDERS, Provider, session_settings
from tests.support.subagent import (
    EXPLORE_SYSTEM,
    GENERAL_SYSTEM,
    PARENT_SYSTEM,
    close,
    events_of,
    request_text,
    requests_of,
    results,
    route,
    start,
    task_call,
    tool_names,
    transcript_records,
)

SECRET_LINE = "CHILD-ONLY loader reads settings.toml through load_config()"
ANSWER = "The config is loaded by load_config() in pkg/config.py, line 1."


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "config.py").write_text(f"def load_config():\n    # {SECRET_LINE}\n")
    (root / "README.md").write_text("# demo\n")
    return root


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    new = asyncio.new_event_loop()
    yield new
    if not new.is_closed():
        new.close()


def run_turn(loop: asyncio.AbstractEventLoop, session: Session, text: str) -> list[ev.Event]:
    async def collect(events: AsyncIterator[ev.Event]) -> list[ev.Event]:
        return [event async for event in events]

    return loop.run_until_complete(collect(session.agent.turn(text)))


def child_transcripts(session: Session) -> list[Path]:
    return sorted(task_transcripts_dir(session.settings, session.session_id).glob("*.jsonl"))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_child_works_in_its_own_context_and_only_its_answer_reaches_the_parent(
    simulator: Simulator, provider: Provider, project: Path, isolated_home: Path,
    loop: asyncio.AbstractEventLoop,
) -> None:
    child = ScriptedPolicy([
        Reply("Searching.", [ToolCall("grep_search", {"pattern": "load_config"})]),
        Reply("Reading.", [ToolCall("read_file", {"path": "pkg/config.py"})]),
        Reply(ANSWER),
    ])
    route(simulator, [Reply("Delegating.", [task_call("FIND-CONFIG: where is the config "
                                                      "loaded?", "find the config loader")])],
          [(user_contains("FIND-CONFIG"), child)])
    session = start(session_settings(simulator, provider, isolated_home), project)
    try:
        events = run_turn(loop, session, "How is the configuration loaded?")
        agent = session.agent

        assert [r.content for r in results(agent)] == [ANSWER]
        assert results(agent)[0].target == "find the config loader"  # what a placeholder names
        parents = requests_of(simulator, PARENT_SYSTEM)
        children = requests_of(simulator, EXPLORE_SYSTEM)
        assert len(parents) == 2 and len(children) == 3
        assert "task" in tool_names(parents[0])
        assert sorted(tool_names(children[0])) == ["grep_search", "list_files", "read_file"]
        assert SECRET_LINE in request_text(children[2])  # the child read it...
        assert not any(SECRET_LINE in request_text(r) for r in parents)  # ...the parent never
        assert ANSWER in request_text(parents[1])
        assert not validate(agent.conversation.messages)

        progress = [e for e in events if isinstance(e, ev.TaskProgress)]
        assert progress[-1].state == "done" and progress[-1].calls == 2
        assert progress[-1].label == "task: find the config loader · 2 calls"
        assert agent.costs.requests == 5  # the child's three calls count in the session's
        total = agent.costs.usage.prompt_tokens + agent.costs.usage.output_tokens
        assert total > progress[-1].tokens > 0
        assert agent.costs.dollars > progress[-1].cost_usd > 0
        assert agent.costs.subagents.requests == 3
        assert agent.costs.subagents.dollars == pytest.approx(progress[-1].cost_usd)

        [path] = child_transcripts(session)
        [started] = events_of(agent.transcript.path, "task_started")
        assert started["transcript"] == str(path) and started["agent_type"] == "explore"
        [finished] = events_of(agent.transcript.path, "task_finished")
        assert finished["state"] == "done" and finished["calls"] == 2
        child_messages = [r for r in transcript_records(path) if r["type"] == "message"]
        assert len(child_messages) == 6  # prompt, 2 x (call, result), answer
        assert SECRET_LINE in path.read_text()
        assert SECRET_LINE not in agent.transcript.path.read_text()
    finally:
        close(session, loop)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_two_tasks_in_one_reply_run_at_the_same_time_and_answer_in_call_order(
    simulator: Simulator, provider: Provider, project: Path, isolated_home: Path,
    loop: asyncio.AbstractEventLoop,
) -> None:
    b_arrived = threading.Event()
    reading = Reply("Reading.", [ToolCall("read_file", {"path": "README.md"})])

    def job_a_answer(conv: SimConversation) -> Reply:
        # Run one after the other, B could only start once A had answered.
        return Reply("A ran alongside B." if b_arrived.is_set() else "A ran alone.")

    def job_b(conv: SimConversation) -> Reply:
        b_arrived.set()
        return Reply("B's answer.")

    route(simulator, [Reply("Two at once.", [task_call("JOB-A: first", "first job"),
                                             task_call("JOB-B: second", "second job")])],
          [(user_contains("JOB-A"), ScriptedPolicy([reading, reading, job_a_answer])),
           (user_contains("JOB-B"), FunctionPolicy(job_b))])
    session = start(session_settings(simulator, provider, isolated_home), project)
    try:
        events = run_turn(loop, session, "Do both jobs.")
        agent = session.agent
        assert [r.content for r in results(agent)] == ["A ran alongside B.", "B's answer."]
        assert not validate(agent.conversation.messages)
        finished = [e for e in events if isinstance(e, ev.ToolFinished)]
        assert [e.result.content for e in finished] == ["A ran alongside B.", "B's answer."]
        assert len(child_transcripts(session)) == 2
        assert {e["state"] for e in events_of(agent.transcript.path, "task_finished")} == {"done"}
    finally:
        close(session, loop)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cancelling_the_turn_cancels_every_task_and_leaves_valid_histories(
    simulator: Simulator, provider: Provider, project: Path, isolated_home: Path,
    loop: asyncio.AbstractEventLoop,
) -> None:
    reading = Reply("Reading first.", [ToolCall("read_file", {"path": "README.md"})])
    route(simulator, [Reply("Two at once.", [task_call("JOB-A: first"),
                                             task_call("JOB-B: second")])],
          [(user_contains("JOB-A"), ScriptedPolicy([reading], final=Reply("too late"))),
           (user_contains("JOB-B"), ScriptedPolicy([], final=Reply("too late")))])
    # A hangs after its read, B at once: the server answers neither until they go away.
    after_read = user_contains("JOB-A")
    simulator.inject(Fault("hang", when=lambda c: after_read(c) and bool(c.tool_results())))
    simulator.inject(Fault("hang", when=user_contains("JOB-B")))
    session = start(session_settings(simulator, provider, isolated_home), project)
    agent = session.agent
    seen: list[ev.Event] = []

    async def cancel_when_both_wait() -> None:
        async def consume() -> None:
            async for event in agent.turn("Do both jobs."):
                seen.append(event)

        running = asyncio.ensure_future(consume())
        while sum(r.fault == "hang" for r in simulator.requests) < 2:
            await asyncio.sleep(0.02)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running

    try:
        loop.run_until_complete(asyncio.wait_for(cancel_when_both_wait(), 60))
        assert not validate(agent.conversation.messages)
        assert [r.content for r in results(agent)] == [INTERRUPTED_RESULT] * 2
        paths = child_transcripts(session)
        assert len(paths) == 2
        for path in paths:
            [end] = events_of(path, "task_end")
            assert end["state"] == "interrupted"
            assert events_of(path, "interrupted")
            assert not validate(load_session(path).conversation.messages)
        states = {e["state"] for e in events_of(agent.transcript.path, "task_finished")}
        assert states == {"interrupted"}
    finally:
        close(session, loop)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_general_task_asks_the_parent_approver_and_has_no_task_tool(
    simulator: Simulator, provider: Provider, project: Path, isolated_home: Path,
    loop: asyncio.AbstractEventLoop,
) -> None:
    asked: list[PermissionRequest] = []

    async def approver(request: PermissionRequest) -> PermissionDecision:
        asked.append(request)
        return PermissionDecision(True)

    child = ScriptedPolicy([
        Reply("Nesting.", [task_call("NESTED: again")]),
        Reply("Running.", [ToolCall("run_shell", {"command": "echo child-ran-this"})]),
    ], final=Reply("The command printed child-ran-this."))
    route(simulator, [Reply("Delegating.", [task_call("SHELL-JOB: run it", "run the echo",
                                                      agent_type="general")])],
          [(user_contains("SHELL-JOB"), child)])
    session = start(session_settings(simulator, provider, isolated_home), project, approver)
    try:
        run_turn(loop, session, "Run the echo through a helper.")
        [request] = asked
        assert request.tool_name == "run_shell"
        assert request.summary.startswith("[task: run the echo] ")
        assert [r.content for r in results(session.agent)] == [
            "The command printed child-ran-this."]
        children = requests_of(simulator, GENERAL_SYSTEM)
        assert "task" not in tool_names(children[0])
        assert {"run_shell", "write_file", "edit_file", "read_file"} <= set(tool_names(children[0]))
        assert "Unknown tool 'task'" in request_text(children[1])  # no task inside a task
        assert "child-ran-this" in request_text(children[2])
        assert len(child_transcripts(session)) == 1
    finally:
        close(session, loop)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_markdown_agent_file_defines_a_type_with_its_prompt_tools_and_model(
    simulator: Simulator, provider: Provider, project: Path, isolated_home: Path,
    loop: asyncio.AbstractEventLoop,
) -> None:
    folder = project / ".claude" / "agents"
    folder.mkdir(parents=True)
    (folder / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews code for bugs\ntools: Read, Grep\n"
        "model: sim-reviewer\n---\nYou are REVIEWER-PROMPT. Report bugs only.\n")
    route(simulator, [Reply("Reviewing.", [task_call("REVIEW-JOB: check", "review",
                                                     agent_type="reviewer")]),
                      Reply("Oops.", [task_call("x", agent_type="nonesuch")])],
          [(system_contains("REVIEWER-PROMPT"), ScriptedPolicy([], final=Reply("No bugs.")))])
    session = start(session_settings(simulator, provider, isolated_home), project)
    try:
        run_turn(loop, session, "Review the code.")
        parents = requests_of(simulator, PARENT_SYSTEM)
        assert "reviewer: Reviews code for bugs" in request_text(parents[0])
        [child] = requests_of(simulator, "REVIEWER-PROMPT")
        assert child.conversation is not None
        assert child.conversation.model == "sim-reviewer"
        assert tool_names(child) == ["read_file", "grep_search"]
        review, unknown = results(session.agent)
        assert review.content == "No bugs." and not review.is_error
        assert unknown.is_error
        assert "unknown agent_type 'nonesuch'" in unknown.content
        assert "explore, plan, general, reviewer" in unknown.content
    finally:
        close(session, loop)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_child_compacts_on_its_own_small_window(
    simulator: Simulator, provider: Provider, project: Path, isolated_home: Path,
    loop: asyncio.AbstractEventLoop,
) -> None:
    for n in range(6):
        lines = "".join(f"FILE{n} line {i}: value {i * 7 + n} recorded\n" for i in range(220))
        (project / f"data{n}.txt").write_text(lines)
    reads = [Reply(f"Reading {n}.", [ToolCall("read_file", {"path": f"data{n}.txt"})])
             for n in range(6)]
    route(simulator, [Reply("Delegating.", [task_call("BIG-READ: read all", "read data")])],
          [(user_contains("BIG-READ"), ScriptedPolicy(reads, final=Reply("Read six files.")))])
    # The summary at the threshold, not held back for session notes on their way; notes from
    # early on, each waited for, so that none is still on its way (and cancelled, its cost
    # never known) when the child ends.
    settings = session_settings(simulator, provider, isolated_home, context_window=12_000,
                                session_memory_defer_margin_pct=1.0,
                                session_memory_start_pct=0.6,
                                session_memory_background=False)
    session = start(settings, project)
    try:
        run_turn(loop, session, "Read the data through a helper.")
        assert [r.content for r in results(session.agent)] == ["Read six files."]
        [path] = child_transcripts(session)
        kinds = [r["type"] for r in transcript_records(path)]
        assert "compaction" in kinds  # the child summarized its own history
        assert session.agent.steps.compactions == 0
        # Its summaries and session notes alike: a side request of the child's own history.
        summaries = [r for r in simulator.requests if r.is_side_request]
        assert summaries and all(EXPLORE_SYSTEM in r.conversation.system  # type: ignore[union-attr]
                                 for r in summaries)
        assert session.agent.costs.summaries.requests == len(summaries)
        # Its run is one turn: no update starts at its end, when nobody would read it.
        child_calls = [r for r in simulator.requests if not r.is_side_request
                       and EXPLORE_SYSTEM in r.conversation.system]  # type: ignore[union-attr]
        assert all(r.received_at < child_calls[-1].received_at for r in summaries)
    finally:
        close(session, loop)


def test_a_child_transcript_resumes_by_its_id(
    simulator: Simulator, project: Path, isolated_home: Path, loop: asyncio.AbstractEventLoop,
) -> None:
    route(simulator, [Reply("Delegating.", [task_call("NOTE-JOB: remember")])],
          [(user_contains("NOTE-JOB"), ScriptedPolicy([], final=Reply("Noted.")))])
    settings = session_settings(simulator, "anthropic", isolated_home)
    session = start(settings, project)
    try:
        run_turn(loop, session, "Delegate a note.")
        [started] = events_of(session.agent.transcript.path, "task_started")
    finally:
        close(session, loop)
    again = Session(settings, project, session.provider, session.approver)
    child = again.resume(started["task_id"])
    try:
        texts = [m.text for m in child.conversation.messages]
        assert texts == ["NOTE-JOB: remember", "Noted."]
    finally:
        child.transcript.close()


def test_questions_from_parallel_tasks_come_one_at_a_time(
    simulator: Simulator, project: Path, isolated_home: Path, loop: asyncio.AbstractEventLoop,
) -> None:
    asked: list[str] = []
    on_screen = 0
    overlapped = False

    async def approver(request: PermissionRequest) -> PermissionDecision:
        nonlocal on_screen, overlapped
        asked.append(request.summary)
        on_screen += 1
        overlapped = overlapped or on_screen > 1
        for _ in range(25):  # a user taking their time: the other task must wait its turn
            await asyncio.sleep(0.02)
            overlapped = overlapped or on_screen > 1
        on_screen -= 1
        return PermissionDecision(True)

    def shell(tag: str) -> ScriptedPolicy:
        return ScriptedPolicy([Reply("Running.", [ToolCall("run_shell",
                                                           {"command": f"echo {tag}"})])],
                              final=Reply(f"{tag} done."))

    route(simulator, [Reply("Two.", [task_call("JOB-A", "first", agent_type="general"),
                                     task_call("JOB-B", "second", agent_type="general")])],
          [(user_contains("JOB-A"), shell("alpha")), (user_contains("JOB-B"), shell("beta"))])
    settings = session_settings(simulator, "openai", isolated_home)
    session = start(settings, project, approver)
    try:
        run_turn(loop, session, "Run both.")
        assert sorted(asked) == ["[task: first] echo alpha", "[task: second] echo beta"]
        assert not overlapped
        assert [r.content for r in results(session.agent)] == ["alpha done.", "beta done."]
    finally:
        close(session, loop)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_print_mode_totals_include_the_sub_agents_and_a_rule_can_forbid_task(
    simulator: Simulator, provider: Provider, project: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(project)
    point_at(simulator, provider, monkeypatch)
    child = ScriptedPolicy([Reply("Reading.", [ToolCall("read_file", {"path": "README.md"})])],
                           final=Reply("The readme says demo."))
    route(simulator, [Reply("Delegating.", [task_call("README-JOB: read it")])],
          [(user_contains("README-JOB"), child)], parent_final="It says demo.")
    assert main(["-p", "what does the readme say?", "--output-format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["result"] == "It says demo."
    assert result["mini_claude"]["requests"] == 4  # two of the session's, two of the child's
    children = requests_of(simulator, EXPLORE_SYSTEM)
    assert len(children) == 2

    simulator.requests.clear()
    route(simulator, [Reply("Delegating.", [task_call("README-JOB: read it")])],
          [(user_contains("README-JOB"), child)], parent_final="Not allowed, then.")
    code = main(["-p", "what does the readme say?", "--disallowed-tools", "task"])
    out, err = capsys.readouterr()
    assert code == 0 and "Not allowed, then." in out
    assert "naming no known tool" not in err
    assert not requests_of(simulator, EXPLORE_SYSTEM)
    assert "Permission denied by the rule 'task'" in request_text(simulator.requests[-1])


@pytest.mark.parametrize(("agent_type", "marker", "tools"), [
    ("explore", EXPLORE_SYSTEM, ["read_file", "grep_search", "list_files"]),
    ("plan", "You are a planning sub-agent", ["read_file", "grep_search", "list_files"]),
    ("general", GENERAL_SYSTEM, ["read_file", "grep_search", "list_files", "run_shell",
                                 "write_file", "edit_file", "compact", "search_history",
                                 "todo_write", "shell_output", "kill_shell", "web_fetch"]),
])
def test_each_builtin_type_has_its_own_prompt_and_tools(
    simulator: Simulator, project: Path, isolated_home: Path, loop: asyncio.AbstractEventLoop,
    agent_type: str, marker: str, tools: list[str],
) -> None:
    route(simulator, [Reply("Delegating.", [task_call("TYPED-JOB", agent_type=agent_type)])],
          [(user_contains("TYPED-JOB"), ScriptedPolicy([], final=Reply("1. Do it.")))])
    session = start(session_settings(simulator, "anthropic", isolated_home,
                                     task_model="sim-haiku"), project)
    try:
        run_turn(loop, session, "Delegate.")
        [child] = requests_of(simulator, marker)
        assert tool_names(child) == tools
        assert child.conversation is not None and child.conversation.model == "sim-haiku"
        assert str(project) in child.conversation.system  # the environment follows the prompt
        assert [r.content for r in results(session.agent)] == ["1. Do it."]
    finally:
        close(session, loop)
