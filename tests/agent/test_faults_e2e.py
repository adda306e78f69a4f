"""Failures end to end: real SDKs over HTTP to the simulator, through the agent and its tools.

Every failure is either retried or ends the turn with a clear one-line message;
afterwards the history is valid, the server never had to refuse a request we
built, and the next turn works.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_claude import events as ev
from mini_claude.agent.loop import Agent
from mini_claude.conversation import ResultState, ToolResultBlock
from mini_claude.session.wiring import Session
from mini_claude.simulator import (
    Fault,
    FaultKind,
    Reply,
    ScriptedPolicy,
    SimConversation,
    Simulator,
    ToolCall,
)
from mini_claude.transcript import load_session
from tests.support.reliability import (
    PROVIDERS,
    Provider,
    answered,
    assert_history_valid,
    closing_sessions,
    compact,
    finished_text,
    make_project,
    of_kind,
    session_settings,
    snapshot,
    start_session,
    turn,
)

APPEND_ONCE = "echo ran >> runs.txt"
NOISE = "head -c 3000 /dev/urandom; printf '\\0\\033[31mred'"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


@pytest.fixture
def new_session(project: Path) -> Iterator[Callable[..., Session]]:
    """Start sessions on the simulator for this test's project; all closed at the end."""
    with closing_sessions() as opened:

        def start(sim: Simulator, provider: Provider, **changes: object) -> Session:
            settings = session_settings(sim, provider, project.parent / "home", **changes)
            opened.append(start_session(settings, project))
            return opened[-1]

        yield start


def two_step_policy() -> ScriptedPolicy:
    """A tool call that leaves a trace on disk, then an answer."""
    return ScriptedPolicy([
        Reply("Running it.", [ToolCall("run_shell", {"command": APPEND_ONCE})]),
        Reply("The command ran once."),
    ])


def assert_next_turn_works(agent: Agent, sim: Simulator) -> None:
    sim.policy = ScriptedPolicy([Reply("Still here.")])
    assert finished_text(turn(agent, "are you still there?")) == "Still here."
    assert_history_valid(agent, sim)


# ---- transport and status failures ----------------------------------------------------

# (kind, how the server says when to come back); each test builds its own Fault.
STATUS_FAULTS = [
    pytest.param("rate_limit", {"retry_after_ms": 20}, id="429-retry-after-ms"),
    pytest.param("rate_limit", {}, id="429-no-retry-after"),
    pytest.param("rate_limit", {"retry_after_s": 0.05}, id="429-retry-after-seconds"),
    pytest.param("overloaded", {"retry_after_ms": 10}, id="529"),
    pytest.param("server_error", {"retry_after_ms": 10}, id="500"),
    pytest.param("unavailable", {"retry_after_ms": 10}, id="503"),
    pytest.param("drop_before", {}, id="connection-closed-before-reply"),
    pytest.param("stream_error", {}, id="error-event-mid-stream"),
]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(("kind", "pause"), STATUS_FAULTS)
def test_a_failed_call_mid_turn_is_retried_and_the_turn_completes(
    provider: Provider, kind: FaultKind, pause: dict[str, Any], project: Path, simulator: Simulator,
    new_session: Callable[..., Session]
) -> None:
    simulator.policy = two_step_policy()
    simulator.inject(Fault(kind, on_request=2, **pause))
    agent = new_session(simulator, provider).agent
    events = turn(agent, "run the command")
    assert finished_text(events) == "The command ran once."
    retries = of_kind(events, ev.Retrying)
    assert len(retries) == 1 and retries[0].error and "\n" not in retries[0].error
    assert simulator.requests[1].fault == kind
    assert (project / "runs.txt").read_text() == "ran\n"
    assert len(answered(simulator)) == 2
    assert_history_valid(agent, simulator)
    assert_next_turn_works(agent, simulator)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("cut", ["drop_after_text", "drop_in_tool_call"])
