"""Start-up: the first prompt is drawn before the agent chain is imported, and nothing is lost.

The structural check runs the installed entry point in a real pseudo-terminal
with one addition: prompt_toolkit's renderer writes ``sorted(sys.modules)`` to
a file the first time it draws. No timing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import sys
from pathlib import Path

import pexpect
import pytest

from mini_claude.settings import Settings
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator
from mini_claude.ui.startup import can_start_before_session

WAIT_SECONDS = 30.0
PROMPT_READY = r"ctrl-d exits[\s\S]*?> "

# What the first frame must not wait for: the agent loop, the compactor, the tools, the
# provider adapters and their SDKs, the session wiring and the event types.
HEAVY_MODULES = (
    "mini_claude.agent.loop",
    "mini_claude.context.compact",
    "mini_claude.context.pipeline",
    "mini_claude.events",
    "mini_claude.session.wiring",
    "mini_claude.tools.registry",
    "mini_claude.providers.anthropic",
    "mini_claude.providers.openai",
    "mini_claude.mcp.manager",
    "anthropic",
    "openai",
)

FIRST_FRAME_PROBE = """\
import json, sys
from prompt_toolkit.renderer import Renderer

_render = Renderer.render
_written = []
_out = sys.argv.pop(1)

def render(self, *args, **kwargs):
    if not _written:
        _written.append(True)
        with open(_out, "w") as out:
            json.dump(sorted(sys.modules), out)
    return _render(self, *args, **kwargs)

Renderer.render = render
from mini_claude.cli import main
sys.exit(main())
"""


def _environment(sim: Simulator) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": sim.anthropic_base_url,
        "MINI_CLAUDE_PROVIDER": "anthropic",
        "MINI_CLAUDE_MODEL": "sim-model",
        "MINI_CLAUDE_MAX_RETRIES": "0",
        "TERM": "xterm-256color",
        "PROMPT_TOOLKIT_NO_CPR": "1",
    })
    return env


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def test_the_first_prompt_is_drawn_before_the_agent_chain_is_imported(
        tmp_path: Path, project: Path, isolated_home: Path) -> None:
    probe, modules_file = tmp_path / "probe.py", tmp_path / "modules.json"
    probe.write_text(FIRST_FRAME_PROBE)
    with Simulator() as sim:
        child = pexpect.spawn(sys.executable, [str(probe), str(modules_file)], cwd=str(project),
                              env=_environment(sim), dimensions=(30, 100), encoding="utf-8",
                              codec_errors="replace")
        try:
            child.expect(PROMPT_READY, timeout=WAIT_SECONDS)
            child.sendcontrol("d")
            child.expect(pexpect.EOF, timeout=WAIT_SECONDS)
            after_exit = child.before
        finally:
            child.close(force=True)
    at_first_frame = set(json.loads(modules_file.read_text()))
    assert "mini_claude.ui.repl" in at_first_frame  # the probe saw the REPL's own prompt
    assert "prompt_toolkit" in at_first_frame
    loaded_too_early = [name for name in HEAVY_MODULES if name in at_first_frame]
    assert loaded_too_early == []
    # Leaving at once leaves nothing behind to list or resume.
    assert "resume with" not in after_exit
    assert list((isolated_home / "transcripts").glob("*")) == []


def test_a_message_typed_as_the_prompt_appears_is_sent(project: Path,
                                                       isolated_home: Path) -> None:
    policy = ScriptedPolicy([Reply(text="Typed early and answered.")])
    command = str(Path(sys.executable).with_name("mini-claude"))
    with Simulator(policy) as sim:
        child = pexpect.spawn(command, cwd=str(project), env=_environment(sim),
                              dimensions=(30, 100), encoding="utf-8", codec_errors="replace")
        try:
            child.expect(PROMPT_READY, timeout=WAIT_SECONDS)
            child.send("hello from the first second\r")  # no wait for the session to be built
            child.expect("Typed early and answered.", timeout=WAIT_SECONDS)
            child.sendcontrol("d")
            child.expect(pexpect.EOF, timeout=WAIT_SECONDS)
        finally:
            child.close(force=True)
    assert sim.requests, "the early message never reached the model"
    assert "hello from the first second" in json.dumps(sim.requests[0].body)


def _args(**values: object) -> argparse.Namespace:
    defaults: dict[str, object] = {"continue_session": False, "resume": None, "yes": False}
    defaults.update(values)
    return argparse.Namespace(**defaults)


def test_resuming_a_project_with_mcp_servers_or_no_key_builds_the_session_first(
        tmp_path: Path) -> None:
    keyed = Settings(provider="anthropic", api_keys={"anthropic": "k"}, home=tmp_path / "home")
    assert can_start_before_session(keyed, tmp_path, _args())
    assert not can_start_before_session(keyed, tmp_path, _args(continue_session=True))
    assert not can_start_before_session(keyed, tmp_path, _args(resume="2026"))
    keyless = Settings(provider="anthropic", home=tmp_path / "home")
    assert not can_start_before_session(keyless, tmp_path, _args())
    (tmp_path / ".mcp.json").write_text("{}")
    assert not can_start_before_session(keyed, tmp_path, _args())


def test_keys_typed_before_the_prompt_reach_it_as_typed_and_unechoed() -> None:
    import pty
    import termios

    from mini_claude.ui.early_keys import keys_kept_for_the_prompt

    controller, terminal = pty.openpty()
    original = termios.tcgetattr(terminal)
    with os.fdopen(terminal, "r", closefd=False) as stream:
        with keys_kept_for_the_prompt(stream):
            os.write(controller, b"hello\r")  # no newline: a canonical terminal would hold it
            assert os.read(terminal, 100) == b"hello\r"  # Enter is still Enter
            os.set_blocking(controller, False)
            with pytest.raises(BlockingIOError):
                os.read(controller, 100)  # nothing was echoed back to the screen
        assert termios.tcgetattr(terminal) == original
    os.close(controller)
    os.close(terminal)


def test_keys_kept_is_harmless_when_input_is_not_a_terminal(tmp_path: Path) -> None:
    from mini_claude.ui.early_keys import keys_kept_for_the_prompt

    with (tmp_path / "input.txt").open("w+") as stream, keys_kept_for_the_prompt(stream):
        stream.write("still usable")


def test_before_the_session_the_status_line_reads_the_settings_then_the_agents_meter(
        simulator: Simulator, isolated_home: Path, project: Path) -> None:
    from rich.console import Console

    from mini_claude.ui.repl import Repl
    from mini_claude.ui.startup import SessionStarter
    from tests.support.repl import sim_settings

    settings = sim_settings(simulator, isolated_home)

    def line(repl: Repl) -> str:
        return "".join(text for _style, text, *_ in repl._status_line())

    async def scenario() -> None:
        starter = SessionStarter(settings, project, _args())
        repl = Repl(None, Console(file=io.StringIO()), starter=starter)
        before = line(repl)
        assert "context 0% " in before and " 0/24k " in before
        assert settings.model in before and "$0.0000" in before
        session = repl.session  # first use builds it
        assert session.session_id == starter.session_id
        after = line(repl)
        assert " 0/24k " not in after  # the system prompt and the tool schemas count now
        session.agent.transcript.close()
        await session.provider.close()

    asyncio.run(scenario())


FIRST_TURN_PROBE = """\
import json, sys, threading
from mini_claude.ui import repl as repl_module

