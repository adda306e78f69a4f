"""`!command` belongs to the session: its output waits for the next message that any front
end prepares, goes once, and nothing in it is read as an ``@`` mention. Over HTTP against the
simulator, on both wires."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mini_claude import events as ev
from mini_claude.permissions.asking import deny_all
from mini_claude.session.wiring import Session
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator
from tests.support.reliability import Provider, session_settings


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_shell_output_goes_before_the_next_prepared_message_once(
        simulator: Simulator, isolated_home: Path, tmp_path: Path, provider: Provider) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "secret.txt").write_text("NOT-FOR-THE-MODEL\n")
    (project / "notes.txt").write_text("NOTES-BODY\n")
    simulator.policy = ScriptedPolicy([Reply("Seen.")])
    settings = session_settings(simulator, provider, isolated_home, model="sim-model",
                                max_retries=0)

    async def run() -> tuple[list[ev.Event], str, str]:
        # deny_all: the user's own command is never asked about
        session = Session.open(settings, project, deny_all)
        session.start_new()
        try:
            events = [e async for e in session.run_user_shell("echo ran @secret.txt")]
            first = await session.prepare("what now? @notes.txt")
            second = await session.prepare("and then?")
            async for event in session.agent.turn(first.text, images=first.images):
                assert not isinstance(event, ev.TurnError), event
        finally:
            await session.aclose()
        return events, first.text, second.text

    events, first, second = asyncio.run(run())
    finished = [e for e in events if isinstance(e, ev.ToolFinished)]
    assert len(finished) == 1 and not finished[0].result.is_error
    assert first.startswith("[I ran a shell command myself: `echo ran @secret.txt`]")
    assert first.index("ran @secret.txt") < first.index("what now? @notes.txt")
    assert "NOTES-BODY" in first  # the user's own mention is read
    assert "NOT-FOR-THE-MODEL" not in first  # a word in the command's output is not
    assert second == "and then?"  # sent once
    sent = simulator.requests[-1].conversation
    assert sent is not None and "ran @secret.txt" in str(sent.messages[-1])