def test_a_stream_cut_midway_is_retried_without_running_the_partial_call(
    provider: Provider, cut: FaultKind, project: Path, simulator: Simulator,
    new_session: Callable[..., Session]
) -> None:
    """The partial text is dropped and the half-received tool call never runs: the command
    leaves exactly one line, from the complete retry."""
    simulator.policy = ScriptedPolicy([
        Reply("I will run the command now, as asked, and report.",
              [ToolCall("run_shell", {"command": APPEND_ONCE})]),
        Reply("Done: it ran."),
    ])
    simulator.inject(Fault(cut, on_request=1))
    agent = new_session(simulator, provider).agent
    events = turn(agent, "run the command")
    assert finished_text(events) == "Done: it ran."
    assert (project / "runs.txt").read_text() == "ran\n"
    assert len(of_kind(events, ev.Retrying)) == 1
    spoken = [m.text for m in agent.conversation.messages if m.role == "assistant"]
    assert spoken.count("I will run the command now, as asked, and report.") == 1
    assert_history_valid(agent, simulator)
    assert_next_turn_works(agent, simulator)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_server_that_never_answers_times_out_and_the_retry_succeeds(
    provider: Provider, project: Path, simulator: Simulator,
    new_session: Callable[..., Session]
) -> None:
    simulator.policy = two_step_policy()
    simulator.inject(Fault("hang", on_request=2))
    agent = new_session(simulator, provider, request_timeout_seconds=0.5).agent
    events = turn(agent, "run the command")
    assert finished_text(events) == "The command ran once."
    assert "0.5" in of_kind(events, ev.Retrying)[0].error
    assert_history_valid(agent, simulator)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_when_retries_run_out_the_turn_ends_with_one_line_and_history_stays_valid(
    provider: Provider, project: Path, simulator: Simulator,
    new_session: Callable[..., Session]
) -> None:
    simulator.policy = two_step_policy()
    simulator.inject(Fault("overloaded", on_request=2, times=3, retry_after_ms=5))
    agent = new_session(simulator, provider, max_retries=2).agent
    events = turn(agent, "run the command")
    errors = of_kind(events, ev.TurnError)
    assert len(errors) == 1 and not of_kind(events, ev.TurnFinished)
    message = errors[0].message
    assert "overloaded" in message and "3 attempts" in message and "\n" not in message
    assert "Traceback" not in message
    # The tool ran and its result is answered in the history; nothing dangles.
    assert (project / "runs.txt").read_text() == "ran\n"
    assert agent.conversation.messages[-1].is_tool_result_message
    assert_history_valid(agent, simulator)
    simulator.policy = ScriptedPolicy([Reply("Recovered.")])
    assert finished_text(turn(agent, "try again")) == "Recovered."
    assert_history_valid(agent, simulator)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_hang_that_outlasts_every_retry_ends_the_turn_cleanly(
    provider: Provider, project: Path, simulator: Simulator,
    new_session: Callable[..., Session]
) -> None:
    simulator.policy = ScriptedPolicy([Reply("Hello.")])
    simulator.inject(Fault("hang", times=2))
    agent = new_session(simulator, provider, request_timeout_seconds=0.3, max_retries=1).agent
    events = turn(agent, "hello?")
    (error,) = of_kind(events, ev.TurnError)
    assert "did not answer" in error.message and "\n" not in error.message
    assert_history_valid(agent, simulator)
    assert_next_turn_works(agent, simulator)


