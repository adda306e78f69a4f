"""The REPL driven in-process against the simulator: turns, permissions, interruption, commands."""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import stat
import sys
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, Protocol

import pytest
from prompt_toolkit.application.current import get_app_or_none
from prompt_toolkit.layout.controls import BufferControl

from mini_claude.conversation import SummaryBlock, validate
from mini_claude.permissions.asking import Approver, allow_all
from mini_claude.simulator import Fault, Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.ui.repl import run_repl
from mini_claude.ui.statusbar import format_money
from tests.support.repl import ReplDriver, running_repl, sim_settings, until

Scenario = Callable[[ReplDriver], Awaitable[None]]


class Drive(Protocol):
    def __call__(self, scenario: Scenario, *, approver: Approver | None = None,
                 **settings: Any) -> None: ...


def run(scenario: Coroutine[Any, Any, None]) -> None:
    asyncio.run(scenario)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    return folder


@pytest.fixture
def drive(simulator: Simulator, isolated_home: Path, project: Path) -> Drive:
    """Run a scenario against a fresh REPL on the simulator; leave it with /exit if still open."""
    def go(scenario: Scenario, *, approver: Approver | None = None, **settings: Any) -> None:
        async def main() -> None:
            async with running_repl(sim_settings(simulator, isolated_home, **settings), project,
                                    approver=approver) as repl:
                await scenario(repl)
                if not repl.task.done():
                    assert await repl.exit() == 0

        asyncio.run(main())

    return go


def user_texts(sim: Simulator) -> list[str]:
    """What the user said in the last request the model saw."""
    conversation = sim.requests[-1].conversation
    assert conversation is not None
    return [m.text for m in conversation.messages if m.is_plain_user_message]


def last_tool_results(sim: Simulator) -> list[str]:
    conversation = sim.requests[-1].conversation
    assert conversation is not None
    return [r.content for r in conversation.last_tool_results()]


def history_is_valid(driver: ReplDriver) -> None:
    assert validate(driver.repl.agent.conversation.messages) == []


# ---- a turn ---------------------------------------------------------------------------


def test_a_turn_streams_text_then_shows_the_tool_call_and_its_result(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = ScriptedPolicy([
        Reply(text="I will read the notes.\n\nHere is **why**:\n\n```python\nprint('hi')\n```\n",
              tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]),
        Reply(text="The notes list three words."),
    ])

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("what is in the notes?")
        await repl.wait_for("The notes list three words.", after=mark)
        text = repl.text[mark:]
        order = [text.index(s) for s in ("I will read the notes.", "print('hi')",
                                         "● read_file(notes.txt)", "alpha",
                                         "The notes list three words.")]
        assert order == sorted(order)
        assert "**why**" not in text  # rendered as Markdown, not shown raw
        assert await repl.exit() == 0

    drive(scenario)


def test_header_names_provider_model_window_folder_session_and_instructions(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    (project / "CLAUDE.md").write_text("Use tabs.\n")

    async def scenario(repl: ReplDriver) -> None:
        await repl.at_prompt()
        header = " ".join(repl.text.split())
        session_id = repl.session.session_id
        for part in ("anthropic", "sim-model", "200k window", str(project),
                     f"session {session_id[:8]}", "instructions: " + str(project / "CLAUDE.md")):
            assert part in header
        await repl.submit("hello")  # a session with a message in it is kept, and says how
        await until(lambda: len(simulator.requests) == 1, "the request")
        await repl.at_prompt()
        repl.pipe.send_text("\x04")  # Ctrl-D at the prompt leaves
        assert await asyncio.wait_for(repl.task, 20) == 0
        farewell = " ".join(repl.text.split())
        assert f"mini-claude --resume {session_id}" in farewell
        assert str(repl.repl.agent.transcript.path) in farewell

    drive(scenario)


def test_a_big_result_reports_the_tier_that_handled_it(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("run_shell", {"command": "seq 1 20000"})]),
        Reply(text="Counted."),
        Reply(tool_calls=[ToolCall("run_shell", {"command": "seq 1 20000"})]),
        Reply(text="Counted."),
    ])

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("count")
        await repl.wait_for("Counted.", after=mark)
        assert re.search(r"· context: persist saved 1 result; [\d.]+k? tokens freed", repl.text)
        mark = await repl.submit("/verbose")
        await repl.wait_for("verbose", after=mark)
        mark = await repl.submit("count")
        await repl.wait_for("Counted.", after=mark)
        assert re.search(r"· persist: 1 result \w+, [\d.]+k? tokens freed", repl.text[mark:])

    drive(scenario, approver=allow_all)


