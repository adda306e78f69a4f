"""Sub-agents in the real REPL: questions one at a time, the status line, Esc, /cost."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from mini_claude.agent.subagent import task_transcripts_dir
from mini_claude.conversation import INTERRUPTED_RESULT, validate
from mini_claude.simulator import Fault, Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.simulator.policies import user_contains
from tests.support.repl import running_repl, sim_settings, until
from tests.support.subagent import events_of, results, route, task_call


def shell_job(tag: str) -> ScriptedPolicy:
    return ScriptedPolicy(
        [Reply("Running.", [ToolCall("run_shell", {"command": f"echo {tag} >> log.txt"})])],
        final=Reply(f"{tag} done."))


def test_parallel_tasks_ask_one_question_at_a_time_and_cost_lists_them(
    simulator: Simulator, isolated_home: Path, tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    route(simulator, [Reply("Two.", [task_call("JOB-A", "first", agent_type="general"),
                                     task_call("JOB-B", "second", agent_type="general")])],
          [(user_contains("JOB-A"), shell_job("alpha")),
           (user_contains("JOB-B"), shell_job("beta"))], parent_final="Both finished.")

    async def main() -> None:
        async with running_repl(sim_settings(simulator, isolated_home), project) as repl:
            mark = await repl.submit("run both")
            await repl.wait_for("Do you want to proceed?", after=mark)
            await asyncio.sleep(0.3)  # the other task has asked by now, and must still wait
            assert repl.text[mark:].count("Do you want to proceed?") == 1
            await repl.keys("1")
            await until(lambda: repl.text[mark:].count("Do you want to proceed?") == 2,
                        "the second question")
            await repl.keys("1")
            await repl.wait_for("Both finished.", after=mark)
            shown = repl.text[mark:]
            assert "[task: first] echo alpha" in shown and "[task: second] echo beta" in shown
            assert "● task(first)" in shown and "● task(second)" in shown
            assert sorted((project / "log.txt").read_text().split()) == ["alpha", "beta"]
            mark = await repl.submit("/cost")
            await repl.wait_for("wall time", after=mark)
            assert re.search(r"of which sub-agents \(task\) 4 · [\d,]+ in",
                             " ".join(repl.text[mark:].split()))
            assert await repl.exit() == 0

    asyncio.run(main())


def test_the_status_line_names_a_running_task_and_esc_stops_it(
    simulator: Simulator, isolated_home: Path, tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("alpha\n")
    reading = Reply("Reading.", [ToolCall("read_file", {"path": "notes.txt"})])
    route(simulator, [Reply("Delegating.", [task_call("SLOW-JOB", "find the notes")])],
          [(user_contains("SLOW-JOB"), ScriptedPolicy([reading], final=Reply("late")))])
    simulator.inject(Fault("hang", when=lambda c: user_contains("SLOW-JOB")(c)
                           and bool(c.tool_results())))

    async def main() -> None:
        async with running_repl(sim_settings(simulator, isolated_home), project) as repl:
            mark = await repl.submit("find them")
            await until(lambda: repl.repl.activity.label == "task: find the notes · 1 call",
                        "the task's status")
            line = "".join(text for _style, text, *_ in repl.repl._status_line())
            assert "task: find the notes · 1 call" in line
            await repl.keys("\x1b")
            await repl.wait_for("Interrupted", after=mark)
            await repl.at_prompt()
            agent = repl.repl.agent
            assert validate(agent.conversation.messages) == []
            assert [r.content for r in results(agent)] == [INTERRUPTED_RESULT]
            session_id = repl.session.session_id
            [path] = task_transcripts_dir(repl.session.settings, session_id).glob("*.jsonl")
            assert [e["state"] for e in events_of(path, "task_end")] == ["interrupted"]
            assert await repl.exit() == 0

    asyncio.run(main())
