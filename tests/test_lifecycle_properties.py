"""The whole life of a session, on generated sessions: nothing a session wrote can break it.

Each example plays a session over HTTP against the simulator (real SDK clients, strict
validation: a request the real API would refuse fails the example) that mixes every block
and record kind the product writes: text, images read by a tool and attached by the user,
tool results with and without images (and steering messages beside them), thinking and
redacted thinking, summaries, session
notes, todo and plan records, checkpoints, rewinds, forks, background-shell ids and
interrupted results. Then it goes through save, load, resume, fork, a rewind to every
point, a compaction and a resume again, and at each step:

- no record the product wrote is reported damaged (no warning on load or resume);
- the resumed history equals the history before, message for message;
- every request of the session was accepted.

``MINI_CLAUDE_FUZZ_EXAMPLES`` raises the number of examples (``make fuzz``).
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from PIL import Image

from mini_claude import events as ev
from mini_claude.conversation import message_to_dict, validate
from mini_claude.session.rewind import RewindError
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.tools.images import load_image
from mini_claude.transcript import load_session
from tests.support.agent import PROVIDERS, Run
from tests.support.rewind import rewinder

FUZZ_ENV = os.environ.get("MINI_CLAUDE_FUZZ_EXAMPLES")
EXAMPLES = max(3, int(FUZZ_ENV) // 200) if FUZZ_ENV else 3  # each example is a real session
LIFECYCLE = hypothesis_settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    phases=tuple(Phase) if FUZZ_ENV else (Phase.explicit, Phase.generate),
)

# What a step of the session does; every kind the product writes is among them.
STEPS = (
    "text", "read", "image", "attach", "write", "todo", "shell", "thinking", "redacted",
    "compact", "notes", "plan", "interrupt", "rewind", "fork", "steer",
    "summarize_from", "summarize_up_to",
)
# The steps every example holds at least once, so each example covers the block kinds.
ALWAYS = ("image", "write", "thinking", "compact", "rewind", "steer", "summarize_from",
          "summarize_up_to")


def _png() -> bytes:
    image = Image.new("RGB", (40, 30), (250, 200, 10))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


@st.composite
def sessions(draw: st.DrawFn) -> list[str]:
    extra = draw(st.lists(st.sampled_from(STEPS), min_size=1, max_size=5))
    return draw(st.permutations([*ALWAYS, *extra]))


def _replies(step: str, number: int) -> list[Reply]:
    """What the model answers in a step that is a turn (none for the other steps)."""
    done = Reply(f"Step {number} is done.")
    calls = {
        "read": ToolCall("read_file", {"path": "a.txt"}),
        "steer": ToolCall("read_file", {"path": "a.txt"}),
        "image": ToolCall("read_file", {"path": "shot.png"}),
        "write": ToolCall("write_file", {"path": f"out{number}.txt", "content": f"{number}\n"}),
        "todo": ToolCall("todo_write", {"todos": [
            {"content": f"task {number}", "status": "in_progress",
             "activeForm": f"doing task {number}"}]}),
        "shell": ToolCall("run_shell", {"command": "echo started", "run_in_background": True}),
    }
    if step == "interrupt":  # stopped while it runs: the answer after it is never asked for
        return [Reply(f"Step {number}: waiting.", [ToolCall("run_shell",
                                                            {"command": "sleep 30"})])]
    if step in calls:
        return [Reply(f"Step {number}: a call.", [calls[step]]), done]
    if step == "thinking":
        return [Reply(f"Step {number}, thought through.", thinking=f"reasoning {number}")]
    if step == "redacted":
        return [Reply(f"Step {number}, thought in secret.", thinking="hidden",
                      redacted_thinking=True)]
    if step in ("text", "attach"):
        return [done]
    return []


def _history(run: Run) -> list[dict[str, Any]]:
    return [message_to_dict(m) for m in run.agent.conversation.messages]


def _accepted(sim: Simulator) -> None:
    refused = [(r.status, r.error) for r in sim.requests if r.status != 200]
    assert not refused, refused


def _no_damage(run: Run) -> None:
    loaded = load_session(run.agent.transcript.path)
    assert loaded.warnings == [], loaded.warnings
    assert validate(run.agent.conversation.messages) == []


class Life:
    """One generated session and the runs that live it, on one provider."""

    def __init__(self, sim: Simulator, provider: str, home: Path, project: Path) -> None:
        self.sim, self.provider, self.home, self.project = sim, provider, home, project
        self.runs: list[Run] = []

    def run(self) -> Run:
        thinking: dict[str, Any] = {"thinking_tokens": 2048} if self.provider == "anthropic" else {}
        made = Run(self.sim, self.provider, self.home, self.project, context_window=200_000,
                   **thinking)
        self.runs.append(made)
        return made

    def reopen(self, current: Run, *, fork: bool = False) -> Run:
        """Close the session and continue it (or a fork of it) in a new process's stead."""
        before = _history(current)
        self.close(current)
        resumed = self.run()
        resumed.session.resume(current.session.session_id, fork=fork)
        assert resumed.session.warnings == [], resumed.session.warnings
        assert _history(resumed) == before
        return resumed

    def close(self, run: Run) -> None:
        run.session.shells.stop_all(grace=0.5)
        run.close()

    def close_all(self) -> None:
        for run in self.runs:
            self.close(run)


