"""Summarize from a message on, or up to it, from the rewind menu: end to end over HTTP
against the simulator, both providers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mini_claude.conversation import SummaryBlock, message_to_dict
from mini_claude.session.rewind import RewindError
from mini_claude.simulator import RecordedRequest, Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.transcript import fork_transcript, load_session, read_records
from tests.support.agent import PROVIDERS, Run, request_text
from tests.support.rewind import (
    TURNS,
    make_run,
    point_for,
    rewinder,
    scripted_policy,
    without_cache_marks,
    write_project,
)

COMPACTED = "[This session was compacted"
ACK = "I have the summary of the earlier part of this session"


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "project")


def history(run: Run) -> list[dict[str, Any]]:
    return [message_to_dict(m) for m in run.agent.conversation.messages]


def sent(request: RecordedRequest) -> list[Any]:
    messages = without_cache_marks(request.body["messages"])
    assert isinstance(messages, list)
    return messages


def summary_at(request: RecordedRequest) -> int:
    """Where the summary stands among the messages the request sent."""
    return next(i for i, m in enumerate(sent(request)) if COMPACTED in str(m))


def play(run: Run, turns: int) -> list[list[dict[str, Any]]]:
    """The first ``turns`` turns; the history before each."""
    run.start()
    before = []
    for prompt, _ in TURNS[:turns]:
        before.append(history(run))
        run.turn(prompt)
    return before


def range_records(run: Run) -> list[dict[str, Any]]:
    return [r for r in read_records(run.agent.transcript.path)
            if isinstance(r, dict) and r.get("type") == "range_summary"]


def test_summarize_from_here_keeps_the_prefix_byte_for_byte(
        simulator: Simulator, isolated_home: Path, project: Path, provider: str) -> None:
    simulator.policy = scripted_policy(TURNS)
    run = make_run(simulator, provider, isolated_home, project)
    try:
        before = play(run, 4)
        kept = len(before[2])  # the messages before turn 3
        last = run.model_requests()[-1]
        files = {name: (project / name).read_bytes() for name in ("a.txt", "b.txt", "c.sh")}

        outcome = run.run(rewinder(run).summarize(
            point_for(run, "turn 3"), up_to=False, instructions="name every file touched"))

        summary_request = run.summary_requests()[-1]
        instruction = summary_request.conversation.messages[-1].text  # type: ignore[union-attr]
        assert "name every file touched" in instruction
        assert "turn 3: make c two" in instruction  # where the part to summarize begins
        assert "turn 4: add d" in request_text(summary_request)
        assert outcome.prompt == "turn 3: make c two"
        now = history(run)
        assert now[:kept] == before[2]
        assert len(now) == kept + 2
        boundary = run.agent.conversation.messages[kept]
        assert isinstance(boundary.blocks[0], SummaryBlock)
        assert ACK in run.agent.conversation.messages[kept + 1].text
        assert {n: (project / n).read_bytes() for n in files} == files  # files untouched

        count = len(run.model_requests())
        run.turn("turn 3, asked again")
        after = run.model_requests()[count]  # the turn's first request
        at = summary_at(after)  # on the wire (OpenAI's carries the system prompt first)
        assert at >= kept
        assert sent(after)[:at] == sent(last)[:at]  # the cached prefix, byte for byte
        assert after.cache_read_tokens > 0
        assert after.conversation is not None
        messages = after.conversation.messages
        assert len(messages) == kept + 3  # kept messages, summary, acknowledgement, prompt
        assert messages[kept].text.startswith(COMPACTED)
        assert messages[kept + 2].text == "turn 3, asked again"

        assert len(range_records(run)) == 1
        resumed = load_session(run.agent.transcript.path)
        assert [message_to_dict(m) for m in resumed.conversation.messages] == history(run)
        forked = fork_transcript(run.agent.transcript.path, run.agent.transcript.path.parent,
                                 "forked-after-summary")
        assert [message_to_dict(m) for m in load_session(forked).conversation.messages] == (
            history(run))

        rewinder(run).rewind(point_for(run, "turn 3, asked again"), code=False,
                             conversation=True)
        assert history(run) == now  # after the summary: the summary is there
        rewinder(run).rewind(point_for(run, "turn 4"), code=False, conversation=True)
        assert history(run) == before[3]  # inside the summarized part: as it was
        rewinder(run).rewind(point_for(run, "turn 2"), code=False, conversation=True)
        assert history(run) == before[1]  # before it
    finally:
        run.close()


def test_summarize_up_to_here_keeps_the_later_messages_whole(
        simulator: Simulator, isolated_home: Path, project: Path, provider: str) -> None:
    simulator.policy = scripted_policy(TURNS)
    run = make_run(simulator, provider, isolated_home, project)
    try:
        before = play(run, 4)
        cut = len(before[2])
        whole = history(run)
        last = run.model_requests()[-1]

        outcome = run.run(rewinder(run).summarize(
            point_for(run, "turn 3"), up_to=True, instructions="mention alpha"))

        summary_request = run.summary_requests()[-1]
        assert summary_request.conversation is not None
        assert "mention alpha" in summary_request.conversation.messages[-1].text
        summarized = request_text(summary_request)
        assert "turn 1: make a two" in summarized and "turn 2: make b two" in summarized
        assert "turn 3: make c two" not in summarized
        assert outcome.prompt == ""
        assert outcome.summarized == cut
        now = history(run)
        assert isinstance(run.agent.conversation.messages[0].blocks[0], SummaryBlock)
        assert now[2:] == whole[cut:]

        count = len(run.model_requests())
        run.turn("turn 5: make a and b three")
        after = run.model_requests()[count]
        assert after.conversation is not None and last.conversation is not None
        messages = after.conversation.messages
        assert messages[0].text.startswith(COMPACTED)
        assert len(messages) == 2 + len(whole) - cut + 1  # summary, ack, kept, prompt
        assert messages[2:-2] == last.conversation.messages[cut:]  # the kept turns, whole
        turn_three = next(i for i, m in enumerate(sent(last)) if "turn 3: make c" in str(m))
        kept_wire = sent(last)[turn_three:]
        at = summary_at(after)
        assert sent(after)[at + 2:at + 2 + len(kept_wire)] == kept_wire  # as they were sent

        assert len(range_records(run)) == 1
        resumed = load_session(run.agent.transcript.path)
        assert [message_to_dict(m) for m in resumed.conversation.messages] == history(run)

        with pytest.raises(RewindError, match="inside a summary"):
            run.run(rewinder(run).summarize(point_for(run, "turn 2"), up_to=False))
        rewinder(run).rewind(point_for(run, "turn 4"), code=False, conversation=True)
        assert history(run) == before[3]  # the message as it was before the summary
        rewinder(run).rewind(point_for(run, "turn 2"), code=False, conversation=True)
        assert history(run) == before[1]
    finally:
        run.close()


def test_summarizing_up_to_an_interrupted_turn_with_thinking_closes_its_loop(
        simulator: Simulator, isolated_home: Path, project: Path) -> None:
    """The kept turn was stopped while its call ran: its call and result stay in the history
    with the typed text after them, so the wire sees an open tool loop. The summary takes its
    thinking (bound to the history replaced), so the loop is closed as plain text, or the next
    request would be refused for a loop whose call does not start with thinking."""
    simulator.policy = ScriptedPolicy([
        Reply("First, thought through.", thinking="reasoning one"),
        Reply("Waiting.", [ToolCall("run_shell", {"command": "sleep 30"})], thinking="a wait"),
    ], final=Reply("Understood."))
    run = Run(simulator, "anthropic", isolated_home, project, context_window=200_000,
              thinking_tokens=2048)
    try:
        run.start()
        run.turn("turn 1: think")
        run.stopped_turn("turn 2: wait")
        assert run.agent.conversation.messages[-1].tool_results  # the interrupted result

        run.run(rewinder(run).summarize(point_for(run, "turn 2"), up_to=True))
        run.turn("turn 3: go on")

        refused = [(r.status, r.error) for r in simulator.requests if r.status != 200]
        assert refused == []
        kept = sent(run.model_requests()[-1])
        assert "[tool call run_shell" in str(kept) and "tool_use" not in str(kept)
        resumed = load_session(run.agent.transcript.path)
        assert resumed.warnings == []
    finally:
        run.session.shells.stop_all(grace=0.5)
        run.close()