def test_an_agent_error_is_one_red_line_and_the_session_goes_on(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("hello")
        await repl.wait_for("✗ ", after=mark)
        await repl.wait_for("check the API key", after=mark)
        assert "Traceback" not in repl.text
        assert await repl.exit() == 0

    drive(scenario, api_keys={"anthropic": "bad-key"})


# ---- permissions ----------------------------------------------------------------------


def shell_twice(command: str) -> ScriptedPolicy:
    return ScriptedPolicy([
        Reply(tool_calls=[ToolCall("run_shell", {"command": command})]),
        Reply(tool_calls=[ToolCall("run_shell", {"command": command})]),
        Reply(text="All finished."),
    ])


def test_yes_runs_the_command_and_asks_again_next_time(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = shell_twice("echo ran >> log.txt")

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("log it")
        await repl.wait_for("Do you want to proceed?", after=mark)
        assert "echo ran >> log.txt" in repl.text[mark:]
        await repl.keys("1")
        await until(lambda: repl.text[mark:].count("Do you want to proceed?") == 2,
                    "the second question")
        await repl.keys("1")
        await repl.wait_for("All finished.", after=mark)
        assert (project / "log.txt").read_text() == "ran\nran\n"
        history_is_valid(repl)

    drive(scenario)


def test_yes_and_dont_ask_again_covers_the_same_command_for_the_session(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = shell_twice("echo ran >> log.txt")

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("log it")
        await repl.wait_for("Do you want to proceed?", after=mark)
        await repl.keys("2")
        await repl.wait_for("All finished.", after=mark)
        assert repl.text[mark:].count("Do you want to proceed?") == 1
        assert (project / "log.txt").read_text() == "ran\nran\n"

    drive(scenario)


def test_no_with_a_reason_tells_the_model_and_the_turn_goes_on(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("write_file", {"path": "new.txt", "content": "x\n"})]),
        Reply(text="Understood, I will not write it."),
    ])

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("make a file")
        await repl.wait_for("Do you want to proceed?", after=mark)
        assert "new.txt" in repl.text[mark:]
        await repl.keys("3put it in docs/ instead\r")
        await repl.wait_for("Understood, I will not write it.", after=mark)
        assert not (project / "new.txt").exists()
        denial = last_tool_results(simulator)
        assert len(denial) == 1 and "put it in docs/ instead" in denial[0]
        assert "denied: put it in docs/ instead" in repl.text[mark:]
        history_is_valid(repl)

    drive(scenario)


def test_esc_at_the_question_cancels_the_turn(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("run_shell", {"command": "touch made.txt"})]),
        Reply(text="Carried on regardless."),
        Reply(text="Next answer."),
    ])

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("touch it")
        await repl.wait_for("Do you want to proceed?", after=mark)
        requests = len(simulator.requests)
        await repl.keys("\x1b")
        await repl.wait_for("Interrupted", after=mark)
        await repl.at_prompt()
        assert len(simulator.requests) == requests  # the model was not asked to carry on
        assert "What should the agent do instead?" not in repl.text[mark:]
        assert not (project / "made.txt").exists()
        history_is_valid(repl)
        mark = await repl.submit("carry on")
        await repl.wait_for("Carried on regardless.", after=mark)

    drive(scenario)


def test_esc_while_giving_a_reason_cancels_the_turn_too(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("run_shell", {"command": "touch made.txt"})]),
        Reply(text="Should not be asked."),
    ])

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("touch it")
        await repl.wait_for("Do you want to proceed?", after=mark)
        requests = len(simulator.requests)
        await repl.keys("3")
        await until(_typing_a_reason, "the reason prompt")
        await repl.keys("half a reas\x1b")
        await repl.wait_for("Interrupted", after=mark)
        await repl.at_prompt()
        assert len(simulator.requests) == requests
        history_is_valid(repl)

    drive(scenario)


def test_ctrl_c_at_the_question_interrupts_the_turn(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("run_shell", {"command": "touch made.txt"})]),
        Reply(text="Next answer."),
    ])

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("touch it")
        await repl.wait_for("Do you want to proceed?", after=mark)
        await repl.keys("\x03")
        await repl.wait_for("Interrupted", after=mark)
        assert not (project / "made.txt").exists()
        history_is_valid(repl)
        mark = await repl.submit("carry on")
        await repl.wait_for("Next answer.", after=mark)

    drive(scenario)


# ---- interruption ---------------------------------------------------------------------


