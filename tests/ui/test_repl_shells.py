"""The REPL and the tools for real work: a running command's last lines under the spinner
(Ctrl-O shows them all), background shells on the status line, and /shells."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from mini_claude.permissions.asking import allow_all
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.visible import visible
from tests.support.repl import ReplDriver, running_repl, sim_settings, until

# Each line carries a bidi override and a C1 control: shown as stand-ins, never obeyed.
SLOW = (r"for i in $(seq 1 40); do printf 'compiling unit %s \342\200\256exe.txt \302\2332J\n' $i; "
        "sleep 0.15; done")
SHOWN = "<U+202E>exe.txt <U+009B>2J"


def status_text(repl: ReplDriver) -> str:
    return "".join(text for _style, text, *_ in repl.repl._status_line())


def test_live_output_under_the_spinner_shown_not_obeyed_and_ctrl_o_shows_all_of_it(
    simulator: Simulator, isolated_home: Path, tmp_path: Path
) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Building.", [ToolCall("run_shell", {"command": SLOW})]),
        Reply("Built."),
    ])

    async def main() -> None:
        settings = sim_settings(simulator, isolated_home)
        async with running_repl(settings, tmp_path, approver=allow_all) as repl:
            mark = await repl.submit("build")
            activity = repl.repl.activity
            await until(lambda: len(activity.output) == 5, "five live lines")
            assert all(line.startswith("compiling unit ") for line in activity.output)
            drawn = "".join(text for _style, text, *_ in repl.repl.view._output_lines())
            units = [line for line in drawn.split("\n") if "compiling unit" in line]
            assert len(units) == 5 and all(line.endswith(SHOWN) for line in units)
            assert "\u202e" not in drawn and "\x9b" not in drawn  # drawn outside rich's guard
            shown = visible(activity.output[-1])
            await repl.keys("\x0f")  # ctrl-o
            await repl.wait_for("full result of run_shell (so far)", after=mark)
            assert f"compiling unit 1 {SHOWN}\ncompiling unit 2 {SHOWN}\n" in repl.text[mark:]
            assert shown in repl.text[mark:]
            await repl.wait_for("Built.", after=mark)
            assert activity.output == []  # gone once the command finished
            assert await repl.exit() == 0

    asyncio.run(main())


def test_background_shells_on_the_status_line_and_in_shells(
    simulator: Simulator, isolated_home: Path, tmp_path: Path
) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Starting the watcher.", [ToolCall("run_shell", {
            "command": "echo watching; sleep 120", "run_in_background": True})]),
        Reply("It runs."),
    ])

    async def main() -> None:
        settings = sim_settings(simulator, isolated_home)
        async with running_repl(settings, tmp_path, approver=allow_all) as repl:
            assert "shell" not in status_text(repl)
            mark = await repl.submit("watch the files")
            await repl.wait_for("It runs.", after=mark)
            assert "· 1 shell" in status_text(repl)
            mark = await repl.submit("/shells")
            await repl.wait_for("stop one with /shells kill <id>", after=mark)
            assert "bash_1" in repl.text[mark:] and "echo watching; sleep 120" in repl.text[mark:]
            mark = await repl.submit("/shells kill bash_9")
            await repl.wait_for("no background shell 'bash_9'", after=mark)
            mark = await repl.submit("/shells kill bash_1")
            await repl.wait_for("stopped bash_1", after=mark)
            assert repl.session.shells.running() == []
            assert "shell" not in status_text(repl)
            assert await repl.exit() == 0

    asyncio.run(main())


def test_exit_stops_the_background_shells(
    simulator: Simulator, isolated_home: Path, tmp_path: Path
) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Starting.", [ToolCall("run_shell", {
            "command": "sleep 120", "run_in_background": True})]),
        Reply("Started."),
    ])

    async def main() -> None:
        settings = sim_settings(simulator, isolated_home)
        async with running_repl(settings, tmp_path, approver=allow_all) as repl:
            mark = await repl.submit("start it")
            await repl.wait_for("Started.", after=mark)
            shells = repl.session.shells
            assert len(shells.running()) == 1
            assert await repl.exit() == 0
            assert shells.running() == []

    asyncio.run(main())


# Bounded (40 s) even if nothing stops it; waits for ``go`` before its last line.
WAITING = ("for i in $(seq 1 400); do echo tick $i; [ -e go ] && break; sleep 0.1; done; "
           "echo part $((6*7)); sleep 60")


def spinner_text(repl: ReplDriver) -> str:
    return "".join(text for _style, text, *_ in repl.repl.view._spinner_line())


def test_ctrl_b_sends_the_running_command_to_the_background_and_the_turn_goes_on(
    simulator: Simulator, isolated_home: Path, tmp_path: Path
) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Running it.", [ToolCall("run_shell", {"command": WAITING})]),
        Reply("It goes on in the background."),
    ])

    async def main() -> None:
        settings = sim_settings(simulator, isolated_home)
        async with running_repl(settings, tmp_path, approver=allow_all) as repl:
            await repl.keys("\x02")  # at the prompt, nothing runs: nothing happens
            mark = await repl.submit("/shells")
            await repl.wait_for("no background shells in this session", after=mark)
            mark = await repl.submit("run it")
            await until(lambda: any(line.startswith("tick ") for line in repl.repl.activity.output),
                        "the command's live lines")
            assert "ctrl+b to run in background" in spinner_text(repl)
            await repl.keys("\x02")  # ctrl-b
            await repl.wait_for("It goes on in the background.", after=mark)
            shells = repl.session.shells
            assert [s.id for s in shells.running()] == ["bash_1"]
            assert "moved this command to the background" in json.dumps(
                simulator.requests[-1].body)
            assert "· 1 shell" in status_text(repl)
            assert "ctrl+b" not in spinner_text(repl)
            (tmp_path / "go").write_text("")
            await until(lambda: b"part 42" in shells.get("bash_1").log_path.read_bytes(),
                        "the output after the move in the shell's log")
            mark = await repl.submit("/shells bash_1")
            await repl.wait_for("part 42", after=mark)
            assert "tick 1\n" in repl.text[mark:]  # the output from before the move heads it
            mark = await repl.submit("/shells kill bash_1")
            await repl.wait_for("stopped bash_1", after=mark)
            assert await repl.exit() == 0

    asyncio.run(main())
