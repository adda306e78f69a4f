"""Tools for real work end to end over HTTP, both providers: a dev server in the background,
a page fetched from it, its log read, the server killed, three edits in one call, the shell's
id known after a compaction, and nothing left running when the session ends."""

from __future__ import annotations

import contextlib
import re
import socket
import sys
import time
from pathlib import Path

import pytest

from mini_claude import events as ev
from mini_claude.context.attachments import SHELLS_TITLE
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.simulator.types import SimConversation
from tests.support.agent import PROVIDERS, Runs, request_text
from tests.support.tools import process_alive

INDEX = "<html><body><h1>Widget shop</h1><p>Price: <b>42 EUR</b></p></body></html>"
APP = "NAME = 'old'\nPORT = 1\nDEBUG = True\n\ndef main():\n    return NAME\n"
SHELL_ID = re.compile(r"- (bash_\d+): running .*http\.server")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def listening(port: int, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.05)
    return False


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "site").mkdir(parents=True)
    (root / "site" / "index.html").write_text(INDEX)
    (root / "app.py").write_text(APP)
    return root


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_dev_server_in_the_background_survives_a_compaction_and_is_stopped(
    provider: str, runs: Runs, simulator: Simulator
) -> None:
    port = free_port()
    server = f"{sys.executable} -u -m http.server {port} --bind 127.0.0.1 --directory site"
    page = f"http://127.0.0.1:{port}/index.html"

    def fetch_once_listening(conv: SimConversation) -> Reply:
        assert listening(port), "the background server never started"
        return Reply("Fetching the page.", [ToolCall("web_fetch", {"url": page,
                                                                     "prompt": "the price"})])

    def read_the_log(conv: SimConversation) -> Reply:
        return Reply("Checking the server log.", [ToolCall("shell_output", {
            "shell_id": "bash_1", "filter": "GET /index.html"})])

    def recall_the_id(conv: SimConversation) -> Reply:
        found = SHELL_ID.search("\n".join(m.text for m in conv.messages))
        assert found, "the shell is not in the context after the compaction"
        return Reply("The server is still up; stopping it.",
                     [ToolCall("kill_shell", {"shell_id": found.group(1)})])

    edits = {"path": "app.py", "edits": [
        {"old": "NAME = 'old'", "new": "NAME = 'shop'"},
        {"old": "PORT = 1", "new": f"PORT = {port}"},
        {"old": "True", "new": "False"},
    ]}
    simulator.policy = ScriptedPolicy([
        Reply("Starting the server.", [ToolCall("run_shell", {
            "command": server, "run_in_background": True})]),
        fetch_once_listening,
        read_the_log,
        Reply("The page says 42 EUR."),
        recall_the_id,
        Reply("Updating the app.", [ToolCall("edit_file", edits)]),
        Reply("Done: server stopped, app updated."),
    ])
    run = runs(provider, web_fetch_allow_private="127.0.0.1")
    run.start()
    first = run.turn("start the dev server and tell me the price on its front page")
    results = {e.name: e.result.content for e in first if isinstance(e, ev.ToolFinished)}
    assert results["run_shell"].startswith("Started background shell bash_1 (pid ")
    pid = int(re.search(r"pid (\d+)", results["run_shell"]).group(1))  # type: ignore[union-attr]
    assert "**42 EUR**" in results["web_fetch"] and "[look for: the price]" in results["web_fetch"]
    log = results["shell_output"]
    assert log.startswith("[shell bash_1: running (")
    assert '"GET /index.html HTTP/1.1" 200' in log
    assert process_alive(pid)

    compacted = run.compact()
    assert any(isinstance(e, ev.CompactionFinished) for e in compacted)
    second = run.turn("stop the server and set the app's name, port and debug flag")
    after = run.model_requests()[-3]  # the first request after the summary
    text = request_text(after)
    assert SHELLS_TITLE in text and "bash_1: running" in text and "http.server" in text
    killed = [e for e in second if isinstance(e, ev.ToolFinished) and e.name == "kill_shell"]
    assert killed and killed[0].result.content.endswith("Stopped.")
    deadline = time.monotonic() + 10
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not process_alive(pid)
    edited = [e for e in second if isinstance(e, ev.ToolFinished) and e.name == "edit_file"]
    assert edited and not edited[0].result.is_error, edited[0].result.content
    assert (run.project / "app.py").read_text() == (
        f"NAME = 'shop'\nPORT = {port}\nDEBUG = False\n\ndef main():\n    return NAME\n"
    )
    assert run.session.shells.running() == []
    assert run.session.shells.stop_all() == 0  # nothing left for the session's end to stop


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_interrupted_command_gives_the_model_what_it_printed_so_far(
    provider: str, runs: Runs, simulator: Simulator
) -> None:
    import asyncio

    from mini_claude.agent.history import INTERRUPTED_OUTPUT_NOTE

    simulator.policy = ScriptedPolicy([
        Reply("Running the tests.", [ToolCall("run_shell", {
            "command": "for i in $(seq 1 100); do echo test $i passed; sleep 0.2; done"})]),
        Reply("Understood, stopping there."),
    ])
    run = runs(provider)
    run.start()
    seen: list[ev.ToolProgress] = []

    async def interrupt_after_some_output() -> None:
        async def consume() -> None:
            async for event in run.agent.turn("run the slow tests"):
                if isinstance(event, ev.ToolProgress):
                    seen.append(event)

        task = asyncio.ensure_future(consume())
        while not (seen and seen[-1].lines >= 3) and not task.done():
            await asyncio.sleep(0.05)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    run.run(interrupt_after_some_output())
    assert seen and seen[-1].last_lines(1)[0].startswith("test ")
    result = run.agent.conversation.messages[-1].tool_results[0]
    assert result.is_error
    assert result.content.startswith("test 1 passed\ntest 2 passed\ntest 3 passed")
    assert result.content.endswith(INTERRUPTED_OUTPUT_NOTE)
    run.turn("ok, what did you see?")
    assert INTERRUPTED_OUTPUT_NOTE in request_text(run.model_requests()[-1])
    assert "test 3 passed" in request_text(run.model_requests()[-1])