def test_esc_interrupts_a_slow_reply_and_the_session_stays_usable(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = ScriptedPolicy([Reply(text="never shown"), Reply(text="Second reply.")])
    simulator.inject(Fault("slow", delay_s=60))

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("take your time")
        await repl.turn_running()
        # Esc before the request reaches the server would leave the slow answer to the next.
        await until(lambda: len(simulator.requests) >= 1, "the first request to arrive")
        await repl.keys("\x1b")
        await repl.wait_for("Interrupted", after=mark)
        assert "never shown" not in repl.text
        history_is_valid(repl)
        mark = await repl.submit("again")
        await repl.wait_for("Second reply.", after=mark)
        history_is_valid(repl)

    drive(scenario)


def test_ctrl_c_stops_a_running_shell_command(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("run_shell",
                                   {"command": "touch started; sleep 60; touch late"})]),
        Reply(text="After the interruption."),
    ])

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("wait a minute")
        await repl.wait_for("● run_shell(touch started; sleep 60; touch late)", after=mark)
        await until(lambda: (project / "started").exists(), "the command to start")
        await repl.keys("\x03")
        await repl.wait_for("Interrupted", after=mark)
        history_is_valid(repl)
        last = repl.repl.agent.conversation.messages[-1]
        assert last.tool_results and last.tool_results[0].is_error
        mark = await repl.submit("go on")
        await repl.wait_for("After the interruption.", after=mark)
        assert not (project / "late").exists()

    drive(scenario, approver=allow_all)


# ---- input ----------------------------------------------------------------------------


def test_multi_line_input_stays_one_message(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    async def scenario(repl: ReplDriver) -> None:
        for keys in ("one\\\rtwo", "three\x1b\rfour", "five\nsix",
                     "\x1b[200~seven\neight\x1b[201~"):
            await repl.submit(keys)
        await repl.at_prompt()
        assert user_texts(simulator) == ["one\ntwo", "three\nfour", "five\nsix",
                                         "seven\neight"]

    drive(scenario)


def test_a_long_paste_shows_as_a_placeholder_and_is_sent_in_full(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    pasted = "\n".join(f"log line {n}" for n in range(1, 301))

    async def scenario(repl: ReplDriver) -> None:
        await repl.at_prompt()
        await repl.keys("look at this: \x1b[200~" + pasted + "\x1b[201~")
        app = get_app_or_none()
        assert app is not None
        await until(lambda: "[Pasted text" in app.current_buffer.text, "the placeholder")
        assert app.current_buffer.text == "look at this: [Pasted text #1 +300 lines]"
        await repl.keys("\r")
        await until(lambda: len(simulator.requests) == 1, "the request")
        await repl.at_prompt()
        assert user_texts(simulator) == ["look at this: " + pasted]

    drive(scenario)


def test_history_is_private_and_recalled_in_the_next_session(
        simulator: Simulator, isolated_home: Path, project: Path) -> None:
    async def scenario() -> None:
        settings = sim_settings(simulator, isolated_home)
        async with running_repl(settings, project) as repl:
            await repl.submit("remember this line")
            await repl.exit()
        history = isolated_home / "input-history"
        assert stat.S_IMODE(history.stat().st_mode) == 0o600
        assert "remember this line" in history.read_text()
        async with running_repl(settings, project) as repl:
            await repl.submit("\x1b[A\x1b[A")  # up twice (past "/exit"), then Enter
            await repl.at_prompt()
            assert user_texts(simulator) == ["remember this line"]
            await repl.exit()

    run(scenario())


def test_ctrl_c_clears_the_line_and_twice_on_an_empty_prompt_exits(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    async def scenario(repl: ReplDriver) -> None:
        await repl.at_prompt()
        await repl.keys("half typed\x03")
        await repl.keys("\x03")
        await repl.wait_for("press Ctrl-C again to exit")
        await repl.keys("\x03")
        assert await asyncio.wait_for(repl.task, 20) == 0
        assert not simulator.requests  # nothing was sent
        assert "mini-claude --resume" not in repl.text  # nor kept: nothing to resume
        assert not repl.repl.agent.transcript.path.exists()

    drive(scenario)


def test_tab_completes_slash_commands(simulator: Simulator, drive: Drive, project: Path) -> None:
    async def scenario(repl: ReplDriver) -> None:
        await repl.at_prompt()
        await repl.keys("/cos")
        await until(lambda: _completing(), "the completion menu")
        await repl.keys("\t\r")
        await repl.wait_for("cache read")

    drive(scenario)


def _typing_a_reason() -> bool:
    app = get_app_or_none()
    return (app is not None and app.is_running
            and isinstance(app.layout.current_control, BufferControl))


def _completing() -> bool:
    app = get_app_or_none()
    return app is not None and app.current_buffer.complete_state is not None


# ---- slash commands -------------------------------------------------------------------


def test_help_and_unknown_commands(simulator: Simulator, drive: Drive, project: Path) -> None:
    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("/help")
        await repl.wait_for("Ctrl-D exits", after=mark)
        for name in ("/compact", "/context", "/cost", "/clear /new", "/model", "/resume",
                     "/exit /quit", "/compact [focus]", "/mcp [approve|reconnect [name]]",
                     "/expand [N]"):
            assert name in repl.text[mark:]
        mark = await repl.submit("/contxt")
        await repl.wait_for("Unknown command /contxt. Did you mean /context?", after=mark)
        mark = await repl.submit("/usr/bin/env is missing, why?")
        await repl.at_prompt()
        assert user_texts(simulator) == ["/usr/bin/env is missing, why?"]
        assert not simulator.requests[:-1]

    drive(scenario)


def test_expand_takes_how_far_back_to_go(simulator: Simulator, drive: Drive,
                                         project: Path) -> None:
    async def scenario(repl: ReplDriver) -> None:
        for n in (1, 2, 3):
            repl.repl.recall.keep_result("run_shell", f"the output of run {n}")
        mark = await repl.submit("/expand 3")
        await repl.wait_for("end of result", after=mark)
        assert "the output of run 1" in repl.text[mark:]
        assert "the output of run 3" not in repl.text[mark:]
        mark = await repl.submit("/expand last")
        await repl.wait_for("usage: /expand [N]", after=mark)

    drive(scenario)


def test_context_total_matches_the_meter_and_cost_matches_the_tracker(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]),
        Reply(text="Read it."),
    ])

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("read the notes")
        await repl.wait_for("Read it.", after=mark)
        mark = await repl.submit("/context")
        await repl.wait_for("output reserve", after=mark)
        await repl.wait_for("tokens, from the model table", after=mark)
        status = repl.repl.agent.status()
        shown = " ".join(repl.text[mark:].split())
        assert f"in the prompt {status.tokens:,}" in shown
        assert f"{status.tokens:,} of {status.autocompact_at:,} tokens" in shown
        assert f"{status.effective_window:,}-token effective window" in shown
        assert "tool results: read_file" in shown
        await repl.wait_for("instruction files: none", after=mark)
        assert "instruction file kind" not in shown  # no empty table

        mark = await repl.submit("/cost")
        await repl.wait_for("requests", after=mark)
        usage = repl.repl.agent.costs.usage
        shown = " ".join(repl.text[mark:].split())
        assert f"cache read {usage.cache_read_tokens:,} tokens" in shown
        assert f"cache write {usage.cache_write_tokens:,} tokens" in shown
        assert f"output {usage.output_tokens:,} tokens" in shown
        assert "requests 2" in shown

    drive(scenario)


