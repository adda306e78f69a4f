"""The demo: its policy and session headless through several turns, and the command in a pty."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from mini_claude import events as ev
from mini_claude.demo import DemoEnvironment, DemoPolicy, banner, demo_environment, run_demo
from mini_claude.scenario.script import build_script
from mini_claude.scenario.workload import TEST_COMMAND, plan_project
from mini_claude.simulator import SimConversation, SimMessage, TextPart, ToolResultPart, ToolUsePart

TYPED = ("give me an overview", "run the tests", "check the logs",
         "fix the totals in orders.py", "review orders.py and cache.py")


async def _play(demo: DemoEnvironment, texts: tuple[str, ...]) -> list[ev.Event]:
    seen: list[ev.Event] = []
    try:
        for text in texts:
            async for event in demo.session.agent.turn(text):
                seen.append(event)
    finally:
        await demo.session.provider.close()
    return seen


def test_headless_demo_fires_tiers_and_compacts(tmp_path: Path) -> None:
    with demo_environment(tmp_path) as demo:
        events = asyncio.run(_play(demo, TYPED))
        assert demo.policy.turns_started == len(TYPED)
        assert not [e for e in events if isinstance(e, ev.TurnError)]
        finished = [e for e in events if isinstance(e, ev.TurnFinished)]
        assert len(finished) == len(TYPED)
        compactions = [e for e in events if isinstance(e, ev.CompactionFinished)]
        assert compactions and all(c.tokens_after < c.tokens_before for c in compactions)
        tiers = {e.report.tier for e in events if isinstance(e, ev.TierFired)}
        assert {"persist", "budget"} <= tiers
        assert all(r.status == 200 for r in demo.simulator.requests)
        peak = max(r.prompt_tokens for r in demo.simulator.requests)
        assert peak > 0.6 * demo.session.settings.effective_window  # the bar really climbs
        assert demo.project.is_relative_to(tmp_path)


def _user(text: str) -> SimMessage:
    return SimMessage("user", [TextPart(text)])


def _conv(*messages: SimMessage) -> SimConversation:
    return SimConversation("anthropic", "sim", "", list(messages))


def test_demo_policy_follows_turns_without_a_runner() -> None:
    policy = DemoPolicy(build_script(plan_project(3), turns=20))
    first = policy.respond(_conv(_user("please run the tests")))
    assert first.tool_calls[0].input == {"command": TEST_COMMAND}
    use = ToolUsePart("toolu_1", "run_shell", {"command": TEST_COMMAND})
    after_tool = _conv(_user("please run the tests"), SimMessage("assistant", [use]),
                       SimMessage("user", [ToolResultPart("toolu_1", "3 failed")]))
    assert policy.respond(after_tool).tool_calls  # the same turn goes on
    compacted = _conv(_user("[This session was compacted: ...]\n\nsummary"),
                      _user("[Written by the user earlier in this session, kept word for word:]"
                            "\nplease run the tests"))
    policy.respond(compacted)
    assert policy.turns_started == 1  # a compaction inside the turn is not a new turn
    while (reply := policy.respond(after_tool)).tool_calls:
        pass
    assert reply.text
    again = _conv(_user("please run the tests"), SimMessage("assistant", [TextPart(reply.text)]),
                  _user("please run the tests"))
    assert policy.respond(again).tool_calls[0].input == {"command": TEST_COMMAND}
    assert policy.turns_started == 2  # the same words typed again are a new turn


def test_banner_says_the_model_is_simulated(tmp_path: Path) -> None:
    text = banner(tmp_path / "shopfloor", 24_000)
    assert "SIMULATED" in text and "No API key" in text and "24K" in text
    assert str(tmp_path / "shopfloor") in text


def test_demo_needs_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    if sys.stdin.isatty() and sys.stdout.isatty():
        pytest.fail("the test runner is attached to a terminal; run it with output captured")
    assert run_demo(argparse.Namespace()) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "terminal" in err


def _spawn_demo(tmp_path: Path) -> Any:
    """``mini-claude --demo`` in a pseudo-terminal, with no key and a home under ``tmp_path``."""
    import pexpect

    command = Path(sys.executable).with_name("mini-claude")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update({"TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1",
                "MINI_CLAUDE_HOME": str(tmp_path / "home")})
    return pexpect.spawn(str(command), ["--demo"], env=env, cwd=str(tmp_path),
                         dimensions=(40, 140), encoding="utf-8", timeout=60)


def test_demo_command_runs_the_real_repl(tmp_path: Path) -> None:
    import pexpect

    child = _spawn_demo(tmp_path)
    try:
        child.expect("SIMULATED")
        child.expect(r"ctrl-d exits[\s\S]*?> ")
        child.send("run the tests\r")
        child.expect(r"run_shell(\x1b\[[0-9;]*m)*\(bash scripts/run_tests\.sh\)")
        child.expect("Here is what I found|Summary of what I checked|Done; the details")
        # /exit ends the program whether or not the turn has quite finished drawing
        # (Ctrl-D in the input box during a turn does not exit).
        child.send("/exit\r")
        child.expect("demo folder and its session files were removed")
        assert "resume with" not in child.before  # no hint to resume what is removed
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert not (tmp_path / "home").exists()  # the demo never touches the user's home


def test_the_demo_keeps_what_is_typed_while_it_starts(tmp_path: Path) -> None:
    import pexpect

    child = _spawn_demo(tmp_path)
    try:
        # Keys are kept from the moment the terminal stops echoing: that must come before
        # the demo's slow start (imports, project, simulator), not when the prompt appears.
        assert child.waitnoecho(timeout=60)
        banner_already = child.expect(["SIMULATED", pexpect.TIMEOUT], timeout=0.01) == 0
        assert not banner_already, "the terminal stopped echoing only at the prompt"
        child.send("run the tests\r")  # typed while the demo is still starting
        child.expect("SIMULATED")
        assert "run the tests" not in child.before  # not echoed raw by the terminal
        child.expect(r"run_shell(\x1b\[[0-9;]*m)*\(bash scripts/run_tests\.sh\)")
        child.send("/exit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
