"""``--input-format stream-json``: one session driven by JSON lines on stdin.

Each ``{"type": "user", "message": {...}}`` line is one turn, run in order; its
lines and its result are written as print mode writes them (stream-json). A user
message that arrives while a turn runs (and none waits before it) steers that turn, as
Claude Code does: the model reads it after the current step's tool results, and the
turn's one result line covers it. What the turn could not deliver (it ended without
another model call, or was interrupted) runs as the next turn.
``control_request`` / ``control_response`` lines interleave with the turns (see
``control.py``). When stdin closes, the turns already received run to their end and
the session closes; nothing on stdin is ever sent to the model but user messages.
This is how the Claude Agent SDK drives Claude Code, so tool names and inputs in
the output follow Claude Code's (see ``claude_names.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import threading
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from mini_claude.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_OUTPUT_CLOSED, EXIT_USAGE
from mini_claude.headless import HeadlessReporter, stop_signals
from mini_claude.headless.claude_names import ToolNames
from mini_claude.headless.control import (
    ControlApprover,
    ControlChannel,
    ControlError,
    Line,
    failure,
    hook_layer,
    mcp_transport,
    success,
)
from mini_claude.headless.options import HeadlessOptions
from mini_claude.headless.safe_json import OutputClosed, dumps_line, write_or_close
from mini_claude.headless.session_setup import SetupFailed, open_session, start_agent
from mini_claude.permissions.asking import Approver, deny_all
from mini_claude.permissions.mode_table import parse_mode
from mini_claude.settings import Settings
from mini_claude.tools.process import kill_live_groups

if TYPE_CHECKING:
    from mini_claude.agent.loop import Agent
    from mini_claude.session.wiring import Session

END = None  # stdin closed
CLAUDE_VIEW = ToolNames(claude=True)


def run_stream_input(settings: Settings, cwd: Path, args: argparse.Namespace) -> int:
    restore_signals = stop_signals.install()
    run = StreamRun(settings, cwd, args, sys.stdout, sys.stderr)
    stop_signals.last_words.append(run.finish_interrupted)
    try:
        return asyncio.run(run.main())
    except OutputClosed:
        return EXIT_OUTPUT_CLOSED
    except (KeyboardInterrupt, asyncio.CancelledError):
        kill_live_groups()
        run.finish_interrupted()
        return stop_signals.exit_code()
    finally:
        kill_live_groups()
        stop_signals.last_words.remove(run.finish_interrupted)
        restore_signals()


class StreamRun:
    """The session, the turns waiting their turn, and the control channel."""

    def __init__(self, settings: Settings, cwd: Path, args: argparse.Namespace,
                 out: TextIO, err: TextIO) -> None:
        self.settings = settings
        self.cwd = cwd
        self.args = args
        self.out = out
        self.err = err
        self.options = HeadlessOptions.from_args(args)
        self.channel = ControlChannel(self.write)
        self.session: Session | None = None
        self.agent: Agent | None = None
        self.reporter: HeadlessReporter | None = None
        self.turns: asyncio.Queue[Line | None] = asyncio.Queue()
        # Steering messages a turn ended without delivering: the next turns, before any queued.
        self.undelivered: deque[str] = deque()
        self.current: asyncio.Task[None] | None = None
        self.interrupted = False
        self.last_failed = False
        self.setup_failed = False
        self.mcp_started = False
        self._registered_hooks: object = None
        self._agents: dict[str, dict[str, Any]] = {}
        self._handlers: dict[str, asyncio.Task[None]] = {}

    # ---- output -------------------------------------------------------------------------

    def write(self, line: Line) -> None:
        write_or_close(self.out, dumps_line(line) + "\n")

    def finish_interrupted(self) -> None:
        """The result line of a turn cut short by a signal (once)."""
        if self.reporter is not None:
            with contextlib.suppress(OSError, ValueError, OutputClosed):
                self.reporter.finish(interrupted=True)

    # ---- the main loop ------------------------------------------------------------------

    async def main(self) -> int:
        stop_signals.cancel_in_loop()
        lines: asyncio.Queue[bytes | None] = asyncio.Queue()
        _read_in_background(lines, asyncio.get_running_loop())
        worker = asyncio.create_task(self._run_turns())
        try:
            while (raw := await lines.get()) is not END:
                self._dispatch(raw)
                if self.setup_failed:
                    break
            await self.turns.put(END)
            await worker
        finally:
            self.channel.close()
            worker.cancel()
            with contextlib.suppress(BaseException):
                await worker
            for handler in list(self._handlers.values()):
                handler.cancel()
            await self._close()
        if self.setup_failed:
            return EXIT_USAGE
        return EXIT_FAILED if self.last_failed else EXIT_OK

    def _dispatch(self, raw: bytes) -> None:
        text = raw.decode("utf-8", errors="replace").strip()
        if not text:
            return
        try:
            line = json.loads(text)
        except ValueError:
            self._warn(f"stdin: a line that is not JSON was skipped: {text[:80]}")
            return
        if not isinstance(line, dict):
            self._warn("stdin: a line that is not a JSON object was skipped")
            return
        kind = line.get("type")
        if kind == "user":
            if not self._steer(line):
                self.turns.put_nowait(line)
        elif kind == "control_request":
            self._handle_request(line)
        elif kind == "control_response":
            self.channel.answer(line)
        elif kind == "control_cancel_request":
            handler = self._handlers.pop(str(line.get("request_id")), None)
            if handler is not None:
                handler.cancel()
        elif kind in ("keep_alive", "update_environment_variables"):
            return
        else:
            self._warn(f"stdin: a line of type {kind!r} was skipped (expected user or "
                       "control_request)")

    def _steer(self, line: Line) -> bool:
        """Send a user message into the running turn; False when it must be a turn of its
        own (no turn runs, messages already wait for their turn, it has no text, or it is a
        command, which waits for the turn's end as in the REPL)."""
        from mini_claude.session.custom_commands import find_invocation

        text = user_text(line)
        running = self.current is not None and not self.current.done()
        if (not running or not self.turns.empty() or self.agent is None or self.session is None
                or text is None or find_invocation(self.session, text) is not None):
            return False
        return self.agent.steer(text)

    def _warn(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            print(f"mini-claude: {text}", file=self.err, flush=True)

    # ---- turns --------------------------------------------------------------------------

    async def _run_turns(self) -> None:
        while (message := await self._next_message()) is not END:
            prompt = user_text(message)
            if prompt is None:
                self._warn("stdin: a user message without text was skipped")
                continue
            if not await self._ensure_agent():
                return
            self.current = asyncio.create_task(self._turn(prompt))
            try:
                await self.current
            finally:
                self.current = None
                self._take_back_steering()

    async def _next_message(self) -> Line | None:
        if self.undelivered:
            return {"type": "user", "message": {"role": "user",
                                                "content": self.undelivered.popleft()}}
        return await self.turns.get()

    def _take_back_steering(self) -> None:
        """Messages sent into a turn that ended before its next model call go back, to run
        as the next turns in the order they came."""
        if self.agent is not None:
            self.undelivered.extend(self.agent.take_steering())

    async def _turn(self, prompt: str) -> None:
        from mini_claude.headless.printmode import run_info
        from mini_claude.session.custom_commands import prompt_events

        session, agent = self.session, self.agent
        assert session is not None and agent is not None
        await self._start_mcp(session)
        reporter = HeadlessReporter(
            "stream-json", self.out, None,
            partial=bool(getattr(self.args, "include_partial_messages", False)),
            names=CLAUDE_VIEW,
        )
        self.reporter = reporter
        reporter.begin(run_info(session, agent, self.options), agent)
        self.interrupted = False
        try:
            async for event in prompt_events(session, prompt, self.options.max_turns):
                reporter.handle(event)
        except asyncio.CancelledError:
            if not self.interrupted:
                raise  # the process is stopping: main() writes the result
        outcome = reporter.finish(interrupted=self.interrupted)
        self.last_failed = outcome is not None and outcome.is_error and not self.interrupted
        self.reporter = None

    def interrupt(self) -> None:
        """Stop the running turn (its result line says so); later turns still run."""
        if self.current is not None and not self.current.done():
            self.interrupted = True
            self.current.cancel()

    # ---- the session --------------------------------------------------------------------

    def _approver(self) -> Approver:
        if getattr(self.args, "permission_prompt_tool", None) == "stdio":
            return ControlApprover(self.channel, self.interrupt)
        return deny_all

    async def _ensure_agent(self) -> bool:
        if self.agent is not None:
            return True
        if self.setup_failed:
            return False
        layer = hook_layer(self.channel, self._registered_hooks)
        try:
            session = open_session(self.settings, self.cwd, self.args, self._approver(),
                                   self.err, extra_settings=[layer] if layer else None,
                                   extra_agents=self._agents)
        except SetupFailed as exc:
            self._setup_failed(str(exc))
            return False
        self.session = session
        session.mcp.sdk_transport = mcp_transport(self.channel)
        try:
            self.agent = start_agent(session, self.args, self.err)
        except SetupFailed as exc:
            self._setup_failed(str(exc))
            return False
        self.agent.steering_extends_turn = False  # Claude Code's way (see the module's doc)
        return True

    def _setup_failed(self, message: str) -> None:
        self._warn(message)
        self.setup_failed = True

    async def _start_mcp(self, session: Session) -> None:
        from mini_claude.headless.printmode import start_mcp_servers

        if not self.mcp_started:
            self.mcp_started = True
            await start_mcp_servers(session, getattr(self.args, "trust_project_mcp", False),
                                    self.err)

    async def _close(self) -> None:
        from mini_claude.agent.lifecycle import end_session

        session, agent = self.session, self.agent
        if session is None:
            return
        try:
            if agent is not None:
                for warning in await end_session(agent.hooks, "other"):
                    self._warn(f"warning: {warning}")
        finally:
            await session.aclose()

    # ---- control requests from the program ----------------------------------------------

    def _handle_request(self, line: Line) -> None:
        request_id = str(line.get("request_id", ""))
        request = line.get("request")
        if not isinstance(request, dict):
            self.write(failure(request_id, "a control request needs a request object"))
            return
        task = asyncio.create_task(self._answer(request_id, request))
        self._handlers[request_id] = task
        task.add_done_callback(lambda _t: self._handlers.pop(request_id, None))

    async def _answer(self, request_id: str, request: Line) -> None:
        subtype = request.get("subtype")
        handler = CONTROL_HANDLERS.get(str(subtype))
        if handler is None:
            self.write(failure(request_id, f"mini-claude does not support the control "
                                           f"request {subtype!r}"))
            return
        try:
            response = await handler(self, request)
        except (ControlError, ValueError) as exc:
            self.write(failure(request_id, str(exc)))
            return
        self.write(success(request_id, response))

    async def _initialize(self, request: Line) -> Line:
        if self.session is not None:
            raise ControlError("initialize must come before the first message")
        self._registered_hooks = request.get("hooks")
        agents = request.get("agents")
        if isinstance(agents, dict):
            self._agents = {str(k): v for k, v in agents.items() if isinstance(v, dict)}
        if not await self._ensure_agent():
            raise ControlError("the session could not start (see stderr)")
        assert self.session is not None
        return {
            "commands": [{"name": c.name, "description": c.description, "argumentHint": ""}
                         for c in self.session.commands.commands.values()],
            "models": [{"value": self.settings.model, "displayName": self.settings.model,
                        "description": f"{self.settings.provider} (the session's model)"}],
            "output_style": "default",
            "available_output_styles": ["default"],
            "pid": _pid(),
        }

    async def _interrupt(self, request: Line) -> Line | None:
        self.interrupt()
        return None

    async def _set_permission_mode(self, request: Line) -> Line | None:
        mode = parse_mode(str(request.get("mode", "")))
        session = await self._session()
        permissions = session.permission_setup.permissions
        permissions.set_mode(mode)
        if permissions.mode != mode:
            raise ControlError(f"{mode} is disabled by a settings file")
        return None

    async def _set_model(self, request: Line) -> Line | None:
        from mini_claude.models import provider_row

        model = request.get("model")
        session = await self._session()
        chosen = str(model) if model else provider_row(self.settings.provider).default_model
        session.switch_model(chosen)
        return None

    async def _mcp_status(self, request: Line) -> Line:
        session = await self._session()
        return {"mcpServers": [{"name": view.name, "status": _mcp_state(view.state),
                                "scope": view.scope} for view in session.mcp.views()]}

    async def _session(self) -> Session:
        if not await self._ensure_agent() or self.session is None:
            raise ControlError("the session could not start (see stderr)")
        return self.session


def _mcp_state(state: str) -> str:
    """Claude Code's words for a server's state."""
    if state == "connected":
        return "connected"
    if state.startswith("failed"):
        return "failed"
    return "pending" if state == "connecting" else state


def _pid() -> int:
    import os

    return os.getpid()


CONTROL_HANDLERS: dict[str, Any] = {
    "initialize": StreamRun._initialize,
    "interrupt": StreamRun._interrupt,
    "set_permission_mode": StreamRun._set_permission_mode,
    "set_model": StreamRun._set_model,
    "mcp_status": StreamRun._mcp_status,
}


def user_text(message: Line) -> str | None:
    """The text of a user message line (a string, or its text blocks joined)."""
    body = message.get("message")
    content = body.get("content") if isinstance(body, dict) else None
    if isinstance(content, str):
        return content if content.strip() else None
    if isinstance(content, list):
        texts = [b.get("text", "") for b in content
                 if isinstance(b, dict) and b.get("type") == "text"]
        joined = "\n\n".join(t for t in texts if isinstance(t, str) and t.strip())
        return joined or None
    return None


def _read_in_background(lines: asyncio.Queue[bytes | None],
                        loop: asyncio.AbstractEventLoop) -> None:
    """stdin, line by line, from a thread (a pipe, a file or a terminal alike)."""
    stream = getattr(sys.stdin, "buffer", None)

    def read() -> None:
        try:
            while stream is not None:
                raw = stream.readline()
                if not raw:
                    break
                loop.call_soon_threadsafe(lines.put_nowait, raw)
        except (OSError, ValueError):
            pass
        finally:
            with contextlib.suppress(RuntimeError):  # the loop already closed
                loop.call_soon_threadsafe(lines.put_nowait, END)

    threading.Thread(target=read, name="stdin-reader", daemon=True).start()