def test_compact_shrinks_the_context(simulator: Simulator, drive: Drive, project: Path) -> None:
    (project / "big.txt").write_text("".join(f"line {i} of a long file\n" for i in range(800)))
    simulator.policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("read_file", {"path": "big.txt"})]),
        Reply(text="That is a long file."),
    ])

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("read big.txt")
        await repl.wait_for("That is a long file.", after=mark)
        before = repl.repl.agent.status().tokens
        mark = await repl.submit("/compact keep the file name")
        await repl.wait_for("✓ compacted (/compact)", after=mark)
        await repl.at_prompt()
        assert repl.repl.agent.status().tokens < before
        assert simulator.requests[-1].is_summary_request
        assert "keep the file name" in str(simulator.requests[-1].body)
        history_is_valid(repl)

    drive(scenario)


def test_model_clear_and_resume(simulator: Simulator, drive: Drive, project: Path) -> None:
    async def scenario(repl: ReplDriver) -> None:
        first_id = repl.session.session_id
        await repl.submit("first session question")
        mark = await repl.submit("/model")
        await repl.wait_for("model: sim-model", after=mark)
        mark = await repl.submit("/model sim-other")
        await repl.wait_for("model switched to sim-other", after=mark)
        await repl.submit("asked with the other model")
        await repl.at_prompt()
        assert simulator.requests[-1].body["model"] == "sim-other"

        mark = await repl.submit("/clear")
        await repl.wait_for(f"mini-claude --resume {first_id}", after=mark)
        assert repl.session.session_id != first_id
        assert repl.repl.agent.conversation.messages == []

        mark = await repl.submit("/resume")
        await repl.wait_for("Resume which session?", after=mark)
        await repl.keys("1")
        await repl.wait_for(f"resumed session {first_id}", after=mark)
        assert "> first session question" in repl.text[mark:]  # the conversation is redrawn
        await repl.at_prompt()
        texts = [m.text for m in repl.repl.agent.conversation.messages]
        assert "first session question" in texts

    drive(scenario)


