"""Cache diagnostics: the simulator answers as the Messages API does, the agent records
each miss with the edit that caused it, and /cost's line sums them up."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import pytest

from mini_claude.context.cache_misses import CacheMissLog
from mini_claude.protocol import CacheMiss
from mini_claude.simulator import Reply, ScriptedPolicy, SimClock, Simulator, ToolCall
from tests.support.reliability import (
    closing_sessions,
    finished_text,
    make_project,
    session_settings,
    start_session,
    turn,
)

SYSTEM = [{"type": "text", "text": "You are a careful assistant. " * 80}]


def _ask(client: Any, messages: list[dict[str, Any]], previous: str | None,
         system: list[dict[str, Any]] = SYSTEM) -> Any:
    return client.messages.create(
        model="sim-model", max_tokens=100, system=system, messages=messages,
        diagnostics={"previous_message_id": previous},
    )


def test_simulator_reports_where_the_prefix_departed(simulator: Simulator) -> None:
    client = anthropic.Anthropic(api_key="k", base_url=simulator.anthropic_base_url, max_retries=0)
    history: list[dict[str, Any]] = [{"role": "user", "content": "first question " * 50}]
    first = _ask(client, history, None)
    assert first.diagnostics is None  # opting in: nothing to compare yet

    history += [{"role": "assistant", "content": "Done."}, {"role": "user", "content": "next"}]
    appended = _ask(client, history, first.id)
    assert appended.diagnostics is None  # only appended: the earlier prefix is intact

    edited = [{"role": "user", "content": "first question, edited"}, *history[1:]]
    changed = _ask(client, edited, appended.id)
    reason = changed.diagnostics.cache_miss_reason
    assert reason.type == "messages_changed"
    assert 0 < reason.cache_missed_input_tokens <= simulator.requests[1].prompt_tokens

    other_system = _ask(client, edited, changed.id, [{"type": "text", "text": "Other."}])
    assert other_system.diagnostics.cache_miss_reason.type == "system_changed"
    lost = _ask(client, edited, "msg_unknown")
    assert lost.diagnostics.cache_miss_reason.type == "previous_message_not_found"
    assert [r.cache_miss["type"] if r.cache_miss else None for r in simulator.requests] == [
        None, None, "messages_changed", "system_changed", "previous_message_not_found"
    ]
    client.close()


def test_a_malformed_diagnostics_object_is_a_400(simulator: Simulator) -> None:
    client = anthropic.Anthropic(api_key="k", base_url=simulator.anthropic_base_url, max_retries=0)
    with pytest.raises(anthropic.BadRequestError, match="previous_message_id"):
        client.messages.create(
            model="sim-model", max_tokens=10, messages=[{"role": "user", "content": "hi"}],
            extra_body={"diagnostics": {"previous_message_id": 7}},
        )
    client.close()


def test_log_charges_misses_to_the_edits_before_them() -> None:
    log = CacheMissLog()
    assert log.summary() == "cache misses: the server sent no cache diagnostics"
    assert log.observe(None, diagnosed=True) is None
    log.note_edit("snip")
    assert log.observe(CacheMiss("messages_changed", 30_000), diagnosed=True) is not None
    log.note_edit("budget")
    log.observe(CacheMiss("messages_changed", 11_000), diagnosed=True)
    log.note_edit("compaction (auto)")
    log.observe(CacheMiss("messages_changed", 500), diagnosed=True)
    log.observe(CacheMiss("unavailable"), diagnosed=True)  # no diagnosis: not a miss
    log.observe(CacheMiss("system_changed", 100), diagnosed=True)
    assert log.summary() == (
        "4 cache misses: 2 after history edits, 1 after compactions, 1 unexplained, "
        "41.6k tokens re-written"
    )


def test_a_tier_edit_shows_up_as_a_recorded_miss(tmp_path: Path, simulator: Simulator) -> None:
    """Microcompact after an idle gap clears old results: the server sees an earlier
    message change, and the transcript says which edit it was."""
    project = make_project(tmp_path / "project")
    for n in range(6):
        (project / f"f{n}.txt").write_text(f"file {n}\n" * 200)
    simulator.policy = ScriptedPolicy(
        [Reply(tool_calls=[ToolCall("read_file", {"path": f"f{n}.txt"})]) for n in range(6)]
        + [Reply("Read them all."), Reply("Still here.")]
    )
    clock = SimClock()
    settings = session_settings(simulator, "anthropic", tmp_path / "home")
    with closing_sessions() as sessions:
        session = start_session(settings, project)
        sessions.append(session)
        session.agent.clock = clock.now
        assert finished_text(turn(session.agent, "read the files")) == "Read them all."
        assert session.agent.steps.cache_misses.misses == []
        clock.advance(settings.microcompact_idle_seconds + 60)
        assert finished_text(turn(session.agent, "anything else?")) == "Still here."
        misses = session.agent.steps.cache_misses.misses
        assert len(misses) == 1
        assert misses[0].reason == "messages_changed" and misses[0].after == ("microcompact",)
        assert misses[0].missed_tokens > 0
        assert session.agent.stats()["cache_misses"] == 1
        summary = session.agent.steps.cache_misses.summary()
        assert summary.startswith("1 cache miss: 1 after history")
        lines = [json.loads(x) for x in session.agent.transcript.path.read_text().splitlines()]
        recorded = [x for x in lines if x.get("kind") == "cache_miss"]
        assert recorded and recorded[0]["after"] == ["microcompact"]
    sent = [r.body.get("diagnostics") for r in simulator.requests]
    assert sent[0] == {"previous_message_id": None}
    assert all(d and d["previous_message_id"] for d in sent[1:])