def _play(life: Life, run: Run, steps: list[str], choices: st.DataObject) -> Run:
    for number, step in enumerate(steps, 1):
        if step == "attach":
            image = load_image(life.project / "shot.png", "shot.png", run.settings)
            run.run(_drain(run.agent.turn(f"step {number}: look at this", images=[image])))
        elif step == "interrupt":
            _interrupt(run, number)
        elif step == "steer":
            run.run(_steered(run, number))
        elif _replies(step, number):
            run.turn(f"step {number}: {step}")
        elif step == "compact":
            run.compact()
        elif step == "notes":
            run.agent.transcript.event("session_notes", text=f"# Notes\nstep {number}",
                                       covered=len(run.agent.conversation), history_tokens=100)
        elif step == "plan":
            run.agent.transcript.event("plan_approved", plan=f"1. step {number}",
                                       mode="default")
        elif step == "rewind":
            points = rewinder(run).points()
            if points:
                point = choices.draw(st.sampled_from(points), label="rewind to")
                rewinder(run).rewind(point, code=True, conversation=True)
        elif step == "fork":
            run = life.reopen(run, fork=True)
        elif step.startswith("summarize"):
            _summarize(run, choices, up_to=step == "summarize_up_to")
        _accepted(life.sim)
        _no_damage(run)
    return run


def _summarize(run: Run, choices: st.DataObject, *, up_to: bool) -> None:
    """Summarize from (or up to) a message the user typed; a message already inside a
    summary, or nothing to summarize, is refused in one line and changes nothing."""
    points = [p for p in rewinder(run).points() if p.kind == "prompt"]
    if not points:
        return
    point = choices.draw(st.sampled_from(points), label="summarize at")
    before = _history(run)
    try:
        run.run(rewinder(run).summarize(point, up_to=up_to, instructions="keep the steps"))
    except RewindError:
        assert _history(run) == before


async def _drain(events: Any) -> None:
    async for _ in events:
        pass


async def _steered(run: Run, number: int) -> None:
    """A turn the user steers while its tool call runs (a `steering` record and text blocks
    beside the tool result)."""
    async for event in run.agent.turn(f"step {number}: steer"):
        if isinstance(event, ev.ToolStarted):
            run.agent.steer(f"steering {number}: look at a.txt again")


def _interrupt(run: Run, number: int) -> None:
    """A turn stopped while its tool call runs (Esc), as the user stops one."""
    run.stopped_turn(f"step {number}: wait")
    results = run.agent.conversation.messages[-1].tool_results
    assert results and all(r.is_error for r in results), "the call was not interrupted"


@contextmanager
def _world() -> Iterator[tuple[Simulator, Path, Path]]:
    with tempfile.TemporaryDirectory(prefix="mini-claude-life-") as folder, Simulator() as sim:
        project = Path(folder) / "project"
        project.mkdir()
        (project / "a.txt").write_text("alpha\n")
        (project / "shot.png").write_bytes(_png())
        yield sim, Path(folder) / "home", project


@pytest.mark.timeout(600)
@pytest.mark.parametrize("provider", PROVIDERS)
@LIFECYCLE
@given(steps=sessions(), choices=st.data())
def test_every_kind_of_record_survives_the_whole_life_of_a_session(
        provider: str, steps: list[str], choices: st.DataObject) -> None:
    with _world() as (sim, home, project):
        replies = [r for n, s in enumerate(steps, 1) for r in _replies(s, n)]
        sim.policy = ScriptedPolicy(replies, final=Reply("Understood."))
        life = Life(sim, provider, home, project)
        try:
            run = life.run()
            run.start()
            run = _play(life, run, steps, choices)
            run = life.reopen(run)  # save, load, resume
            run.turn("after the resume")
            run = life.reopen(run, fork=True)
            run.turn("in the fork")
            _accepted(sim)
            for point in rewinder(run).points():  # every point, each sent on from there
                rewinder(run).rewind(point, code=False, conversation=True)
                _no_damage(run)
                run.turn("sent on from a rewound point")
                _accepted(sim)
            run.compact()
            run = life.reopen(run)
            run.turn("after the last resume")
            _accepted(sim)
            _no_damage(run)
        finally:
            life.close_all()
