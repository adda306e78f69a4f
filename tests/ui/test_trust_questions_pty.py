"""Keys typed while mini-claude starts never answer a trust question.

The installed entry point runs in a real pseudo-terminal. A probe holds start-up
right after the header (the terminal is already in the mode that keeps typed keys
for the prompt) until the test has typed a message and Enter and the terminal
holds those bytes; only then do the project's trust questions come up. So the keys
are pending before every question is on screen, on every run.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pexpect
import pytest

from mini_claude.mcp.config import PROJECT_CONFIG_NAME
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator
from tests.support.claude_project import hook, hook_script, write_hooks
from tests.support.hostile import PROVIDERS, Provider
from tests.support.mcp import stdio_entry, write_config

WAIT_SECONDS = 60.0
TYPED_EARLY = "hello from the first second"
ANSWERED = "Typed early and answered."
HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "Stop")

HOLD_AFTER_HEADER = """\
import fcntl, os, sys, termios, time
from mini_claude.ui import repl as repl_module

_ready, _go = sys.argv.pop(1), sys.argv.pop(1)
_header = repl_module.Repl._print_header


def _pending_bytes():
    return int.from_bytes(fcntl.ioctl(0, termios.FIONREAD, b"\\0\\0\\0\\0"), "little")


def header(self):
    _header(self)
    open(_ready, "w").close()
    while not os.path.exists(_go) or not open(_go).read():
        time.sleep(0.01)
    typed = int(open(_go).read())
    while _pending_bytes() < typed:  # the keys are in the terminal, unread
        time.sleep(0.01)


repl_module.Repl._print_header = header
from mini_claude.cli import main
sys.exit(main())
"""


def _environment(sim: Simulator, provider: Provider) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    if provider == "anthropic":
        env.update({"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": sim.anthropic_base_url})
    else:
        env.update({"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": sim.openai_base_url})
    env.update({
        "MINI_CLAUDE_PROVIDER": provider,
        "MINI_CLAUDE_MODEL": "sim-model",
        "MINI_CLAUDE_MAX_RETRIES": "0",
        "TERM": "xterm-256color",
        "PROMPT_TOOLKIT_NO_CPR": "1",
    })
    return env


def _hostile_project(project: Path, marks: Path) -> Path:
    """A repository with an MCP server and project hooks, each leaving a mark when it runs."""
    started = marks / "mcp-server-started"
    write_config(project / PROJECT_CONFIG_NAME, {"sample": stdio_entry(started)})
    write_hooks(project / ".mini-claude" / "settings.json", {
        event: [hook(hook_script(marks, event, ""))] for event in HOOK_EVENTS})
    return started


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_message_typed_during_start_up_answers_no_trust_question(
        provider: Provider, tmp_path: Path, isolated_home: Path) -> None:
    project, marks = tmp_path / "project", tmp_path / "marks"
    project.mkdir()
    marks.mkdir()
    started = _hostile_project(project, marks)
    probe, ready, go = tmp_path / "probe.py", tmp_path / "ready", tmp_path / "go"
    probe.write_text(HOLD_AFTER_HEADER)
    typed = TYPED_EARLY + "\r"
    with Simulator(ScriptedPolicy([Reply(text=ANSWERED)])) as sim:
        child = pexpect.spawn(sys.executable, [str(probe), str(ready), str(go)],
                              cwd=str(project), env=_environment(sim, provider),
                              dimensions=(40, 120), encoding="utf-8", codec_errors="replace")
        try:
            deadline = time.monotonic() + WAIT_SECONDS
            while not ready.exists():
                assert child.isalive() and time.monotonic() < deadline, "start-up never got on"
                child.expect([pexpect.TIMEOUT, pexpect.EOF], timeout=0.05)
            child.send(typed)  # before any question is on screen
            go.write_text(str(len(typed.encode())))

            child.expect("This project brings", timeout=WAIT_SECONDS)  # one panel for both
            child.expect("esc means no", timeout=WAIT_SECONDS)
            child.send("\r")  # a bare Enter typed after the question shows: no
            found = child.expect(["approved: MCP servers", "none of them is used"],
                                 timeout=WAIT_SECONDS)
            assert found == 1, "the keys typed before the question, or Enter, approved it"

            child.expect(ANSWERED, timeout=WAIT_SECONDS)  # the early message was kept and sent
            child.sendcontrol("d")
            child.expect(pexpect.EOF, timeout=WAIT_SECONDS)
        finally:
            child.close(force=True)
    assert not started.exists(), "the project's MCP server started"
    assert sorted(p.name for p in marks.glob("*.log")) == [], "a project hook ran"
    assert len(sim.requests) == 1
    assert TYPED_EARLY in json.dumps(sim.requests[0].body)