_out = sys.argv.pop(1)
_run_events = repl_module.Repl.run_events


async def run_events(self, events, label="thinking…"):
    for thread in threading.enumerate():
        if thread.name == "sdk-preload":
            thread.join()  # the warm-up the user's typing time pays for is over
    before = set(sys.modules)
    try:
        return await _run_events(self, events, label)
    finally:
        with open(_out, "w") as out:
            json.dump(sorted(set(sys.modules) - before), out)


repl_module.Repl.run_events = run_events
from mini_claude.cli import main
sys.exit(main())
"""


def test_the_first_reply_imports_nothing_the_warm_up_could_have(
        tmp_path: Path, project: Path, isolated_home: Path) -> None:
    probe, modules_file = tmp_path / "probe.py", tmp_path / "first_turn.json"
    probe.write_text(FIRST_TURN_PROBE)
    reply = "Here is **code**:\n\n```python\nprint('hi')\n```\n"
    with Simulator(ScriptedPolicy([Reply(text=reply)])) as sim:
        child = pexpect.spawn(sys.executable, [str(probe), str(modules_file)], cwd=str(project),
                              env=_environment(sim), dimensions=(30, 100), encoding="utf-8",
                              codec_errors="replace")
        try:
            child.expect(PROMPT_READY, timeout=WAIT_SECONDS)
            child.send("show me code\r")
            child.expect("print", timeout=WAIT_SECONDS)
            child.sendcontrol("d")
            child.expect(pexpect.EOF, timeout=WAIT_SECONDS)
        finally:
            child.close(force=True)
    imported_during_the_turn = json.loads(modules_file.read_text())
    slow = [name for name in imported_during_the_turn
            if name.split(".")[0] in ("anthropic", "openai", "markdown_it", "pygments", "h11")
            or name in ("rich.markdown", "rich.syntax", "mini_claude.ui.presenter")]
    assert slow == []
