"""The server decides the window, and the meter measures the way to the next summary:
end to end over the real SDKs against the simulator, both providers."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from mini_claude import events as ev
from mini_claude.cli import main
from mini_claude.models import known_window
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.simulator.models_api import CatalogEntry
from tests.support.printing import PROVIDERS, parse_lines, point_at
from tests.support.reliability import (
    closing_sessions,
    finished_text,
    make_project,
    session_settings,
    start_session,
    turn,
    watched,
)

# A model the table says has a 1M window (1,047,576 for gpt-4.1), on a server that takes 60,000.
TABLE_MODEL = {"anthropic": "claude-sonnet-5-5", "openai": "gpt-4.1"}
OTHER_MODEL = {"anthropic": "claude-opus-4-5", "openai": "gpt-4o"}
SERVER_WINDOW = 60_000
DOC_LINES = 700  # about 8k tokens per document


def write_documents(project: Path, count: int) -> None:
    for n in range(count):
        (project / f"doc{n}.txt").write_text("".join(
            f"doc {n} line {i}: the parser reads tokens and builds a tree of nodes\n"
            for i in range(DOC_LINES)
        ))


def reading_turns(count: int) -> ScriptedPolicy:
    steps: list[Reply] = []
    for n in range(count):
        steps.append(Reply(text=f"Reading doc{n}.",
                           tool_calls=[ToolCall("read_file", {"path": f"doc{n}.txt"})]))
        steps.append(Reply(text=f"doc{n} is about the parser."))
    return ScriptedPolicy(steps)


def refusals(sim: Simulator, *, side: bool = True) -> int:
    """Requests the server refused; with ``side`` off the loop's own calls only."""
    return sum(1 for r in sim.requests if r.status == 400 and (side or not r.is_side_request))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_server_with_a_smaller_window_refuses_at_most_once(
    tmp_path: Path, provider: str
) -> None:
    model = TABLE_MODEL[provider]
    assert (known_window(model) or 0) > 900_000
    project = make_project(tmp_path / "project")
    write_documents(project, 14)
    home = tmp_path / "home"
    with Simulator(reading_turns(14), context_window=SERVER_WINDOW) as sim, \
            closing_sessions() as sessions:
        # The threshold at its share of the 1M window the table claims (a raised cap), so the
        # history outgrows the server's window and the refusal is what teaches it.
        settings = session_settings(sim, provider, home, model=model,  # type: ignore[arg-type]
                                    autocompact_max_tokens=1_000_000)
        session = start_session(settings, project)
        sessions.append(session)
        for n in range(14):
            assert finished_text(turn(session.agent, f"read doc{n}")) == (
                f"doc{n} is about the parser.")
        # The first refusal taught the window; none came after. It may be of a notes update
        # sent beside the loop's call (held back from a summary for it), or of both.
        assert refusals(sim, side=False) <= 1 and 1 <= refusals(sim) <= 2
        agent = session.agent
        assert agent.settings.window == SERVER_WINDOW
        assert agent.status().window == SERVER_WINDOW
        assert "the server's rejection" in agent.settings.window_source
        assert str(SERVER_WINDOW) in agent.settings.window_source
        assert agent.steps.compactions >= 2  # the session went on, under the real window
        other = OTHER_MODEL[provider]
        session.switch_model(other)  # another model: its own window, not this one's refusal
        assert session.agent.settings.window == known_window(other)
        session.switch_model(model)  # back: the refusal is remembered (cached)
        assert session.agent.settings.window == SERVER_WINDOW

        # The next session starts with the window the server enforced: no refusal at all.
        served = len(sim.requests)
        sim.policy = reading_turns(4)
        again = start_session(settings, project)
        sessions.append(again)
        assert again.agent.settings.window == SERVER_WINDOW
        for n in range(4):
            finished_text(turn(again.agent, f"read doc{n} again"))
        assert all(r.status == 200 for r in sim.requests[served:])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_model_in_the_table_takes_the_window_its_models_api_reports(
    tmp_path: Path, provider: str
) -> None:
    model = TABLE_MODEL[provider]
    with Simulator() as sim, closing_sessions() as sessions:
        sim.catalog[model] = CatalogEntry(model, 48_000)
        settings = session_settings(sim, provider, tmp_path / "home",  # type: ignore[arg-type]
                                    model=model)
        session = start_session(settings, make_project(tmp_path / "project"))
        sessions.append(session)
        assert session.model_lookup is not None
        facts = session.model_lookup.wait(timeout=20)
        assert facts is not None and facts.window == 48_000
        assert finished_text(turn(session.agent, "hello"))
        assert session.agent.settings.window == 48_000
        assert "Models API" in session.agent.settings.window_source \
            or "model list" in session.agent.settings.window_source
        assert len(sim.model_requests) == 1


