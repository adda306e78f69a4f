"""A summary that shrinks the context is kept even when it misses the headroom target:
end to end over the real SDKs against the simulator, both providers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_claude import events as ev
from mini_claude.simulator import Reply, ScriptedPolicy, SimConversation, Simulator
from tests.support.compact import words
from tests.support.printing import PROVIDERS
from tests.support.reliability import (
    closing_sessions,
    finished_text,
    make_project,
    of_kind,
    session_settings,
    start_session,
    turn,
)

WINDOW = {"context_window": 12_000, "output_reserve": 1_000, "max_retries": 1}
LONG_ANSWER = "FACT-9 the parser keeps its state per file. " + " ".join(
    f"Step {i}: the module reads its input, checks the header and stores the rows."
    for i in range(300)
)


class SummaryOfSize:
    """Answers summary requests itself with a summary of about ``tokens`` tokens."""

    handles_summary_requests = True

    def __init__(self, tokens: int, replies: ScriptedPolicy) -> None:
        self.tokens = tokens
        self.replies = replies
        self.summaries = 0

    def respond(self, conv: SimConversation) -> Reply:
        if conv.is_summary_request:
            self.summaries += 1
            return Reply("## Current state and next step\n" + words(self.tokens))
        return self.replies.respond(conv)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    yield make_project(tmp_path / "project")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_summary_a_little_over_the_target_is_kept_not_thrown_away(
    provider: str, project: Path, tmp_path: Path
) -> None:
    replies = ScriptedPolicy([Reply("Hi."), Reply(LONG_ANSWER), Reply(LONG_ANSWER)],
                             final=Reply("Answered."))
    policy = SummaryOfSize(2_500, replies)
    with Simulator(policy) as sim, closing_sessions() as sessions:
        # The summary call's acceptance is under test: session notes would stand in for it.
        settings = session_settings(sim, provider, tmp_path / "home",  # type: ignore[arg-type]
                                    **WINDOW, session_memory=False)
        session = start_session(settings, project)
        sessions.append(session)
        agent = session.agent
        finished_text(turn(agent, "hello"))
        finished_text(turn(agent, "explain the parser"))
        finished_text(turn(agent, "and the writer"))
        assert agent.status().compaction_due
        target = agent.steps.compactor.limits().target_tokens

        events = turn(agent, "and now?")
        assert finished_text(events) == "Answered."
        assert not of_kind(events, ev.CompactionFailed)
        (done,) = of_kind(events, ev.CompactionFinished)
        assert done.tokens_after > target  # short of the headroom target ...
        assert done.tokens_after < done.tokens_before  # ... but smaller: kept
        assert policy.summaries == 1
        status = agent.status()
        assert not status.compaction_due and status.autocompact_hold is None
