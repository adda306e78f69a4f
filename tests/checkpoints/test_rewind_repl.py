"""/rewind in the REPL (pipe input): a file the user changed is named and asked about.

The menus draw to no screen here; the lines the REPL prints around them are checked.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from mini_claude.permissions.asking import allow_all
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator
from tests.support.repl import running_repl, sim_settings, until
from tests.support.rewind import TURNS, scripted_policy, write_project


def test_a_file_changed_outside_is_asked_about_kept_or_overwritten(
        simulator: Simulator, isolated_home: Path, tmp_path: Path) -> None:
    project = write_project(tmp_path / "project")
    simulator.policy = scripted_policy(TURNS[:1])
    users = "alpha, as the user wrote it\n"

    async def scenario() -> None:
        settings = sim_settings(simulator, isolated_home)
        async with running_repl(settings, project, approver=allow_all) as repl:
            mark = await repl.submit(TURNS[0][0])
            await repl.wait_for("Turn 1 is done.", after=mark)
            (project / "a.txt").write_text(users)

            mark = await repl.submit("/rewind")
            await repl.wait_for("Rewind to before which message?", after=mark)
            assert "shell commands and MCP tools are checkpointed" in repl.text[mark:]
            await repl.keys("1")
            await repl.wait_for("changed since then by mini-claude (1):", after=mark)
            assert "      a.txt" in repl.text[mark:]
            await repl.keys("3")  # restore code only
            await repl.wait_for("a.txt was changed outside mini-claude", after=mark)
            await repl.keys("1")  # keep my version
            await repl.wait_for("1 kept as you changed them", after=mark)
            assert (project / "a.txt").read_text() == users

            mark = await repl.submit("/rewind")
            await repl.wait_for("Rewind to before which message?", after=mark)
            await repl.keys("2")  # the first message, below the rewind
            await repl.wait_for("changed since then by mini-claude (1):", after=mark)
            await repl.keys("3")
            await repl.wait_for("a.txt was changed outside mini-claude", after=mark)
            await repl.keys("2")  # overwrite: my version is stored first
            await repl.wait_for("files: 1 restored", after=mark)
            assert (project / "a.txt").read_text() == "alpha one\n"
            await repl.exit()

    asyncio.run(scenario())


def test_a_file_too_large_to_checkpoint_is_said_after_the_turn(
        simulator: Simulator, isolated_home: Path, tmp_path: Path) -> None:
    project = write_project(tmp_path / "project")
    simulator.policy = scripted_policy(TURNS[:1])

    async def scenario() -> None:
        settings = sim_settings(simulator, isolated_home, checkpoint_max_file_bytes=5)
        async with running_repl(settings, project, approver=allow_all) as repl:
            mark = await repl.submit(TURNS[0][0])
            await repl.wait_for("Turn 1 is done.", after=mark)
            await repl.wait_for("a.txt was not checkpointed (over", after=mark)
            assert "/rewind cannot restore its earlier content" in repl.text[mark:]
            await repl.exit()

    asyncio.run(scenario())


def test_older_messages_are_a_page_away(simulator: Simulator, isolated_home: Path,
                                         tmp_path: Path) -> None:
    project = write_project(tmp_path / "project")
    simulator.policy = ScriptedPolicy([], final=Reply("Noted."))

    async def scenario() -> None:
        settings = sim_settings(simulator, isolated_home)
        async with running_repl(settings, project, approver=allow_all) as repl:
            count = repl.repl.console.height  # more messages than one page holds
            for number in range(1, count + 1):
                mark = await repl.submit(f"message {number}")
                await repl.wait_for("Noted.", after=mark)
            mark = await repl.submit("/rewind")
            await repl.wait_for("Rewind to before which message?", after=mark)
            await repl.keys("\x1b[A\r")  # up from the first row: the "older" row, last
            await asyncio.sleep(0.5)
            await repl.keys("\x1b[A\r")  # the oldest message, last on the second page
            await asyncio.sleep(0.5)
            await repl.keys("2")  # conversation only
            await repl.wait_for("conversation rewound: 0 messages, as before “message 1”",
                                after=mark)
            assert len(repl.session.agent.conversation) == 0
            await repl.at_prompt()
            box = repl.repl._prompt
            assert box is not None
            await until(lambda: box.default_buffer.text == "message 1", "the text put back")
            await repl.keys("\x03")  # clears the box
            await until(lambda: box.default_buffer.text == "", "an empty box")
            await repl.exit()

    asyncio.run(scenario())


def test_summarize_from_here_puts_the_prompt_back_and_up_to_here_leaves_the_box_empty(
        simulator: Simulator, isolated_home: Path, tmp_path: Path) -> None:
    project = write_project(tmp_path / "project")
    simulator.policy = scripted_policy(TURNS[:3])

    async def scenario() -> None:
        settings = sim_settings(simulator, isolated_home)
        async with running_repl(settings, project, approver=allow_all) as repl:
            for number, (prompt, _) in enumerate(TURNS[:3], 1):
                mark = await repl.submit(prompt)
                await repl.wait_for(f"Turn {number} is done.", after=mark)
            agent = repl.session.agent

            mark = await repl.submit("/rewind")
            await repl.wait_for("Rewind to before which message?", after=mark)
            await repl.keys("1")  # turn 3, the newest
            await repl.wait_for("changed since then by mini-claude", after=mark)
            await repl.keys("4")  # summarize from here
            await repl.wait_for("and everything after it will become a summary", after=mark)
            await repl.keys("keep the file names\r")
            await repl.wait_for("summarized 4 messages from “turn 3: make c two”", after=mark)
            instruction = simulator.requests[-1].conversation.messages[-1].text  # type: ignore[union-attr]
            assert "keep the file names" in instruction
            assert "turn 3: make c two" not in "".join(
                m.text for m in agent.conversation.messages)
            await repl.at_prompt()
            box = repl.repl._prompt
            assert box is not None
            await until(lambda: box.default_buffer.text == "turn 3: make c two",
                        "the prompt put back")
            await repl.keys("\x03")
            await until(lambda: box.default_buffer.text == "", "an empty box")

            mark = await repl.submit("/rewind")
            await repl.wait_for("Rewind to before which message?", after=mark)
            await repl.keys("2")  # turn 2
            await repl.wait_for("changed since then by mini-claude", after=mark)
            await repl.keys("5")  # summarize up to here
            await repl.wait_for("will become a summary", after=mark)
            await repl.keys("\r")
            await repl.wait_for("summarized 4 messages before “turn 2: make b two”", after=mark)
            messages = agent.conversation.messages
            assert messages[2].text == "turn 2: make b two"
            await repl.at_prompt()
            await asyncio.sleep(0.3)
            assert box.default_buffer.text == ""
            await repl.exit()

    asyncio.run(scenario())
