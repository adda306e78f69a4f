"""Extended thinking: the simulator refuses what the API refuses, and the agent never
sends it anything to refuse: blocks kept exactly, loops kept intact or closed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import pytest

from mini_claude import events as ev
from mini_claude.context.thinking import close_thinking_loop, thinking_config, thinking_loop_open
from mini_claude.conversation import (
    Conversation,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    message_from_dict,
    message_to_dict,
    user_text,
    validate,
)
from mini_claude.settings import Settings
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.transcript import load_session
from tests.support.reliability import (
    closing_sessions,
    finished_text,
    make_project,
    of_kind,
    session_settings,
    start_session,
    turn,
)

TOOLS = [{"name": "read_file", "description": "Read a file.",
          "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]
THINK = {"type": "enabled", "budget_tokens": 1024}


def _client(sim: Simulator) -> Any:
    """Typed loosely: these tests send raw, sometimes deliberately wrong, request bodies."""
    return anthropic.Anthropic(api_key="k", base_url=sim.anthropic_base_url, max_retries=0)


def _loop(sim: Simulator) -> tuple[Any, list[dict[str, Any]]]:
    """One tool call answered: the history a second request of the loop sends."""
    sim.policy = ScriptedPolicy([
        Reply("Reading.", [ToolCall("read_file", {"path": "a.txt"})], thinking="I should read a."),
        Reply("Done."),
    ])
    client = _client(sim)
    history: list[dict[str, Any]] = [{"role": "user", "content": "read a.txt"}]
    first = client.messages.create(model="sim-model", max_tokens=2048, messages=history,
                                   tools=TOOLS, thinking=THINK)
    content = [block.model_dump(exclude_none=True) for block in first.content]
    assert [b["type"] for b in content] == ["thinking", "text", "tool_use"]
    assert content[0]["thinking"] == "I should read a." and content[0]["signature"]
    history.append({"role": "assistant", "content": content})
    history.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": content[2]["id"], "content": "contents of a"}]})
    return client, history


def _send(client: Any, history: list[dict[str, Any]]) -> Any:
    return client.messages.create(model="sim-model", max_tokens=2048, messages=history,
                                  tools=TOOLS, thinking=THINK)


def test_a_tool_loop_with_its_thinking_intact_is_accepted(simulator: Simulator) -> None:
    client, history = _loop(simulator)
    assert _send(client, history).content[-1].text == "Done."


def test_a_missing_thinking_block_in_a_tool_loop_is_the_apis_400(simulator: Simulator) -> None:
    client, history = _loop(simulator)
    history[1]["content"] = history[1]["content"][1:]
    with pytest.raises(anthropic.BadRequestError) as info:
        _send(client, history)
    assert ("messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
            "`text`. When `thinking` is enabled, a final `assistant` message must start with a "
            "thinking block") in str(info.value)


def test_a_modified_thinking_block_is_refused(simulator: Simulator) -> None:
    client, history = _loop(simulator)
    history[1]["content"][0]["thinking"] += " (edited)"
    with pytest.raises(anthropic.BadRequestError, match="Invalid `signature` in `thinking` block"):
        _send(client, history)


def test_an_edit_before_a_thinking_block_binds_it_to_another_conversation(
    simulator: Simulator,
) -> None:
    client, history = _loop(simulator)
    history[0]["content"] = "read a.txt please"
    with pytest.raises(anthropic.BadRequestError, match="bound to a different conversation"):
        _send(client, history)


def test_thinking_rules_apply_only_when_thinking_is_on(simulator: Simulator) -> None:
    client, history = _loop(simulator)
    history[1]["content"] = history[1]["content"][1:]
    reply = client.messages.create(model="sim-model", max_tokens=100, messages=history,
                                   tools=TOOLS)
    assert reply.content[0].type == "text"


def test_budget_must_be_below_max_tokens(simulator: Simulator) -> None:
    with pytest.raises(anthropic.BadRequestError, match="must be greater than"):
        _client(simulator).messages.create(
            model="sim-model", max_tokens=1024, thinking=THINK,
            messages=[{"role": "user", "content": "hi"}],
        )


# ---- settings ---------------------------------------------------------------------------


def test_thinking_config_follows_the_settings_and_the_model() -> None:
    assert thinking_config(Settings(model="claude-sonnet-4-5")) is None
    budget = thinking_config(Settings(model="claude-sonnet-4-5", thinking_tokens=4096))
    assert budget is not None and (budget.budget_tokens, budget.adaptive) == (4096, False)
    adaptive = thinking_config(Settings(model="claude-sonnet-5-5", thinking_tokens=4096,
                                        effort="high"))
    assert adaptive is not None and adaptive.adaptive and adaptive.effort == "high"
    reported = Settings(model="claude-nova-9", thinking_tokens=2048, reported_thinking="adaptive")
    assert thinking_config(reported) == thinking_config(
        Settings(model="claude-opus-5-5", thinking_tokens=2048))
    openai = thinking_config(Settings(provider="openai", model="gpt-5.6-terra",
                                      reasoning_effort="low"))
    assert openai is not None and openai.effort == "low"


# ---- the agent --------------------------------------------------------------------------


def test_thinking_round_trips_exactly_through_agent_and_transcript(
    tmp_path: Path, simulator: Simulator
) -> None:
    project = make_project(tmp_path / "project")
    simulator.policy = ScriptedPolicy([
        Reply("Looking.", [ToolCall("read_file", {"path": "README.md"})],
              thinking="First the README: ünïcode and  spaces\n kept."),
        Reply("", [ToolCall("list_files", {"path": "."})], redacted_thinking=True),
        Reply("All read."),
    ])
    settings = session_settings(simulator, "anthropic", tmp_path / "home", thinking_tokens=2048)
    with closing_sessions() as sessions:
        session = start_session(settings, project)
        sessions.append(session)
        events = turn(session.agent, "look around")
        assert finished_text(events) == "All read."
        shown = of_kind(events, ev.Thinking)
        assert shown[0].chars == len("First the README: ünïcode and  spaces\n kept.")
        assert shown[1].redacted
        sent = [r.body for r in simulator.requests]
        assert all(b["thinking"] == {"type": "enabled", "budget_tokens": 2048} for b in sent)
        assert all(b["max_tokens"] > 2048 for b in sent)
        first_reply = simulator.requests[1].body["messages"][1]["content"][0]
        answered = [m for m in session.agent.conversation.messages if m.role == "assistant"]
        block = answered[0].blocks[0]
        assert isinstance(block, ThinkingBlock)
        assert (block.thinking, block.signature) == (
            first_reply["thinking"], first_reply["signature"])
        saved = load_session(session.agent.transcript.path).conversation.messages
        assert [message_to_dict(m) for m in saved] == [
            message_to_dict(m) for m in session.agent.conversation.messages]
    assert all(r.status == 200 for r in simulator.requests), [r.error for r in simulator.requests]


def test_adaptive_thinking_and_effort_for_a_model_that_thinks_adaptively(
    tmp_path: Path, simulator: Simulator
) -> None:
    project = make_project(tmp_path / "project")
    settings = session_settings(simulator, "anthropic", tmp_path / "home", model="sim-adaptive",
                                thinking_tokens=2048, effort="low")
    with closing_sessions() as sessions:
        session = start_session(settings, project)
        sessions.append(session)
        assert finished_text(turn(session.agent, "hello"))
    body = simulator.requests[0].body
    assert body["thinking"] == {"type": "adaptive"}
    assert body["max_tokens"] > 2048  # room to think
    assert body["output_config"] == {"effort": "low"}
    assert "temperature" not in body


def test_openai_reasoning_tokens_are_output_tokens_in_the_costs(
    tmp_path: Path, simulator: Simulator
) -> None:
    project = make_project(tmp_path / "project")
    settings = session_settings(simulator, "openai", tmp_path / "home", reasoning_effort="high")
    with closing_sessions() as sessions:
        session = start_session(settings, project)
        sessions.append(session)
        assert finished_text(turn(session.agent, "hello"))
        usage = session.agent.costs.usage
    body = simulator.requests[0].body
    assert body["reasoning_effort"] == "high" and "temperature" not in body
    assert "max_completion_tokens" in body
    assert usage.thinking_tokens == 1024 and usage.output_tokens > 1024


# ---- closing a loop after a summary ---------------------------------------------------


def _open_loop() -> list[Message]:
    return [
        user_text("fix it"),
        Message("assistant", [ThinkingBlock("plan", "sig"), TextBlock("Reading."),
                              ToolUseBlock("t1", "read_file", {"path": "a.py"})]),
        Message("user", [ToolResultBlock("t1", "print(1)", tool_name="read_file")]),
    ]


def test_a_summary_inside_a_loop_closes_it_as_plain_text() -> None:
    messages = _open_loop()
    assert thinking_loop_open(messages)
    closed = close_thinking_loop(messages)
    assert closed is not None and not thinking_loop_open(closed)
    assert validate(closed) == []
    assert not any(isinstance(b, ThinkingBlock) for m in closed for b in m.blocks)
    assert "read_file" in closed[1].text and "print(1)" in closed[2].text
    assert not closed[1].tool_uses and not closed[2].tool_results


def test_typed_text_after_interrupted_results_keeps_the_loop_open() -> None:
    """The wire merges the results and the new text into one user message."""
    assert thinking_loop_open([*_open_loop(), user_text("go on")])


def test_clearing_thinking_is_replayed_on_resume(tmp_path: Path) -> None:
    from mini_claude.transcript import Transcript

    transcript = Transcript.create(tmp_path, "s1", {"cwd": "."})
    conversation = Conversation()
    for message in [*_open_loop()[:2],
                    Message("user", [ToolResultBlock("t1", "ok", tool_name="read_file")]),
                    Message("assistant", [ThinkingBlock("done", "s2"), TextBlock("Fixed.")]),
                    user_text("next")]:
        transcript.message(message)
        conversation.append(message)
    freed = conversation.drop_thinking()
    transcript.thinking_cleared(len(conversation.messages))
    transcript.close()
    assert freed == len("plan") + len("done")
    loaded = load_session(transcript.path)
    assert [message_to_dict(m) for m in loaded.conversation.messages] == [
        message_to_dict(m) for m in conversation.messages]
    assert json.loads(json.dumps(message_to_dict(loaded.original_messages[1])))["blocks"][0][
        "kind"] == "thinking"
    assert message_from_dict(message_to_dict(loaded.original_messages[1])).blocks[0] == (
        ThinkingBlock("plan", "sig"))


def _finished_turns() -> Conversation:
    return Conversation([
        user_text("fix it"),
        Message("assistant", [ThinkingBlock("plan " * 50, "sig"),
                              ToolUseBlock("t1", "read_file", {"path": "a.py"})]),
        Message("user", [ToolResultBlock("t1", "print(1)", tool_name="read_file")]),
        Message("assistant", [ThinkingBlock("done", "s2"), TextBlock("Fixed.")]),
        user_text("next"),
    ])


def test_clear_thinking_waits_for_a_cold_cache_or_an_edit() -> None:
    from mini_claude.context.thinking import ClearThinkingTier

    tier = ClearThinkingTier()
    warm = _finished_turns()
    before = warm.total_chars
    assert tier.run(warm, cache_cold=False, history_edited=False, chars_per_token=4.0) is None
    assert warm.total_chars == before  # the meter keeps counting it until then
    report = tier.run(warm, cache_cold=True, history_edited=False, chars_per_token=4.0)
    assert report is not None and report.tier == "clear_thinking"
    assert report.results_touched == 2 and report.chars_freed == len("plan " * 50) + 4
    assert "2 thinking blocks dropped" in report.describe()
    assert warm.total_chars == before - report.chars_freed
    assert not any(isinstance(b, ThinkingBlock) for m in warm for b in m.blocks)
    edited = _finished_turns()
    assert tier.run(edited, cache_cold=False, history_edited=True, chars_per_token=4.0)


def test_clear_thinking_never_touches_an_open_loop() -> None:
    from mini_claude.context.thinking import ClearThinkingTier

    loop = Conversation(_open_loop())
    assert ClearThinkingTier().run(loop, cache_cold=True, history_edited=True,
                                   chars_per_token=4.0) is None
    assert isinstance(loop.messages[1].blocks[0], ThinkingBlock)
