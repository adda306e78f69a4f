"""A custom command's ``model:`` is a real change of model for its turn: the meter the status
bar and /context read (window, compaction point) follows it, and comes back after it.
Over HTTP against the simulator, on both wires."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mini_claude import events as ev
from mini_claude.models import window_for_model
from mini_claude.permissions.asking import allow_all
from mini_claude.providers import create_provider
from mini_claude.session.custom_commands import prompt_events
from mini_claude.session.wiring import Session
from mini_claude.simulator import Simulator
from tests.support.reliability import Provider, session_settings

# A command model whose window differs from the session model's ("sim-" rows: 200K).
WIDE_MODEL = {"anthropic": "claude-opus-4-6", "openai": "gpt-4o"}


async def statuses(session: Session, prompt: str) -> list[ev.ModelCallStarted]:
    calls: list[ev.ModelCallStarted] = []
    async for event in prompt_events(session, prompt):
        assert not isinstance(event, ev.TurnError), event
        if isinstance(event, ev.ModelCallStarted):
            calls.append(event)
    return calls


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_the_meter_follows_a_commands_model_and_comes_back(
        simulator: Simulator, isolated_home: Path, tmp_path: Path, provider: Provider) -> None:
    project = tmp_path / "project"
    commands = project / ".claude" / "commands"
    commands.mkdir(parents=True)
    wide = WIDE_MODEL[provider]
    (commands / "wide.md").write_text(f"---\nmodel: {wide}\n---\nsummarize the project\n")
    settings = session_settings(simulator, provider, isolated_home, model="sim-model",
                                max_retries=0)
    base_window = settings.window
    assert window_for_model(wide) != base_window

    async def run() -> tuple[list[ev.ModelCallStarted], list[ev.ModelCallStarted], int]:
        session = Session(settings, project, create_provider(settings), allow_all)
        agent = session.start_new()
        try:
            during = await statuses(session, "/wide")
            after = await statuses(session, "and now?")
            return during, after, agent.status().window
        finally:
            await agent.close()
            agent.transcript.close()
            await session.provider.close()

    during, after, at_rest = asyncio.run(run())
    sent = [r.body.get("model") for r in simulator.requests if not r.is_notes_request]
    assert sent == [wide, "sim-model"]
    assert [c.status.window for c in during] == [window_for_model(wide)]
    assert during[0].status.effective_window < window_for_model(wide)
    assert [c.status.window for c in after] == [base_window]
    assert at_rest == base_window
