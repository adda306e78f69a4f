"""A repository laid out for Claude Code works here, end to end over HTTP on both providers:
CLAUDE.md with imports and CLAUDE.local.md, rules with and without ``paths:``, custom
commands with arguments and front matter, and the session and turn hook events."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_claude import events as ev
from mini_claude.permissions.asking import deny_all
from mini_claude.project.commands import CustomCommand
from mini_claude.session.custom_commands import prompt_events
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.agent import PROVIDERS, Run, last_results, run_factory
from tests.support.claude_project import (
    claude_project,
    hook,
    hook_script,
    logged,
    write,
    write_hooks,
)


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = claude_project(tmp_path / "repo")
    (root / ".git").mkdir()
    return root


@pytest.fixture
def runs(simulator: Simulator, isolated_home: Path, repo: Path) -> Iterator[Any]:
    with run_factory(simulator, isolated_home, repo) as make:
        yield make


def invoke(run: Run, prompt: str, ask: Any = None) -> list[ev.Event]:
    async def collect() -> list[ev.Event]:
        return [e async for e in prompt_events(run.session, prompt, None, ask)]

    events = run.run(collect())
    run.events.extend(events)
    return events


def text_of(run: Run, index: int) -> str:
    conversation = run.model_requests()[index].conversation
    assert conversation is not None
    return conversation.last_user_text


def opening_of(run: Run, index: int) -> str:
    conversation = run.model_requests()[index].conversation
    assert conversation is not None
    return conversation.messages[0].text


def test_instruction_files_imports_and_rules_reach_the_model_as_documented(
    provider: str, runs: Any, simulator: Simulator, repo: Path,
) -> None:
    write(Path(os.environ["HOME"]) / ".claude" / "CLAUDE.md", "USER-CLAUDE-MARKER\n")
    simulator.policy = ScriptedPolicy([
        Reply("Reading.", [ToolCall("read_file", {"path": "src/app.py"})]),
        Reply("More.", [ToolCall("read_file", {"path": "src/util.py"}),
                        ToolCall("read_file", {"path": "README.md"})]),
        Reply("Done."),
    ])
    run = runs(provider)
    run.start()
    run.turn("look around")
    requests = run.model_requests()
    assert requests[0].conversation is not None
    system = requests[0].conversation.system
    for marker in ("USER-CLAUDE-MARKER", "# Team notes", "STYLE-MARKER", "TESTING-MARKER",
                   "LOCAL-MARKER", "GENERAL-RULE-MARKER"):
        assert system.count(marker) == 1, marker  # the import cycle loads nothing twice
    assert "SECRET-MARKER" not in system  # only in a code span and a fenced block
    assert "PY-RULE-MARKER" not in system  # waits for a matching path
    assert system.index("USER-CLAUDE-MARKER") < system.index("# Team notes")
    assert system.index("# Team notes") < system.index("STYLE-MARKER") < system.index(
        "LOCAL-MARKER")
    (app_result,) = last_results(requests[1])
    assert "print('app')" in app_result and app_result.count("PY-RULE-MARKER") == 1
    assert "<system-reminder>" in app_result and "src/app.py" in app_result
    assert not any("PY-RULE-MARKER" in r for r in last_results(requests[2]))  # once per rule
    assert all(r.conversation is not None and r.conversation.system == system for r in requests)
    run.compact()  # the rule the model was shown is written back after the summary
    simulator.policy = ScriptedPolicy([Reply("Still here.")])
    run.turn("and now?")
    after = run.model_requests()[-1].conversation
    assert after is not None
    assert "PY-RULE-MARKER" in "\n".join(m.text for m in after.messages)


def test_custom_commands_fill_in_arguments_run_their_lines_and_allow_for_one_turn(
    provider: str, runs: Any, simulator: Simulator, repo: Path,
) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Component made."),
        Reply("Checking.", [ToolCall("run_shell", {"command": "echo later"})]),
        Reply("Status explained."),
        Reply("Trying.", [ToolCall("run_shell", {"command": "echo after"})]),
        Reply("Refused, fine."),
    ])
    run = runs(provider)
    run.session.approver = deny_all  # nothing is allowed unless a rule says so
    run.start()
    asked: list[CustomCommand] = []

    async def approve(command: CustomCommand) -> bool:
        asked.append(command)
        return True

    invoke(run, "/frontend:component Button src/ui")
    first = run.model_requests()[0]
    assert first.conversation is not None and first.conversation.model == "sim-frontend"
    prompt = text_of(run, 0)
    assert "Create the component Button in src/ui (asked: Button src/ui)." in prompt
    assert "[Attached @README.md]\n" in prompt and "demo" in prompt
    assert asked == []  # a command that runs nothing needs no approval

    events = invoke(run, "/build-status 42", approve)
    assert [c.name for c in asked] == ["build-status"]
    status_prompt = text_of(run, 1)
    assert "STATUS-OF-42" in status_prompt and "Explain it for 42." in status_prompt
    assert run.model_requests()[1].conversation.model == "sim-model"
    assert any(isinstance(e, ev.ToolFinished) and "STATUS-OF-42" in e.result.content
               for e in events)
    (allowed,) = last_results(run.model_requests()[2])
    assert "later" in allowed and "Permission denied" not in allowed  # allowed for that turn

    run.turn("try again")
    (refused,) = last_results(run.model_requests()[4])
    assert refused.startswith("Permission denied")  # the turn is over: no rule allows it
    invoke(run, "/build-status 7", approve)
    assert len(asked) == 1  # approved once for this content of the file


def session_start_hook(logs: Path) -> list[dict[str, Any]]:
    """A SessionStart hook that prints ``SESSION-<source>`` (context for the model)."""
    return [hook(hook_script(logs, "start", "print('SESSION-' + event['source'])"))]


def test_turn_and_session_hooks_add_context_block_prompts_and_continue_the_model(
    provider: str, runs: Any, simulator: Simulator, isolated_home: Path, tmp_path: Path,
) -> None:
    logs = tmp_path / "logs"
    write_hooks(isolated_home / "settings.json", {
        "SessionStart": session_start_hook(logs),
        "UserPromptSubmit": [hook(hook_script(logs, "prompt", (
            "if 'forbidden' in event['prompt']:\n"
            "    print('not in this repository', file=sys.stderr); sys.exit(2)\n"
            "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'UserPromptSubmit',"
            " 'additionalContext': 'PROMPT-CONTEXT'}}))\n")))],
        "Stop": [hook(hook_script(logs, "stop", (
            "if not event['stop_hook_active']:\n"
            "    print(json.dumps({'decision': 'block', 'reason': 'run the tests too'}))\n")))],
    })
    simulator.policy = ScriptedPolicy([Reply("First answer."), Reply("Tests ran.")])
    run = runs(provider)
    run.start()
    events = run.turn("hello")
    finished = [e for e in events if isinstance(e, ev.TurnFinished)]
    assert [e.final_text for e in finished] == ["Tests ran."]
    first, second = run.model_requests()
    assert first.conversation is not None and second.conversation is not None
    opening = first.conversation.messages[0].text
    assert "hello" in opening and "SESSION-startup" in opening and "PROMPT-CONTEXT" in opening
    assert "SESSION-startup" not in first.conversation.system  # the system prompt is untouched
    assert "run the tests too" in second.conversation.last_user_text
    assert [e["stop_hook_active"] for e in logged(logs, "stop")] == [False, True]
    assert [e["source"] for e in logged(logs, "start")] == ["startup"]
    assert logged(logs, "prompt")[0]["prompt"] == "hello"

    blocked = run.turn("do the forbidden thing")
    errors = [e.message for e in blocked if isinstance(e, ev.TurnError)]
    assert errors == ["the prompt was blocked by a UserPromptSubmit hook: not in this repository"]
    assert len(run.model_requests()) == 2  # nothing was sent
    assert all("forbidden" not in m.text for m in run.agent.conversation.messages)

    run.session.start_new()  # /clear
    simulator.policy = ScriptedPolicy([Reply("Fresh.")])
    run.turn("again")
    assert [e["source"] for e in logged(logs, "start")] == ["startup", "clear"]
    assert "SESSION-clear" in opening_of(run, -1)


def test_a_stop_hook_that_never_lets_go_is_cut_off_at_the_limit(
    provider: str, runs: Any, simulator: Simulator, isolated_home: Path, tmp_path: Path,
) -> None:
    logs = tmp_path / "logs"
    write_hooks(isolated_home / "settings.json", {"Stop": [hook(hook_script(
        logs, "stop", "print('keep going', file=sys.stderr); sys.exit(2)\n"))]})
    simulator.policy = ScriptedPolicy([Reply(f"Answer {i}.") for i in range(6)])
    run = runs(provider, stop_hook_limit=2)
    run.start()
    events = run.turn("go")
    assert len(run.model_requests()) == 3  # the answer, then two continuations
    assert [e["stop_hook_active"] for e in logged(logs, "stop")] == [False, True, True]
    warnings = [e.text for e in events if isinstance(e, ev.Notice) and e.level == "warning"]
    assert any("asked to go on 2 times" in w for w in warnings)
    assert [e.final_text for e in events if isinstance(e, ev.TurnFinished)] == ["Answer 2."]


def test_session_start_runs_on_resume_and_compaction_and_subagent_stop_on_a_task(
    provider: str, runs: Any, simulator: Simulator, isolated_home: Path, tmp_path: Path,
) -> None:
    logs = tmp_path / "logs"
    write_hooks(isolated_home / "settings.json", {
        "SessionStart": session_start_hook(logs),
        "SubagentStop": [hook(hook_script(logs, "substop", (
            "if not event['stop_hook_active']:\n"
            "    print(json.dumps({'decision': 'block', 'reason': 'check the edge case'}))\n")))],
    })
    simulator.policy = ScriptedPolicy([
        Reply("Delegating.", [ToolCall("task", {"description": "look", "prompt": "look around"})]),
        Reply("Child answer."),
        Reply("Child checked the edge case."),
        Reply("Parent done."),
        Reply("After the summary."),
    ])
    run = runs(provider)
    run.start()
    run.turn("delegate")
    assert [e["stop_hook_active"] for e in logged(logs, "substop")] == [False, True]
    child_requests = run.model_requests()[1:3]
    assert "check the edge case" in child_requests[1].conversation.last_user_text
    run.compact()
    run.turn("continue")
    assert [e["source"] for e in logged(logs, "start")] == ["startup", "compact"]
    last = run.model_requests()[-1]
    assert last.conversation is not None
    assert "SESSION-compact" in "\n".join(m.text for m in last.conversation.messages)
    session_id = run.session.session_id
    run.agent.transcript.close()
    run.session.resume(session_id)
    simulator.policy = ScriptedPolicy([Reply("Resumed.")])
    run.turn("resumed?")
    assert logged(logs, "start")[-1]["source"] == "resume"
    assert "SESSION-resume" in run.model_requests()[-1].conversation.last_user_text


def test_continue_false_from_a_tool_hook_ends_the_turn_once_the_results_are_in(
    provider: str, runs: Any, simulator: Simulator, isolated_home: Path, tmp_path: Path,
) -> None:
    logs = tmp_path / "logs"
    write_hooks(isolated_home / "settings.json", {"PostToolUse": [hook(hook_script(logs, "post", (
        "print(json.dumps({'continue': False, 'stopReason': 'enough for today'}))\n")),
        "read_file")]})
    simulator.policy = ScriptedPolicy([
        Reply("Reading.", [ToolCall("read_file", {"path": "README.md"})]),
        Reply("Never asked."),
        Reply("Next turn."),
    ])
    run = runs(provider)
    run.start()
    events = run.turn("read")
    assert len(run.model_requests()) == 1
    (finished,) = [e for e in events if isinstance(e, ev.TurnFinished)]
    assert finished.stop_reason == "hook_stop"
    assert any(isinstance(e, ev.Notice) and "enough for today" in e.text for e in events)
    simulator.policy = ScriptedPolicy([Reply("Next turn.")])
    after = run.turn("go on")
    assert [e.final_text for e in after if isinstance(e, ev.TurnFinished)] == ["Next turn."]
    conversation = run.model_requests()[-1].conversation
    assert conversation is not None  # the read's result is still in the history
    assert any("demo" in r.content for m in conversation.messages for r in m.tool_results)


def test_a_skill_is_invoked_by_the_user_as_a_slash_command(
    provider: str, runs: Any, simulator: Simulator, repo: Path,
) -> None:
    write(repo / ".claude" / "skills" / "deploy" / "SKILL.md",
          "---\nname: deploy\ndescription: How we deploy.\n---\nDEPLOY-STEPS: tag, push.\n")
    simulator.policy = ScriptedPolicy([Reply("Deployed.")])
    run = runs(provider)
    run.start()
    invoke(run, "/deploy to staging")
    prompt = text_of(run, 0)
    assert "DEPLOY-STEPS: tag, push." in prompt and prompt.endswith("ARGUMENTS: to staging")
    assert run.agent.tool_context.loaded_skills.newest_first() == ["deploy"]