def long_documents(project: Path, count: int) -> None:
    """Documents of about 13k tokens each: two of them fill most of a 60k window."""
    for n in range(count):
        (project / f"long{n}.txt").write_text("".join(
            f"long {n} line {i}: the parser reads tokens and builds a tree of nodes, "
            "then the checker walks the tree again\n"
            for i in range(2_000)
        ))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_models_api_answer_that_arrives_mid_turn_governs_the_next_request(
    tmp_path: Path, provider: str
) -> None:
    """The answer comes after the turn started and before the reads come back: the
    request that carries them, and every one after, stays inside the reported window."""
    model = TABLE_MODEL[provider]
    project = make_project(tmp_path / "project")
    long_documents(project, 6)
    policy = ScriptedPolicy([
        Reply(text="Reading three.", tool_calls=[
            ToolCall("read_file", {"path": f"long{n}.txt"}) for n in range(3)
        ]),
        Reply(text="Reading three more.", tool_calls=[
            ToolCall("read_file", {"path": f"long{n}.txt"}) for n in range(3, 6)
        ]),
        Reply(text="The six documents describe the parser."),
    ])
    with Simulator(policy, context_window=SERVER_WINDOW) as sim, \
            closing_sessions() as sessions:
        sim.catalog[model] = CatalogEntry(model, SERVER_WINDOW)
        sim.models_hold = threading.Event()
        settings = session_settings(sim, provider, tmp_path / "home",  # type: ignore[arg-type]
                                    model=model)
        session = start_session(settings, project)
        sessions.append(session)
        lookup = session.model_lookup
        assert lookup is not None and lookup.facts is None

        def answer_once_the_turn_runs(event: ev.Event) -> None:
            hold = sim.models_hold
            if isinstance(event, ev.ModelCallStarted) and hold and not hold.is_set():
                hold.set()
                facts = lookup.wait(timeout=20)
                assert facts is not None and facts.window == SERVER_WINDOW

        events = watched(session.agent, session.agent.turn("read the long documents"),
                         answer_once_the_turn_runs)
        assert finished_text(events) == "The six documents describe the parser."
        sizes = [r.prompt_tokens for r in sim.requests]
        assert max(sizes) > SERVER_WINDOW // 3  # the reads did arrive in full
        assert all(size <= SERVER_WINDOW for size in sizes), sizes
        assert refusals(sim) == 0
        assert session.agent.settings.window == SERVER_WINDOW
        assert session.agent.status().window == SERVER_WINDOW


@pytest.mark.parametrize("provider", PROVIDERS)
def test_stream_json_usage_lines_measure_against_the_auto_compact_threshold(
    provider: str,
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_documents(project, 3)
    simulator.policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("read_file", {"path": f"doc{n}.txt"}) for n in range(3)]),
        Reply(text="Read them."),
    ])
    point_at(simulator, provider, monkeypatch)
    monkeypatch.setenv("MINI_CLAUDE_MODEL", TABLE_MODEL[provider])
    monkeypatch.setenv("MINI_CLAUDE_AUTOCOMPACT_MAX_TOKENS", "60000")  # a cap a user raised
    code = main(["-p", "read the docs", "--output-format", "stream-json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    usage = [line for line in parse_lines(out)
             if line.get("type") == "mini_claude" and line.get("subtype") == "usage"]
    assert usage
    last = usage[-1]
    assert last["autocompact_at"] == 60_000
    assert last["context_pct"] == round(last["context_tokens"] / 60_000 * 100)
    assert last["context_pct"] >= 25  # about 24k of 60k: plainly on the way to a summary
    assert last["context_tokens"] / last["effective_window"] < 0.05  # though 3% of the window


def test_a_learnt_window_survives_a_later_models_api_answer(tmp_path: Path) -> None:
    from mini_claude.model_facts import FactsCache, ModelFacts, remember_rejection
    from mini_claude.settings import Settings

    settings = Settings(model="claude-sonnet-5-5", home=tmp_path)
    remember_rejection(settings, SERVER_WINDOW, "the server's rejection (…)")
    FactsCache(tmp_path).store(settings, ModelFacts("claude-sonnet-5-5", 1_000_000))
    cached = FactsCache(tmp_path).load(settings)
    assert cached is not None and cached.window == SERVER_WINDOW and cached.rejected
    stored = json.loads((tmp_path / "models.json").read_text())
    assert len(stored) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_models_api_answer_mid_turn_leaves_a_commands_own_model_alone(
    tmp_path: Path, provider: str
) -> None:
    """The answer is about the session's model: a command that runs another model for its
    turn keeps that model for every request of the turn, and the window follows after."""
    from mini_claude.session.custom_commands import prompt_events

    model = TABLE_MODEL[provider]
    project = make_project(tmp_path / "project")
    (project / ".claude" / "commands").mkdir(parents=True)
    (project / ".claude" / "commands" / "review.md").write_text(
        f"---\nmodel: {OTHER_MODEL[provider]}\n---\nReview pkg/core.py.\n")
    policy = ScriptedPolicy([
        Reply(text="Reading.", tool_calls=[ToolCall("read_file", {"path": "pkg/core.py"})]),
        Reply(text="It adds."),
        Reply(text="Hello."),
    ])
    with Simulator(policy) as sim, closing_sessions() as sessions:
        sim.catalog[model] = CatalogEntry(model, SERVER_WINDOW)
        sim.models_hold = threading.Event()
        settings = session_settings(sim, provider, tmp_path / "home",  # type: ignore[arg-type]
                                    model=model)
        session = start_session(settings, project)
        sessions.append(session)
        lookup = session.model_lookup
        assert lookup is not None

        def answer_once_the_turn_runs(event: ev.Event) -> None:
            hold = sim.models_hold
            if isinstance(event, ev.ModelCallStarted) and hold and not hold.is_set():
                hold.set()
                assert lookup.wait(timeout=20) is not None

        events = watched(session.agent, prompt_events(session, "/review"),
                         answer_once_the_turn_runs)
        assert finished_text(events) == "It adds."
        assert [r.conversation.model for r in sim.requests if r.conversation] == [
            OTHER_MODEL[provider]] * 2
        assert finished_text(turn(session.agent, "hi")) == "Hello."
        last = sim.requests[-1].conversation
        assert last is not None and last.model == model
        assert session.agent.settings.window == SERVER_WINDOW