# ---- bad output from the model --------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_malformed_tool_arguments_get_an_error_result_the_model_can_read(
    provider: Provider, project: Path, simulator: Simulator,
    new_session: Callable[..., Session]
) -> None:
    seen: list[str] = []

    def read_the_error(conv: SimConversation) -> Reply:
        seen.append(conv.last_tool_results()[0].content)
        return Reply("I sent bad JSON; sorry.")

    simulator.policy = ScriptedPolicy([
        Reply("", [ToolCall("read_file", {"path": "README.md"})],
              raw_arguments={0: '{"path": "README.md"'}),
        read_the_error,
    ])
    agent = new_session(simulator, provider).agent
    events = turn(agent, "read the readme")
    assert finished_text(events) == "I sent bad JSON; sorry."
    (finished,) = of_kind(events, ev.ToolFinished)
    assert finished.result.is_error
    assert "not valid JSON" in seen[0] and '{"path": "README.md"' in seen[0]
    assert_history_valid(agent, simulator)
    assert_next_turn_works(agent, simulator)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_tool_that_does_not_exist_gets_an_error_naming_the_real_ones(
    provider: Provider, project: Path, simulator: Simulator,
    new_session: Callable[..., Session]
) -> None:
    seen: list[str] = []

    def read_the_error(conv: SimConversation) -> Reply:
        seen.append(conv.last_tool_results()[0].content)
        return Reply("That tool does not exist.")

    simulator.policy = ScriptedPolicy([
        Reply("", [ToolCall("delete_everything", {"path": "/"}),
                   ToolCall("read_file", {"path": "README.md"})]),
        read_the_error,
    ])
    agent = new_session(simulator, provider).agent
    events = turn(agent, "clean up")
    assert finished_text(events) == "That tool does not exist."
    assert "delete_everything" in seen[0] and "read_file" in seen[0]
    results = [b for m in agent.conversation.messages for b in m.blocks
               if isinstance(b, ToolResultBlock)]
    assert [r.is_error for r in results] == [True, False]
    assert (project / "README.md").exists()
    assert_history_valid(agent, simulator)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_blank_text_before_a_tool_call_does_not_poison_the_history(
    provider: Provider, project: Path, simulator: Simulator,
    new_session: Callable[..., Session]
) -> None:
    """Models often stream a bare newline before a tool call. The history must stay valid,
    and a compaction that keeps that message must still succeed."""
    simulator.policy = ScriptedPolicy([
        Reply("\n\n", [ToolCall("read_file", {"path": "README.md"})]),
        Reply("Read it."),
        Reply("\n", [ToolCall("read_file", {"path": "pkg/core.py"})]),
        Reply("Read that too."),
    ])
    agent = new_session(simulator, provider).agent
    assert finished_text(turn(agent, "read the readme")) == "Read it."
    assert finished_text(turn(agent, "now the code")) == "Read that too."
    assert_history_valid(agent, simulator)
    events = compact(agent)
    assert of_kind(events, ev.CompactionFinished), [e.error for e in
                                                   of_kind(events, ev.CompactionFailed)]
    assert_history_valid(agent, simulator)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_lone_surrogate_in_tool_arguments_is_answered_not_fatal(
    provider: Provider, project: Path, simulator: Simulator,
    new_session: Callable[..., Session]
) -> None:
    """JSON may carry ``\\ud800``, which no UTF-8 file can hold: the transcript, the tool
    and the next request must all survive it."""
    simulator.policy = ScriptedPolicy([
        Reply("", [ToolCall("read_file", {"path": "x"})],
              raw_arguments={0: '{"path": "notes-\\ud800.txt"}'}),
        Reply("That file name was broken."),
    ])
    agent = new_session(simulator, provider).agent
    events = turn(agent, "read my notes")
    assert finished_text(events) == "That file name was broken."
    (finished,) = of_kind(events, ev.ToolFinished)
    assert finished.result.is_error and "ud800" in finished.result.content
    assert not agent.transcript.write_failed
    assert_history_valid(agent, simulator)
    assert_next_turn_works(agent, simulator)


# ---- the window and compaction --------------------------------------------------------

SMALL_WINDOW = {"context_window": 8_000, "output_reserve": 1_000, "max_retries": 1}
LONG_ANSWER = "FACT-9 the parser keeps its state per file. " + " ".join(
    f"Step {i}: the module reads its input, checks the header and stores the rows."
    for i in range(300)
)


def fill_the_window(agent: Agent, sim: Simulator) -> None:
    """A turn whose long answer puts the next turn start over the auto-compact threshold.

    The answer ends its turn, so no compaction runs inside it.
    """
    sim.policy = ScriptedPolicy([Reply("Hi."), Reply(LONG_ANSWER)])
    finished_text(turn(agent, "hello"))
    assert finished_text(turn(agent, "explain the parser")) == LONG_ANSWER
    assert agent.steps.compactor.should_auto_compact(agent.conversation)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("kind", ["summary_error", "empty_summary", "long_summary"])
