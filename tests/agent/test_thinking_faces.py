"""Thinking as the user sees it: a dim collapsed line in the REPL, /think, /cost's line,
and its own event in stream-json print mode."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from mini_claude.cli import main
from mini_claude.headless import load_schema
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.printing import point_cli_at
from tests.support.repl import ReplDriver, running_repl, sim_settings

THOUGHT = "Reading the notes first, then answering."


def test_repl_shows_thinking_collapsed_and_think_toggles_it(
    simulator: Simulator, isolated_home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("alpha\n")
    simulator.policy = ScriptedPolicy([
        Reply("Reading.", [ToolCall("read_file", {"path": "notes.txt"})], thinking=THOUGHT),
        Reply("alpha it is."),
        Reply("No thinking now."),
    ])

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("/think 2048")
        await repl.wait_for("thinking on, budget 2,048 tokens", after=mark)
        mark = await repl.submit("what is in the notes?")
        await repl.wait_for("alpha it is.", after=mark)
        assert f"✻ thinking… ({len(THOUGHT)} chars · ctrl+o to expand)" in repl.text[mark:]
        assert THOUGHT not in repl.text[mark:]  # collapsed: the length, not the text
        mark = await repl.submit("/expand")  # what Ctrl-O shows: the latest thinking, whole
        await repl.wait_for("── full result of thinking", after=mark)
        await repl.wait_for("deciding the next step", after=mark)
        mark = await repl.submit("/cost")
        await repl.wait_for("cache misses", after=mark)
        mark = await repl.submit("/think")
        await repl.wait_for("thinking off", after=mark)
        mark = await repl.submit("and now?")
        await repl.wait_for("No thinking now.", after=mark)

    async def run() -> None:
        async with running_repl(sim_settings(simulator, isolated_home), project) as repl:
            await scenario(repl)
            if not repl.task.done():
                assert await repl.exit() == 0

    asyncio.run(run())
    bodies = [r.body for r in simulator.requests]
    assert [b.get("thinking") for b in bodies] == [
        {"type": "enabled", "budget_tokens": 2048}, {"type": "enabled", "budget_tokens": 2048},
        None,
    ]
    assert all(r.status == 200 for r in simulator.requests)


def test_stream_json_emits_thinking_as_its_own_event(
    simulator: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = ScriptedPolicy([Reply("Done.", thinking=THOUGHT)])
    point_cli_at(simulator, tmp_path, monkeypatch)
    monkeypatch.setenv("MINI_CLAUDE_THINKING_TOKENS", "2048")
    assert main(["-p", "hi", "--output-format", "stream-json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    thinking = [line for line in lines if line.get("subtype") == "thinking"]
    assert len(thinking) == 1 and thinking[0]["type"] == "mini_claude"
    assert (thinking[0]["chars"], thinking[0]["redacted"]) == (len(THOUGHT), False)
    kinds = [line.get("subtype") or line["type"] for line in lines]
    assert kinds.index("thinking") < kinds.index("assistant")
    validator = Draft202012Validator(load_schema())
    for line in lines:
        validator.validate(line)


def test_a_bad_thinking_budget_is_a_one_line_settings_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("MINI_CLAUDE_THINKING_TOKENS", "500")
    assert main(["-p", "hi"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "MINI_CLAUDE_THINKING_TOKENS" in err[0]