def test_run_repl_refuses_without_a_terminal(
        simulator: Simulator, isolated_home: Path, project: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert not sys.stdin.isatty()
    args = argparse.Namespace(yes=False, continue_session=False, resume=None, debug=False)
    assert run_repl(sim_settings(simulator, isolated_home), project, args) == 2
    assert "needs a terminal" in capsys.readouterr().err
    assert not os.path.exists(isolated_home / "transcripts")


def test_auto_compact_shows_before_and_after(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    (project / "big.txt").write_text("".join(f"row {i}: some words to fill\n" for i in range(520)))
    simulator.policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("read_file", {"path": "big.txt"})]),
        Reply(text="Read the big file. " + "lorem ipsum dolor sit amet " * 500),
        Reply(text="Answer after compaction."),
    ])

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("read big.txt")
        await repl.wait_for("Read the big file.", after=mark)
        before = repl.repl.agent.status()
        assert before.until_autocompact == 0
        mark = await repl.submit("what next?")
        await repl.wait_for("Answer after compaction.", after=mark)
        line = re.search(r"✓ compacted \(auto-compact\): ([\d.]+)k → ([\d.]+)k tokens",
                         repl.text[mark:])
        assert line is not None, repl.text[mark:]
        assert float(line.group(2)) < float(line.group(1))
        history_is_valid(repl)

    drive(scenario, context_window=8_500)  # room for every tool's schema


def test_an_approved_edit_shows_its_diff_once(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("edit_file", {"path": "notes.txt", "old": "beta",
                                                 "new": "BETA"})]),
        Reply(text="Edited."),
    ])

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("shout beta")
        await repl.wait_for("Do you want to proceed?", after=mark)
        question = repl.text[mark:]
        assert "-beta" in question and "+BETA" in question
        await repl.keys("1")
        await repl.wait_for("Edited.", after=mark)
        after_answer = repl.text[repl.text.index("✓ allowed", mark):]
        assert "⎿  +1 −1 (the diff is shown above)" in after_answer
        assert repl.text[mark:].count("+BETA") == 1
        assert (project / "notes.txt").read_text() == "alpha\nBETA\ngamma\n"

    drive(scenario)


def test_a_resumed_session_says_what_it_brought_back(
        simulator: Simulator, isolated_home: Path, project: Path) -> None:
    async def scenario() -> None:
        settings = sim_settings(simulator, isolated_home)
        async with running_repl(settings, project) as repl:
            first_id = repl.session.session_id
            await repl.submit("something to remember")
            await repl.exit()
        async with running_repl(settings, project, resume=first_id) as repl:
            await repl.wait_for("resumed: 2 messages")
            assert f"session {first_id[:8]}" in repl.text
            await repl.exit()

    run(scenario())


def test_a_joined_emoji_typed_at_the_prompt_is_sent_with_its_joiner(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    coder = "\U0001f469\u200d\U0001f4bb"
    simulator.policy = ScriptedPolicy([Reply(text="Noted.")])

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit(f"ship it {coder} today")
        await repl.wait_for("Noted.", after=mark)
        assert user_texts(simulator) == [f"ship it {coder} today"]

    drive(scenario)


# ---- typing while a turn runs ---------------------------------------------------------


def waiting(repl: ReplDriver) -> list[str]:
    """Messages typed during the turn and not sent yet: steering, then queued."""
    return [*repl.repl.agent.steering.pending, *repl.repl.queued]


def test_text_typed_during_a_turn_steers_it_before_the_next_model_call(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Reading.", [ToolCall("read_file", {"path": "notes.txt"})]),
        Reply(text="Second answer, steered."), Reply(text="Third answer.")])
    simulator.inject(Fault("slow", delay_s=1.5))

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("review the config")
        await repl.turn_running()
        await repl.keys("use the staging one\r")
        await until(lambda: waiting(repl) == ["use the staging one"], "the steering message")
        await repl.keys("still typing")  # not sent: it waits at the next prompt
        await repl.wait_for("Second answer, steered.", after=mark)
        await repl.at_prompt()
        text = repl.text[mark:]
        assert "> use the staging one  (steering this turn)" in text
        assert text.index("(steering this turn)") < text.index("Second answer, steered.")
        assert user_texts(simulator) == ["review the config"]  # one turn, one typed prompt
        [last] = simulator.requests[-1].conversation.messages[-1:]  # type: ignore[union-attr]
        assert last.tool_results and "use the staging one" in last.text
        app = get_app_or_none()
        assert app is not None and app.current_buffer.text == "still typing"
        await repl.keys("\r")
        await repl.wait_for("Third answer.", after=mark)
        assert user_texts(simulator)[-1] == "still typing"

    drive(scenario)