def test_a_failed_compaction_leaves_the_conversation_exactly_as_it_was(
    provider: Provider, kind: FaultKind, project: Path, simulator: Simulator,
    new_session: Callable[..., Session]
) -> None:
    agent = new_session(simulator, provider, **SMALL_WINDOW).agent
    fill_the_window(agent, simulator)
    simulator.inject(Fault(kind, times=10))
    before = snapshot(agent.conversation.messages)
    epoch = agent.conversation.epoch
    events = compact(agent)
    (failed,) = of_kind(events, ev.CompactionFailed)
    assert failed.error and "\n" not in failed.error and not failed.breaker_open
    assert snapshot(agent.conversation.messages) == before
    assert agent.conversation.epoch == epoch
    assert_history_valid(agent, simulator)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_three_failed_compactions_open_the_breaker_and_the_session_goes_on(
    provider: Provider, project: Path, simulator: Simulator,
    new_session: Callable[..., Session]
) -> None:
    # Session notes would stand in for the failing summaries: this is the summary call's path.
    agent = new_session(simulator, provider, **SMALL_WINDOW, session_memory=False).agent
    fill_the_window(agent, simulator)
    simulator.inject(Fault("summary_error", times=2))  # the first attempt and its retry
    simulator.inject(Fault("empty_summary"))
    simulator.inject(Fault("long_summary"))
    simulator.policy = ScriptedPolicy([], final=Reply("Answered anyway."))
    failures: list[ev.CompactionFailed] = []
    for number in range(3):
        before = snapshot(agent.conversation.messages)
        events = turn(agent, f"question {number}")
        failures += of_kind(events, ev.CompactionFailed)
        assert finished_text(events) == "Answered anyway."
        kept = snapshot(agent.conversation.messages)[: len(before)]
        assert kept == before, "a failed compaction changed the history"
    assert [f.breaker_open for f in failures] == [False, False, True]
    assert agent.steps.compactor.breaker_open
    summaries = sum(r.is_summary_request for r in simulator.requests)
    events = turn(agent, "question 3")
    assert finished_text(events) == "Answered anyway."
    assert not of_kind(events, ev.CompactionStarted)
    assert sum(r.is_summary_request for r in simulator.requests) == summaries
    assert_history_valid(agent, simulator)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_server_saying_prompt_too_long_mid_turn_compacts_and_continues(
    provider: Provider, project: Path, simulator: Simulator,
    new_session: Callable[..., Session]
) -> None:
    agent = new_session(simulator, provider).agent
    simulator.policy = ScriptedPolicy([
        Reply("FACT-3 the answer is 42."),
        Reply("", [ToolCall("read_file", {"path": "README.md"})]),
        Reply("Finished after compacting."),
    ])
    finished_text(turn(agent, "what is the answer?"))
    simulator.inject(Fault("prompt_too_long", on_request=3))
    events = turn(agent, "and the readme")
    assert finished_text(events) == "Finished after compacting."
    assert [e.reason for e in of_kind(events, ev.CompactionFinished)] == ["prompt-too-long"]
    assert "FACT-3" in str(simulator.requests[-1].body)
    assert_history_valid(agent, simulator)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_empty_reply_is_recorded_as_such_and_the_session_goes_on(
    provider: Provider, simulator: Simulator, new_session: Callable[..., Session]
) -> None:
    simulator.policy = ScriptedPolicy([Reply("")])
    agent = new_session(simulator, provider).agent
    events = turn(agent, "say nothing")
    assert of_kind(events, ev.TurnFinished)
    assert agent.conversation.messages[-1].role == "assistant"
    assert agent.conversation.messages[-1].text.strip()
    assert_history_valid(agent, simulator)
    assert_next_turn_works(agent, simulator)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_binary_noise_from_a_command_does_not_break_the_next_request(
    provider: Provider, simulator: Simulator, new_session: Callable[..., Session]
) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("", [ToolCall("run_shell", {"command": NOISE})]),
        Reply("That was noise."),
    ])
    agent = new_session(simulator, provider).agent
    assert finished_text(turn(agent, "print some bytes")) == "That was noise."
    assert simulator.requests[-1].status == 200
    assert_history_valid(agent, simulator)
    assert_next_turn_works(agent, simulator)


def test_a_server_that_reuses_tool_call_ids_keeps_history_and_transcript_in_step(
    simulator: Simulator, new_session: Callable[..., Session]
) -> None:
    """Some OpenAI-compatible servers number calls per reply (`call_0` every time). Later
    edits to an old result must land on that result, in memory and when the transcript
    is replayed on resume."""
    simulator.policy = ScriptedPolicy(
        [step for n in range(4) for step in (
            Reply("", [ToolCall("run_shell", {"command": f"seq {n} 3000"}, id="call_0")]),
            Reply(f"batch {n} done"),
        )]
    )
    now = [1_000.0]
    session = new_session(
        simulator, "openai", microcompact_idle_seconds=60.0, keep_recent_results=1,
        idle_compact_min_tokens=10**9,  # clear results rather than summarize the idle history
    )
    agent = session.agent
    agent.clock = lambda: now[0]
    for n in range(4):
        now[0] += 600  # idle long enough that old results are cleared before each call
        assert finished_text(turn(agent, f"batch {n}")) == f"batch {n} done"
    assert_history_valid(agent, simulator)
    states = [b.state for m in agent.conversation.messages for b in m.blocks
              if isinstance(b, ToolResultBlock)]
    assert states.count(ResultState.CLEARED) >= 2, states  # tier edits did happen
    agent.transcript.close()
    replayed = load_session(agent.transcript.path).conversation
    assert snapshot(replayed.messages) == snapshot(agent.conversation.messages)
