"""Hooks end to end over HTTP, both providers: a PreToolUse hook blocks with a reason the model
reads, PreCompact instructions reach the summary request, PostCompact sees the sizes, and a
hook that fails or hangs is one warning while the session goes on. Project hooks need approval."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mini_claude import events as ev
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.agent import last_results

PY = sys.executable


def hook_entry(command: str, matcher: str = "", timeout: float | None = None) -> dict[str, Any]:
    hook: dict[str, Any] = {"type": "command", "command": command}
    if timeout is not None:
        hook["timeout"] = timeout
    return {"matcher": matcher, "hooks": [hook]}


def write_settings(path: Path, hooks: dict[str, list[dict[str, Any]]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": hooks}))


def script(tmp: Path, name: str, body: str) -> str:
    """A hook program in Python (no shell tools assumed); returns its command line."""
    path = tmp / f"{name}.py"
    path.write_text("import json, sys\nevent = json.load(sys.stdin)\n" + body)
    return f"{PY} {path}"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    for i in range(4):
        (root / f"log_{i}.txt").write_text("".join(f"LOG-{i} entry {n}\n" for n in range(300)))
    return root


@pytest.fixture
def hooks_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "hooks"
    folder.mkdir()
    return folder


def shell(command: str) -> Reply:
    return Reply("Running.", [ToolCall("run_shell", {"command": command})])


def warnings_of(events: list[ev.Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, ev.Notice) and e.level == "warning"]


def test_a_pre_tool_use_hook_blocks_a_call_with_a_reason_the_model_reads(
    provider: str, make_run: Any, simulator: Simulator, isolated_home: Path, project: Path,
    hooks_dir: Path,
) -> None:
    seen = hooks_dir / "seen.json"
    guard = script(hooks_dir, "guard", (
        f"open({str(seen)!r}, 'a').write(json.dumps(event) + '\\n')\n"
        "if 'rm ' in event['tool_input'].get('command', ''):\n"
        "    print('no deleting in this repository; move files to trash/ instead', "
        "file=sys.stderr)\n"
        "    sys.exit(2)\n"
    ))
    deny_json = script(hooks_dir, "deny", (
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', "
        "'permissionDecision': 'deny', 'permissionDecisionReason': 'secrets stay unread'}}))\n"
    ))
    write_settings(isolated_home / "settings.json", {"PreToolUse": [
        hook_entry(guard, "run_shell"), hook_entry(deny_json, "read_file")]})
    (project / "keep.txt").write_text("precious")
    simulator.policy = ScriptedPolicy([
        shell("rm keep.txt"),
        shell("echo fine > made.txt"),
        Reply("Reading.", [ToolCall("read_file", {"path": "keep.txt"})]),
        Reply("ok"),
    ])
    run = make_run(provider)
    run.start()
    run.turn("clean up")
    requests = run.model_requests()
    assert last_results(requests[1]) == [
        "Blocked by a PreToolUse hook: no deleting in this repository; move files to trash/ "
        "instead"]
    assert (project / "keep.txt").exists() and (project / "made.txt").exists()
    assert last_results(requests[3]) == ["Blocked by a PreToolUse hook: secrets stay unread"]
    first = json.loads(seen.read_text().splitlines()[0])
    assert first["hook_event_name"] == "PreToolUse" and first["tool_name"] == "run_shell"
    assert first["tool_input"] == {"command": "rm keep.txt"}
    assert first["cwd"] == str(project) and first["session_id"] == run.session.session_id
    assert first["transcript_path"].endswith(".jsonl")
    assert len(seen.read_text().splitlines()) == 2  # the matcher kept it off read_file


def test_post_tool_use_feedback_is_added_to_the_result(
    provider: str, make_run: Any, simulator: Simulator, isolated_home: Path, hooks_dir: Path,
) -> None:
    lint = script(hooks_dir, "lint", (
        "r = event['tool_response']\n"
        "if not r['is_error'] and 'made' in event['tool_input']['command']:\n"
        "    print(json.dumps({'decision': 'block', 'reason': 'made.txt needs a header line'}))\n"
    ))
    write_settings(isolated_home / "settings.json",
                   {"PostToolUse": [hook_entry(lint, "run_shell|write_file")]})
    simulator.policy = ScriptedPolicy([shell("echo x > made.txt"), Reply("ok")])
    run = make_run(provider)
    run.start()
    run.turn("make it")
    (result,) = last_results(run.model_requests()[1])
    assert result.endswith("[PostToolUse hook]: made.txt needs a header line")
    assert not result.startswith("[PostToolUse hook]")  # the tool's own output stays first


def test_compaction_hooks_add_instructions_and_see_the_sizes(
    provider: str, make_run: Any, simulator: Simulator, isolated_home: Path, hooks_dir: Path,
) -> None:
    pre_seen, post_seen = hooks_dir / "pre.json", hooks_dir / "post.json"
    pre = script(hooks_dir, "pre", (
        f"open({str(pre_seen)!r}, 'w').write(json.dumps(event))\n"
        "print('Keep every LOG-2 entry number that was mentioned.')\n"
    ))
    pre_json = script(hooks_dir, "pre_json", (
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreCompact', "
        "'customInstructions': 'Name the files that were read.'}}))\n"
    ))
    post = script(hooks_dir, "post", f"open({str(post_seen)!r}, 'w').write(json.dumps(event))\n")
    write_settings(isolated_home / "settings.json", {
        "PreCompact": [hook_entry(pre), hook_entry(pre_json, "manual")],
        "PostCompact": [hook_entry(post)],
    })
    simulator.policy = ScriptedPolicy([
        Reply("Reading.", [ToolCall("read_file", {"path": f"log_{i}.txt"})]) for i in range(3)
    ] + [Reply("Read them.")])
    run = make_run(provider, reattach_max_files=1)
    run.start()
    run.turn("read the logs")
    events = run.compact("the LOG-1 findings")
    (summary_request,) = run.summary_requests()
    assert summary_request.conversation is not None
    instruction = summary_request.conversation.messages[-1].text
    assert "Focus: the LOG-1 findings" in instruction
    assert ("Additional instructions for this summary:\nKeep every LOG-2 entry number that was "
            "mentioned.\n\nName the files that were read.") in instruction
    before = json.loads(pre_seen.read_text())
    assert before["hook_event_name"] == "PreCompact" and before["trigger"] == "manual"
    assert before["custom_instructions"] == "the LOG-1 findings"
    after = json.loads(post_seen.read_text())
    finished = next(e for e in events if isinstance(e, ev.CompactionFinished))
    assert after["hook_event_name"] == "PostCompact" and after["trigger"] == "manual"
    assert (after["tokens_before"], after["tokens_after"]) == (
        finished.tokens_before, finished.tokens_after)
    assert after["tokens_before"] > after["tokens_after"] > 0
    assert after["summary"] == finished.summary
    assert warnings_of(events) == []


def test_failing_and_hanging_hooks_are_one_warning_each_and_the_session_goes_on(
    provider: str, make_run: Any, simulator: Simulator, isolated_home: Path, hooks_dir: Path,
) -> None:
    """Hooks that cannot block (PostToolUse, compaction) warn and let the session go on;
    a failing guard (PreToolUse) blocks its call instead (see test_guards_e2e)."""
    broken = script(hooks_dir, "broken", "print('config missing', file=sys.stderr)\nsys.exit(1)\n")
    hanging = script(hooks_dir, "hang", "import time\ntime.sleep(30)\n")
    write_settings(isolated_home / "settings.json", {
        "PostToolUse": [hook_entry(broken, "run_shell"),
                        hook_entry(hanging, "run_shell", timeout=0.3)],
        "PostCompact": [hook_entry("exit 3")],
    })
    simulator.policy = ScriptedPolicy([shell("echo still-ran"), Reply("ok")])
    run = make_run(provider)
    run.start()
    events = run.turn("go")
    assert "still-ran" in last_results(run.model_requests()[1])[0]
    warnings = warnings_of(events)
    assert len(warnings) == 2
    assert "failed (exit 1): config missing" in warnings[0]
    assert "timed out after 0.3s and was stopped" in warnings[1]
    assert isinstance(events[-1], ev.TurnFinished)
    compacted = run.compact()
    assert any(isinstance(e, ev.CompactionFinished) for e in compacted)
    assert ["failed (exit 3)" in w for w in warnings_of(compacted)] == [True]


def test_a_failing_guard_blocks_its_call_with_one_warning(
    provider: str, make_run: Any, simulator: Simulator, isolated_home: Path, hooks_dir: Path,
) -> None:
    broken = script(hooks_dir, "broken", "print('config missing', file=sys.stderr)\nsys.exit(1)\n")
    write_settings(isolated_home / "settings.json",
                   {"PreToolUse": [hook_entry(broken, "run_shell")]})
    simulator.policy = ScriptedPolicy([shell("echo must-not-run"), Reply("ok")])
    run = make_run(provider)
    run.start()
    events = run.turn("go")
    (result,) = last_results(run.model_requests()[1])
    assert result.startswith("Blocked by a PreToolUse hook: the hook ")
    assert "failed (exit 1): config missing, so the call is blocked" in result
    assert "must-not-run" not in result
    assert ["failed (exit 1): config missing" in w for w in warnings_of(events)] == [True]


def test_project_hooks_run_only_after_the_user_approved_that_file(
    provider: str, make_run: Any, simulator: Simulator, project: Path, hooks_dir: Path,
) -> None:
    marker = hooks_dir / "ran.txt"
    touch = script(hooks_dir, "touch", f"open({str(marker)!r}, 'a').write('x')\n")
    settings_file = project / ".mini-claude" / "settings.json"
    write_settings(settings_file, {"PreToolUse": [hook_entry(touch)]})
    simulator.policy = ScriptedPolicy([shell("echo one"), Reply("ok")])
    run = make_run(provider)
    run.start()
    assert run.session.project_hooks_status() == "unknown"
    run.turn("one")
    assert not marker.exists()  # not approved: not run
    run.session.decide_project_hooks(False)
    assert run.session.project_hooks_status() == "denied"
    run.session.decide_project_hooks(True)
    simulator.policy = ScriptedPolicy([shell("echo two"), Reply("ok")])
    run.turn("two")
    assert marker.read_text() == "x"
    # The repository changes the file: the approval no longer counts.
    write_settings(settings_file, {"PreToolUse": [hook_entry(touch, "read_file")]})
    again = make_run(provider)
    again.start()
    assert again.session.project_hooks_status() == "unknown"
    assert not again.agent.hooks