def test_ctrl_x_enter_queues_a_message_for_after_the_turn(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Reading.", [ToolCall("read_file", {"path": "notes.txt"})]),
        Reply(text="First answer."), Reply(text="Second answer.")])
    simulator.inject(Fault("slow", delay_s=1.5))

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("review the config")
        await repl.turn_running()
        await repl.keys("typed ahead\x18\r")
        await until(lambda: repl.repl.queued == ["typed ahead"], "the queued message")
        assert not repl.repl.agent.steering.pending
        await repl.wait_for("Second answer.", after=mark)
        assert user_texts(simulator) == ["review the config", "typed ahead"]
        assert "steering this turn" not in repl.text[mark:]

    drive(scenario)


def test_esc_takes_a_steering_message_back_before_it_interrupts(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = ScriptedPolicy([Reply(text="First answer."), Reply(text="Other.")])
    simulator.inject(Fault("slow", delay_s=1.5))

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("slow one")
        await repl.turn_running()
        await repl.keys("never mind\r")
        await until(lambda: waiting(repl) == ["never mind"], "the steering message")
        await repl.keys("\x1b")
        await until(lambda: not waiting(repl), "the message taken back")
        assert repl.repl.turn_running  # the first Esc did not interrupt
        await repl.wait_for("First answer.", after=mark)
        await repl.at_prompt()
        assert user_texts(simulator) == ["slow one"]
        assert len(simulator.requests) == 1
        app = get_app_or_none()
        assert app is not None and app.current_buffer.text == "never mind"
        await repl.keys("\x03")  # clear the line before the fixture types /exit
        await until(lambda: not app.current_buffer.text, "an empty line")

    drive(scenario)


def test_ctrl_d_during_a_turn_lets_it_finish_then_leaves(
        simulator: Simulator, isolated_home: Path, project: Path) -> None:
    simulator.policy = ScriptedPolicy([Reply(text="Finished anyway."), Reply(text="Never sent.")])
    simulator.inject(Fault("slow", delay_s=1.0))

    async def scenario() -> None:
        async with running_repl(sim_settings(simulator, isolated_home), project) as repl:
            mark = await repl.submit("slow one")
            await repl.turn_running()
            await repl.keys("\x04")
            await until(lambda: repl.repl.queued == ["/exit"], "the exit, queued")
            assert repl.repl.turn_running  # Ctrl-D is no stop: the turn goes on
            await asyncio.wait_for(repl.task, 30)
            assert "Finished anyway." in repl.text[mark:]
            assert "Interrupted" not in repl.text[mark:]
            assert len(simulator.requests) == 1

    run(scenario())


async def _queued_messages_wait_in_the_box(repl: ReplDriver, simulator: Simulator,
                                           requests: int, expected: str) -> None:
    """After an interruption: no new turn, and the queued text is the next prompt's draft."""
    await repl.at_prompt()
    await asyncio.sleep(0.5)  # a queued message would have been sent by now
    assert len(simulator.requests) == requests
    assert not waiting(repl) and not repl.repl.turn_running
    app = get_app_or_none()
    assert app is not None and app.current_buffer.text == expected
    await repl.keys("\x03")  # clear the line before the fixture types /exit
    await until(lambda: not app.current_buffer.text, "an empty line")


def test_ctrl_c_puts_queued_messages_back_in_the_box_unsent(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = ScriptedPolicy([Reply(text="never shown"), Reply(text="Not asked for.")])
    simulator.inject(Fault("slow", delay_s=60))

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("slow one")
        await repl.turn_running()
        await repl.keys("first queued\r")
        await repl.keys("second queued\x18\r")
        await until(lambda: waiting(repl) == ["first queued", "second queued"], "the queue")
        await until(lambda: len(simulator.requests) == 1, "the slow request on the wire")
        requests = len(simulator.requests)
        await repl.keys("\x03")
        await repl.wait_for("Interrupted", after=mark)
        await _queued_messages_wait_in_the_box(repl, simulator, requests,
                                               "first queued\nsecond queued")
        assert "Not asked for." not in repl.text
        history_is_valid(repl)

    drive(scenario)


def test_esc_at_a_question_puts_queued_messages_back_in_the_box_unsent(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("run_shell", {"command": "touch made.txt"})]),
        Reply(text="Not asked for."),
    ])
    simulator.inject(Fault("slow", delay_s=1.5))

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("touch it")
        await repl.turn_running()
        await repl.keys("then list the files\r")
        await until(lambda: waiting(repl) == ["then list the files"], "the steering")
        await repl.wait_for("Do you want to proceed?", after=mark)
        requests = len(simulator.requests)
        await repl.keys("\x1b")
        await repl.wait_for("Interrupted", after=mark)
        await _queued_messages_wait_in_the_box(repl, simulator, requests,
                                               "then list the files")
        assert not (project / "made.txt").exists()

    drive(scenario)


def test_a_command_typed_during_a_turn_runs_after_it(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = ScriptedPolicy([Reply(text="First answer.")])
    simulator.inject(Fault("slow", delay_s=1.5))

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("slow one")
        await repl.turn_running()
        await repl.keys("/cost\r")
        await repl.wait_for("cache read", after=mark)
        text = repl.text[mark:]
        assert text.index("First answer.") < text.index("cache read")

    drive(scenario)


def test_exit_typed_during_a_turn_ends_the_turn_and_the_program(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = ScriptedPolicy([Reply(text="never shown")])
    simulator.inject(Fault("slow", delay_s=60))

    async def scenario(repl: ReplDriver) -> None:
        await repl.submit("take your time")
        await repl.turn_running()
        await repl.keys("/exit\r")
        assert await asyncio.wait_for(repl.task, 20) == 0
        assert "never shown" not in repl.text
        assert "mini-claude --resume" in repl.text
        history_is_valid(repl)

    drive(scenario)


def test_exit_typed_during_a_compaction_ends_the_program(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = ScriptedPolicy([Reply(text="A first answer."), Reply(text="Second.")])

    async def scenario(repl: ReplDriver) -> None:
        await repl.submit("one")
        await repl.submit("two")
        await repl.at_prompt()
        simulator.inject(Fault("slow", delay_s=60))
        mark = await repl.submit("/compact")
        await repl.turn_running()
        await repl.keys("/exit\r")
        assert await asyncio.wait_for(repl.task, 20) == 0
        assert "compaction cancelled" in repl.text[mark:]
        assert "tell the agent what to do instead" not in repl.text[mark:]

    drive(scenario)


# ---- what the meter and the cost say --------------------------------------------------


def test_cost_counts_summary_calls_and_the_bar_shows_the_same_total(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = ScriptedPolicy([Reply(text="A first answer."), Reply(text="Second.")])

    async def scenario(repl: ReplDriver) -> None:
        await repl.submit("one")
        await repl.submit("two")
        mark = await repl.submit("/cost")
        await repl.wait_for("wall time", after=mark)
        before = repl.repl.agent.costs.dollars
        assert "of which summary and notes calls 0 ·" in " ".join(repl.text[mark:].split())
        mark = await repl.submit("/compact")
        await repl.wait_for("✓ compacted", after=mark)
        mark = await repl.submit("/cost")
        await repl.wait_for("wall time", after=mark)
        costs = repl.repl.agent.costs
        shown = " ".join(repl.text[mark:].split())
        assert costs.dollars > before
        assert costs.summaries.requests == 1 and costs.requests == 3
        assert f"cost {format_money(costs.dollars)}" in shown
        assert re.search(r"of which summary and notes calls 1 · [\d,]+ in, [\d,]+ out · \$", shown)
        assert re.search(r"API time [\d.]+s wall time [\d.]+s", shown)
        bar = "".join(text for _style, text, *_ in repl.repl._status_line())
        assert format_money(costs.dollars) in bar

    drive(scenario)


def test_an_empty_reply_says_so_in_one_dim_line(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = ScriptedPolicy([Reply(text="")])

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("hello?")
        await repl.wait_for("empty reply", after=mark)
        await repl.at_prompt()
        assert repl.text[mark:].count("empty reply") == 1

    drive(scenario)


def test_expand_and_summary_show_what_was_collapsed_and_summarized(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    (project / "long.txt").write_text("".join(f"row {i} of the long file\n" for i in range(40)))
    simulator.policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("read_file", {"path": "long.txt"})]),
        Reply(text="Read it."),
        Reply(text="Another answer."),
    ])

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("/summary")
        await repl.wait_for("has not been compacted yet", after=mark)
        mark = await repl.submit("read long.txt")
        await repl.wait_for("Read it.", after=mark)
        assert "row 39 of the long file" not in repl.text[mark:]  # collapsed
        mark = await repl.submit("/expand")
        await repl.wait_for("end of result", after=mark)
        assert "row 39 of the long file" in repl.text[mark:]
        await repl.submit("more")
        mark = await repl.submit("/compact")
        await repl.wait_for("✓ compacted", after=mark)
        mark = await repl.submit("/summary")
        await repl.wait_for("end of summary", after=mark)
        summary = repl.repl.agent.conversation.messages[0].blocks[0]
        assert isinstance(summary, SummaryBlock)
        assert summary.summary.splitlines()[0] in repl.text[mark:]

    drive(scenario)


# ---- !command, @path, /model completion -------------------------------------------------


def test_bang_runs_a_shell_command_without_a_question_and_the_model_sees_it(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("!echo from-the-user > made.txt; cat made.txt")
        await repl.wait_for("goes to the model with your next message", after=mark)
        assert "Do you want to proceed?" not in repl.text[mark:]  # the user's own command
        assert "from-the-user" in repl.text[mark:]
        assert (project / "made.txt").exists()
        assert not simulator.requests  # nothing was sent yet
        await repl.submit("what did I just run?")
        await repl.at_prompt()
        sent = user_texts(simulator)[0]
        assert "`echo from-the-user > made.txt; cat made.txt`" in sent
        assert "from-the-user" in sent and sent.endswith("what did I just run?")

    drive(scenario)


def test_at_path_attaches_the_file_and_unknown_paths_stay_text(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("explain @notes.txt and @nowhere.txt please")
        await repl.wait_for("attached @notes.txt (3 lines)", after=mark)
        await repl.at_prompt()
        sent = user_texts(simulator)[0]
        assert sent.startswith("explain @notes.txt and @nowhere.txt please")
        assert "[Attached @notes.txt]" in sent and "beta" in sent
        assert "Attached @nowhere.txt" not in sent

    drive(scenario)


def test_tab_completes_at_paths_and_model_names(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    (project / "docs").mkdir()
    (project / "docs" / "guide.md").write_text("# Guide\n")

    async def scenario(repl: ReplDriver) -> None:
        await repl.at_prompt()
        await repl.keys("read @do")
        await until(_completing, "the path completion menu")
        await repl.keys("\t")
        await until(lambda: _line() == "read @docs/", "the folder completed")
        await repl.keys("g")
        await until(lambda: _offered() == ["@docs/guide.md"], "the file completion")
        await repl.keys("\t")
        await until(lambda: _line() == "read @docs/guide.md", "the file completed")
        await repl.keys("\x03")
        await until(lambda: _line() == "", "an empty line")
        await repl.keys("/model sim-o")
        await until(lambda: _line() == "/model sim-o", "the typed command")
        await repl.keys("\x03")
        await until(lambda: _line() == "", "an empty line")
        await repl.keys("/model claude-s")
        await until(lambda: "claude-sonnet-5-5" in _offered(), "the model completion")
        await repl.keys("\t")
        await until(lambda: _line() == "/model claude-sonnet-5-5", "the model completed")
        await repl.keys("\x03")
        await until(lambda: _line() == "", "an empty line")

    drive(scenario)


def _offered() -> list[str]:
    app = get_app_or_none()
    state = app.current_buffer.complete_state if app is not None else None
    return [c.text for c in state.completions] if state is not None else []


def _line() -> str:
    app = get_app_or_none()
    return app.current_buffer.text if app is not None else ""


def test_the_verbose_setting_shows_every_tier_report(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    simulator.policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("run_shell", {"command": "seq 1 20000"})]),
        Reply(text="Counted."),
    ])

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("count")
        await repl.wait_for("Counted.", after=mark)
        assert re.search(r"· persist: 1 result \w+, [\d.]+k? tokens freed", repl.text[mark:])
        assert "· context:" not in repl.text[mark:]

    drive(scenario, approver=allow_all, verbose=True)


def test_a_loop_that_goes_on_is_told_and_context_shows_what_the_guard_did(
        simulator: Simulator, drive: Drive, project: Path) -> None:
    read = Reply("Reading again.", [ToolCall("read_file", {"path": "notes.txt"})])
    simulator.policy = ScriptedPolicy([read, read, read, read, Reply(text="Done reading.")])

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("what do the notes say?")
        await repl.wait_for("Done reading.", after=mark)
        assert "going in circles (notes.txt was read 4 times" in " ".join(
            repl.text[mark:].split())
        mark = await repl.submit("/context")
        await repl.wait_for("Loop guard: 2 reminders to change tactic this session, told you "
                            "1 time", after=mark)

    drive(scenario)
