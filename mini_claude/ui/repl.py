"""The interactive session: read a message, run the turn with a live view, repeat.

The agent's event stream is pumped by its own task into a queue and shown
by the REPL's task. Interrupting cancels only the pump, so the cancellation
always lands inside the agent (which closes dangling tool calls and keeps the
history valid), never half-way through printing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from prompt_toolkit import PromptSession
from prompt_toolkit.application import run_in_terminal
from prompt_toolkit.application.current import get_app_or_none
from prompt_toolkit.completion import merge_completers
from prompt_toolkit.enums import EditingMode
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from rich.console import Console
from rich.text import Text

from mini_claude import __version__
from mini_claude.exit_codes import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from mini_claude.project.memory import memory_note
from mini_claude.session.user_shell import is_shell_command
from mini_claude.ui.claude_view import (
    CustomCommandCompleter,
    ask_held_imports,
    completion_rows,
    remember,
)
from mini_claude.ui.commands import COMMANDS, Outcome, dispatch, parse_command
from mini_claude.ui.conveniences import ModelCompleter, PathCompleter
from mini_claude.ui.hooks_view import ask_project_settings
from mini_claude.ui.live import LiveView, TurnActivity
from mini_claude.ui.mode_view import mode_marker
from mini_claude.ui.paste import PastedTexts, paste_keys
from mini_claude.ui.prompt_input import (
    EmptyInterrupt,
    SlashCommandCompleter,
    build_prompt,
    history_for,
)
from mini_claude.ui.recall import Recall, latest_summary, recap, recap_as_written
from mini_claude.ui.render import error_line, note
from mini_claude.ui.rewind_view import show_checkpoint_notices
from mini_claude.ui.screen_guard import guard_console
from mini_claude.ui.shells_view import running_label
from mini_claude.ui.startup import (
    SessionStarter,
    can_start_before_session,
    first_message,
    import_session_modules,
    new_session,
    warm_up_first_turn,
)
from mini_claude.ui.status_command import StatusCommand, status_payload
from mini_claude.ui.statusbar import percent, short_tokens, status_fragments

if TYPE_CHECKING:  # the agent chain is imported after the first prompt is drawn
    from mini_claude import events as ev
    from mini_claude.agent.loop import Agent
    from mini_claude.conversation import ImageBlock
    from mini_claude.permissions.asking import PermissionRequest
    from mini_claude.session.wiring import Session
    from mini_claude.settings import Settings

NOT_A_TERMINAL = ("the REPL needs a terminal; use -p \"PROMPT\" (or pipe the prompt in) "
                  "for non-interactive use")

INTERRUPT_REPEAT_SECONDS = 1.0
SHORT_ID = 8  # of a session id in the header: enough for -r, short enough for the line
INTERRUPTED_COMPACTION = "Interrupted · compaction cancelled; the conversation is as it was"
EXIT_COMMANDS = ("exit", "quit")
EXIT_AFTER_TURN = "/exit"  # what Ctrl-D typed during a turn queues
REWIND_COMMAND = "/rewind"
DEFAULT_API_HOSTS = ("api.anthropic.com", "api.openai.com")

EventQueue = asyncio.Queue["ev.Event | None"]  # None: the turn is over


def run_repl(settings: Settings, cwd: Path, args: argparse.Namespace) -> int:
    """Entry point from the CLI: build the session, then run the REPL until the user leaves."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print(f"mini-claude: {NOT_A_TERMINAL}", file=sys.stderr)
        return EXIT_USAGE
    console = Console(file=sys.stdout)  # before anything wraps stdout
    try:
        return asyncio.run(_start(settings, cwd, args, console))
    except KeyboardInterrupt:
        return EXIT_OK


async def _start(settings: Settings, cwd: Path, args: argparse.Namespace, console: Console) -> int:
    starter = SessionStarter(settings, cwd, args)
    # Imports waiting for approval: their question comes before the prompt, as the others do.
    if can_start_before_session(settings, cwd, args) and not starter.instructions.held:
        try:
            repl = Repl(None, console, starter=starter, first_message=first_message(args))
            return await repl.run()
        except Exception as exc:
            from mini_claude.session.wiring import SessionError  # loaded by then: it raised it

            if not isinstance(exc, SessionError):
                raise
            console.print(error_line(str(exc)))
            return EXIT_USAGE
    return await _start_with_session(settings, cwd, args, console)


async def _start_with_session(settings: Settings, cwd: Path, args: argparse.Namespace,
                              console: Console) -> int:
    """Resuming, or a project with MCP servers: the session is built before the prompt."""
    from mini_claude.session.wiring import SessionError

    session = new_session(settings, cwd, args)
    try:
        if args.continue_session or args.resume:
            session.resume(args.resume, fork=bool(getattr(args, "fork_session", False)))
        else:
            session.start_new(getattr(args, "session_id", None))
    except SessionError as exc:
        console.print(error_line(str(exc)))
        await session.provider.close()
        return EXIT_USAGE
    return await run_session_repl(session, console=console, first_message=first_message(args))


def preload_sdk_in_background(provider_name: str) -> None:
    """Import the slow SDK, and what else the first reply needs, while the user types.

    Started once the prompt is on screen: an import holds the interpreter
    for over a second, and doing it earlier would only delay the prompt.
    """
    threading.Thread(target=warm_up_first_turn, args=(provider_name,), name="sdk-preload",
                     daemon=True).start()


async def run_session_repl(session: Session, *, banner: str | None = None,
                           console: Console | None = None, resumable: bool = True,
                           first_message: str | None = None) -> int:
    """Run the REPL on a session that is already built (the CLI, `--demo` and tests use it).

    ``resumable=False`` (the demo, whose files are removed on exit) leaves out the
    closing transcript path and resume hint.
    """
    repl = Repl(session, console or Console(file=sys.stdout), banner=banner, resumable=resumable,
                first_message=first_message)
    return await repl.run()


class Repl:
    """Reads messages and slash commands, and shows each turn live until the user leaves."""

    def __init__(self, session: Session | None, console: Console, *, banner: str | None = None,
                 starter: SessionStarter | None = None, resumable: bool = True,
                 first_message: str | None = None) -> None:
        assert session is not None or starter is not None
        self.resumable = resumable
        self._session = session
        self.starter = starter  # builds the session after the first frame when given none
        self._building: asyncio.Task[None] | None = None
        self.console = guard_console(console)  # no control character reaches the terminal
        self.banner = banner
        self.activity = TurnActivity()
        self.started = time.monotonic()  # for /cost's wall time
        # Typed during a turn, sent when it ends; the command line's prompt is the first.
        self.queued: list[str] = [first_message] if first_message else []
        self.pastes = PastedTexts()  # long pastes, shown as placeholders, sent in full
        self.exit_requested = False
        self.terminated = False
        self._expanding: asyncio.Future[None] | None = None
        self.recall = Recall(summary=latest_summary(session.agent.conversation.messages)
                             if session is not None else None)
        self.verbose = self.settings.verbose
        self.view = LiveView(self.activity, self._status_line, self.interrupt,
                             lambda: self.agent.steps.chars_per_token,
                             on_submit=self._typed_during_turn, on_escape=self._escape_during_turn,
                             on_expand=self._expand_during_turn,
                             on_end_of_input=self._end_of_input_during_turn,
                             queued=lambda: self.queued,
                             steering=self._steering_pending,
                             on_queue=self._queue_for_after_turn,
                             on_cycle_mode=self.cycle_mode,
                             can_background=self._foreground_command_running,
                             on_background=self._send_to_background,
                             extra_keys=paste_keys(self.pastes))
        self.at_prompt = asyncio.Event()  # set while waiting for input
        self.prompts_shown = 0
        self._pump: asyncio.Task[None] | None = None
        self._queue: EventQueue | None = None
        self._steerable = False  # a model turn runs: Enter steers it
        self._prompt: PromptSession[str] | None = None
        self.vim_mode = self.settings.vim_mode
        self.status_command: StatusCommand | None = None  # the settings' statusLine
        self._warmed_up = False
        self._sdk_imported = False
        self._notifications: set[asyncio.Future[None]] = set()
        if session is not None:
            self._attach_approver(session)

    @property
    def session(self) -> Session:
        """The session; built here, on the spot, if something needs it before the background."""
        if self._session is None:
            assert self.starter is not None
            self._session = self.starter.build()
            self._attach_approver(self._session)
        return self._session

    @property
    def built_session(self) -> Session | None:
        """The session if it is built already (never builds it)."""
        return self._session

    @property
    def settings(self) -> Settings:
        if self._session is not None:
            return self._session.settings
        assert self.starter is not None
        return self.starter.settings

    @property
    def cwd(self) -> Path:
        if self._session is not None:
            return self._session.cwd
        assert self.starter is not None
        return self.starter.cwd

    @property
    def agent(self) -> Agent:
        return self.session.agent

    def _attach_approver(self, session: Session) -> None:
        from mini_claude.ui.permissions import TerminalApprover
        from mini_claude.ui.permissions_view import keep_rules_in_settings

        keep_rules_in_settings(session)
        if isinstance(session.approver, TerminalApprover):
            session.approver.attach(self.console, self.question, self.interrupt,
                                    self._status_line)
            session.approver.on_question = self._question_waiting

    def _question_waiting(self, request: PermissionRequest) -> None:
        """A permission question waits: tell the terminal (and the Notification hooks)."""
        message = f"mini-claude needs your permission to use {request.tool_name}"
        task = asyncio.ensure_future(self._notify(message, "permission_prompt"))
        self._notifications.add(task)
        task.add_done_callback(self._notifications.discard)

    async def _notify(self, message: str, kind: str) -> None:
        from mini_claude.ui.notify import Notifier

        notifier = Notifier(self.console.file, self.settings.notify)
        for warning in await notifier.notify(message, kind, self.agent.hooks):
            self.console.print(note(warning, "warning"))

    async def _build_session(self) -> None:
        """Right after the first frame: import the agent chain off the loop, then build.

        Then the SDK import and the MCP servers start, as they did after the prompt.
        """
        from mini_claude.ui.mcp_view import watch_servers

        await asyncio.to_thread(import_session_modules)
        session = self.session
        watch_servers(self)
        preload_sdk_in_background(session.settings.provider)
        session.mcp.start()
        if session.warnings:
            warnings, session.warnings[:] = list(session.warnings), []

            def write() -> None:
                for warning in warnings:
                    self.console.print(note(warning, "warning"))

            await self._print_at_prompt(write)
        app = get_app_or_none()
        if app is not None:
            app.invalidate()  # the status line now reads the real meter

    async def _print_at_prompt(self, write: Callable[[], None]) -> None:
        app = get_app_or_none()
        if self.at_prompt.is_set() and app is not None and app.is_running:
            await run_in_terminal(write)
        else:
            write()

    async def session_ready(self) -> Session:
        """The session, once the background build is over (its failure is raised here)."""
        if self._building is not None:
            building, self._building = self._building, None
            await building
        return self.session

    # ---- the loop -------------------------------------------------------------------

    async def run(self) -> int:
        self._print_header()
        if self._session is not None:
            from mini_claude.ui.mcp_view import ask_project_trust, watch_servers
            from mini_claude.ui.start_trust import ask_start_trust

            asked_at_once = await ask_start_trust(self)  # one panel for several items
            if not asked_at_once:
                await ask_project_trust(self)
            watch_servers(self)
            if not asked_at_once:
                await ask_project_settings(self)
                await ask_held_imports(self)
        try:
            with _sigint_calls(self.interrupt), _sigterm_calls(self.terminate):
                while not self.exit_requested and (text := await self._next_message()) is not None:
                    if not text.strip():
                        continue
                    await self.session_ready()
                    if parse_command(text) is not None:
                        if await dispatch(self, text) is Outcome.EXIT:
                            break
                        continue
                    if await remember(self, text):
                        continue
                    if is_shell_command(text):
                        await self.run_events(self.session.run_user_shell(text[1:].strip()),
                                              label="running your command…")
                        continue
                    await self.run_events(self._turn(text))
                    show_checkpoint_notices(self)
        finally:
            await self._close()
        return EXIT_INTERRUPTED if self.terminated else EXIT_OK

    def user_turn(self, text: str) -> AsyncIterator[ev.Event]:
        """A turn for text as the user typed it (``/init``'s prompt too)."""
        return self._turn(text)

    def send(self, text: str, images: Sequence[ImageBlock] = ()) -> AsyncIterator[ev.Event]:
        """A turn for text whose files are attached already (a custom command's prompt)."""
        self._steerable = True
        return self.agent.turn(text, images=images)

    def _turn(self, text: str) -> AsyncIterator[ev.Event]:
        """A model turn: from now until it ends, what is typed steers it."""
        self._steerable = True
        return self._prepared_turn(text)

    async def _prepared_turn(self, text: str) -> AsyncIterator[ev.Event]:
        """A message: its `@path` files attached, earlier `!command` output put before it."""
        from mini_claude.ui.mcp_view import wait_for_connecting_servers

        await wait_for_connecting_servers(self)
        prepared = await self.session.prepare(text)
        for event in prepared.events:
            yield event
        async for event in self.send(prepared.text, prepared.images):
            yield event

    async def _next_message(self) -> str | None:
        """A message queued during the last turn (echoed as if typed now), else the prompt."""
        if self.queued:
            self._warm_up()  # the command line's message comes before any prompt is drawn
            text = self.queued.pop(0)
            echo = Text("> ", style="bold magenta")
            echo.append(text)
            self.console.print(echo)
            return self.pastes.expand(text)
        self._refresh_status_command()
        return await self._read()

    def _refresh_status_command(self) -> None:
        """The user's ``statusLine`` command, run again with the session as it is now."""
        if self._session is None:
            return
        session = self._session
        if self.status_command is None:
            setup = session.permission_setup
            command = setup.layers.status_line(setup.project_approved)
            if command is None:
                return
            self.status_command = StatusCommand(command, str(self.cwd), self._redraw)
        costs, status = self.agent.costs, self.agent.status()
        self.status_command.refresh(status_payload(
            session_id=session.session_id, transcript_path=str(self.agent.transcript.path),
            cwd=str(self.cwd), model=session.settings.model, version=__version__,
            cost_usd=costs.dollars, api_seconds=costs.api_seconds,
            wall_seconds=time.monotonic() - self.started, tokens=status.tokens,
            window=status.window))

    def _redraw(self) -> None:
        app = get_app_or_none()
        if app is not None and app.is_running:
            app.invalidate()

    # ---- keys during a turn ---------------------------------------------------------

    def _typed_during_turn(self, text: str) -> None:
        """Enter in the live box: a message steers the running turn (a command, a `!` line
        or a `#` note waits for its end); /exit ends the turn and the program."""
        parsed = parse_command(text)
        if parsed is not None and parsed[0] in EXIT_COMMANDS:
            self.exit_requested = True
            self.interrupt()
            return
        if self._steerable and parsed is None and not is_shell_command(text) and (
                memory_note(text) is None):
            self.agent.steer(self.pastes.expand(text))
            self.view.refresh()
            return
        self._queue_for_after_turn(text)

    def _queue_for_after_turn(self, text: str) -> None:
        """Ctrl-X Enter (or what cannot steer): sent as the next message, once the turn ends."""
        self.queued.append(text)  # placeholders stay until it is sent
        self.view.refresh()

    def _foreground_command_running(self) -> bool:
        return self._session is not None and self._session.shells.foreground_running()

    def _send_to_background(self) -> None:
        """Ctrl-B: the running shell command goes on in the background; the turn goes on."""
        if self._session is not None:
            self.agent.send_commands_to_background()
            self.view.refresh()

    def _steering_pending(self) -> Sequence[str]:
        return self.agent.steering.pending if self._session is not None else ()

    def _end_of_input_during_turn(self) -> None:
        """Ctrl-D typed ahead leaves once the turn ends (a stop is Esc); Esc takes it back."""
        if EXIT_AFTER_TURN not in self.queued:
            self.queued.append(EXIT_AFTER_TURN)
            self.view.refresh()

    def _escape_during_turn(self) -> None:
        """Esc takes waiting messages back into the box first; otherwise it interrupts."""
        if self.queued or self._steering_pending():
            self._take_back_queued()
            return
        self.interrupt()

    def _take_back_queued(self) -> None:
        """Messages not sent yet (steering the model has not read, then queued ones) go back
        into the input box, unsent, joined in the order typed."""
        steering = self.agent.take_steering() if self._session is not None else []
        waiting = [*steering, *self.queued]
        if waiting:
            self.queued[:] = []
            self.view.put_back("\n".join(waiting))

    def _expand_during_turn(self) -> None:
        self._expanding = asyncio.ensure_future(self.view.print_above(
            lambda: self.console.print(self.recall.full_result())))

    def terminate(self) -> None:
        """SIGTERM or SIGHUP: stop the turn (its shell children die with it), leave the prompt,
        close up."""
        self.terminated = self.exit_requested = True
        self.interrupt()
        app = get_app_or_none()
        if app is not None and app.is_running and app.future is not None and not app.future.done():
            app.exit(exception=EOFError())

    async def _read(self) -> str | None:
        """The next message, or None when the user leaves (Ctrl-D, or Ctrl-C twice)."""
        prompt = self._prompt or self._build_prompt()
        armed = False
        while True:
            self.prompts_shown += 1
            self.at_prompt.set()
            keeper = self._keep_cache_warm()
            try:
                typed = await prompt.prompt_async(set_exception_handler=False,
                                                  pre_run=self._after_first_draw,
                                                  default=self.view.take_draft())
                return self.pastes.expand(typed)
            except EmptyInterrupt:
                if armed:
                    return None
                armed = True
                self.console.print(note("press Ctrl-C again to exit (or Ctrl-D)"))
            except (EOFError, KeyboardInterrupt):
                return None
            finally:
                self.at_prompt.clear()
                await _stop_quietly(keeper)

    def _keep_cache_warm(self) -> asyncio.Task[None] | None:
        """While the prompt waits, the last request stays cached (agent/keep_warm.py)."""
        if self._session is None:
            return None
        agent = self.agent

        async def sleep_until(moment: float) -> None:
            await asyncio.sleep(max(0.0, moment - agent.clock()))

        return asyncio.get_running_loop().create_task(agent.keep_cache_warm(sleep_until))

    async def _sdk_ready(self) -> None:
        """Finish importing the SDK in a thread, so the live view and the keys stay alive.

        Imported on the loop's own thread, the first request would hold the whole
        REPL (no spinner, keys echoed raw by the terminal) for as long as it takes.
        """
        if not self._sdk_imported:
            from mini_claude.providers import preload_sdk

            await asyncio.to_thread(preload_sdk, self.settings.provider)
            self._sdk_imported = True

    def _after_first_draw(self) -> None:
        """Runs before each prompt is drawn; the first time, schedules the SDK import after it."""
        self._warm_up()

    def _warm_up(self) -> None:
        """Once: build the session (when not built), import the SDK, start the MCP servers."""
        if not self._warmed_up:
            self._warmed_up = True
            if self._session is None:  # after the first frame, the session and then the SDK
                self._building = asyncio.get_running_loop().create_task(self._build_session())
                return
            asyncio.get_running_loop().call_soon(preload_sdk_in_background,
                                                 self.session.settings.provider)
            asyncio.get_running_loop().call_soon(self.session.mcp.start)  # after the prompt

    def _build_prompt(self) -> PromptSession[str]:
        settings = self.settings
        completer = merge_completers([
            SlashCommandCompleter(
                [(n, c.summary) for c in COMMANDS for n in (c.name, *c.aliases)]),
            CustomCommandCompleter(lambda: completion_rows(self)),
            PathCompleter(self.cwd),
            ModelCompleter(settings.provider, settings.model),
        ])
        self._prompt = build_prompt(history_for(settings.home), completer,
                                    self._status_line, extra_keys=self._prompt_keys())
        self._apply_editing_mode()
        return self._prompt

    def toggle_vim_mode(self) -> bool:
        """``/vim``: the prompt edits as vi does, or as before; returns whether vi is on."""
        self.vim_mode = not self.vim_mode
        self._apply_editing_mode()
        return self.vim_mode

    def _apply_editing_mode(self) -> None:
        if self._prompt is not None:
            self._prompt.app.editing_mode = EditingMode.VI if self.vim_mode else EditingMode.EMACS

    def _prompt_keys(self) -> KeyBindings:
        keys = paste_keys(self.pastes)

        @keys.add("c-o")
        def _expand(event: KeyPressEvent) -> None:
            run_in_terminal(lambda: self.console.print(self.recall.full_result()))

        @keys.add("s-tab")
        def _cycle_mode(event: KeyPressEvent) -> None:
            self.cycle_mode()

        @keys.add("escape", "escape")
        def _rewind(event: KeyPressEvent) -> None:
            """Esc Esc: /rewind on an empty prompt; otherwise it clears the box (Up recalls it)."""
            buffer = event.current_buffer
            if buffer.text:
                buffer.reset(append_to_history=True)
            else:
                event.app.exit(result=REWIND_COMMAND)

        return keys

    def cycle_mode(self) -> None:
        """Shift+Tab: the next permission mode, at once, also in the middle of a turn."""
        permissions = self.session.permission_setup.permissions
        permissions.set_mode(permissions.next_mode())
        self.refresh_status()

    def refresh_status(self) -> None:
        app = get_app_or_none()
        if app is not None:
            app.invalidate()

    async def run_events(self, events: AsyncIterator[ev.Event], label: str = "thinking…") -> bool:
        """Show a turn (or a compaction) live; False when the user interrupted it."""
        from mini_claude.ui.permissions import TerminalApprover
        from mini_claude.ui.presenter import INTERRUPTED_TURN, TurnPresenter

        self.activity.restart(label)
        began = time.monotonic()
        approver = self.session.approver
        shown = approver.shown_before if isinstance(approver, TerminalApprover) else None
        presenter = TurnPresenter(
            self.console, self.view, self.activity, verbose=self.verbose, recall=self.recall,
            shown_before=shown,
            interrupted_label=(INTERRUPTED_COMPACTION if label.startswith("compacting")
                               else INTERRUPTED_TURN))
        queue: EventQueue = asyncio.Queue()
        self._queue = queue
        self._pump = asyncio.create_task(_pump(events, queue, self._sdk_ready))
        # Closes the queue however the pump ends, even cancelled before it ever ran.
        self._pump.add_done_callback(lambda _: queue.put_nowait(None))
        self.view.start()
        try:
            while (event := await queue.get()) is not None:
                try:
                    await presenter.handle(event)
                except Exception as exc:  # a display bug must not end the session
                    self.console.print(error_line(f"could not display {type(event).__name__}: "
                                                  f"{type(exc).__name__}: {exc}"))
                finally:
                    queue.task_done()
            queue.task_done()
            interrupted = await self._pump_outcome(self._pump)
        finally:
            await self._stop_pump()
            await self.view.stop()
            self._end_steering()
        await presenter.finish(interrupted=interrupted)
        took = time.monotonic() - began
        if not interrupted and 0 < self.settings.notify_after_seconds <= took:
            await self._notify(f"done after {took:.0f}s; waiting for your input", "idle_prompt")
        return not interrupted

    def _end_steering(self) -> None:
        """The turn is over: what it did not take in time (it ended first) is the next
        message (an interruption gave it back to the box already)."""
        if self._steerable:
            self._steerable = False
            self.queued[:0] = self.agent.take_steering()

    async def _stop_pump(self) -> None:
        """Leave no agent work running behind the prompt (the REPL itself may be cancelled)."""
        pump, self._pump, self._queue = self._pump, None, None
        if pump is not None and not pump.done():
            pump.cancel()
            await asyncio.gather(pump, return_exceptions=True)

    async def _pump_outcome(self, pump: asyncio.Task[None]) -> bool:
        """True when the pump was interrupted; an agent bug becomes one red line."""
        try:
            await pump
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            return True
        except Exception as exc:  # the session must survive a failed turn
            line = error_line(f"internal error: {type(exc).__name__}: {exc}")
            await self.view.print_above(lambda: self.console.print(line))
        return False

    @property
    def turn_running(self) -> bool:
        return self._pump is not None and not self._pump.done()

    def interrupt(self) -> None:
        """Esc or Ctrl-C during a turn: stop the agent where it is.

        The user pressed stop, so nothing typed ahead is sent on its own: queued
        messages wait in the input box for the user to send, edit or clear.
        """
        self._take_back_queued()
        if self._pump is not None and not self._pump.done():
            self.activity.set("interrupting…")
            self._cancel_until_done(self._pump)

    def _cancel_until_done(self, pump: asyncio.Task[None]) -> None:
        """Cancel, and cancel again while the agent is still running.

        asyncio can swallow a cancellation: one that lands while a subprocess is
        being spawned leaves the task waiting for that process for good.
        """
        if not pump.done():
            pump.cancel()
            asyncio.get_running_loop().call_later(INTERRUPT_REPEAT_SECONDS,
                                                  self._cancel_until_done, pump)

    @asynccontextmanager
    async def question(self) -> AsyncIterator[None]:
        """Borrow the terminal for a question, after everything before it is on screen."""
        if self._queue is not None:
            await self._queue.join()
        async with self.view.paused():
            yield

    # ---- what is drawn --------------------------------------------------------------

    def _status_line(self) -> StyleAndTextTuples:
        activity = self.activity.label if self._pump is not None else None
        app = get_app_or_none()
        width = app.output.get_size().columns - 1 if app is not None else None
        if self._session is None:  # the first frame: read from the settings alone
            assert self.starter is not None
            return status_fragments(self.starter.idle_status(), self.starter.no_costs(),
                                    self.settings.model, activity, width)
        ours = status_fragments(self.agent.status(), self.agent.costs,
                                self.session.settings.model, activity, width,
                                mode_marker(self.session.permission_setup.permissions),
                                shells=running_label(self.session.shells))
        theirs = self.status_command.fragments() if self.status_command is not None else []
        return [*ours, ("", "\n"), *theirs] if theirs else ours

    def _print_header(self) -> None:
        settings = self.settings
        known = self._session if self._session is not None else self.starter
        assert known is not None
        parts = [
            f"mini-claude {__version__}",
            settings.provider,
            settings.model + _endpoint_label(settings.base_url),
            f"{short_tokens(settings.window)} window",
            _short_path(self.cwd),
            f"session {known.session_id[:SHORT_ID]}",  # a prefix -r takes
        ]
        files = [_short_path(p) for p in known.instructions.paths]
        parts.append("instructions: " + (", ".join(files) if files else "none"))
        header = Text(" · ".join(parts), style="bold")
        if self.banner:
            self.console.print(Text(self.banner, style="yellow"))
        self.console.print(header)
        if self._session is not None:
            self._print_session_start(self._session)
        self.console.print(Text("/help for commands · esc interrupts a turn · ctrl-d exits",
                                style="dim"))

    def _print_session_start(self, session: Session) -> None:
        messages = len(session.agent.conversation)
        if messages:
            self.show_resumed()
            self.console.print(note(f"resumed: {messages} messages, "
                                    f"context {percent(self.agent.status().utilization)}"))
        for warning in session.warnings:
            self.console.print(note(warning, "warning"))
        session.warnings.clear()

    def show_resumed(self) -> None:
        """Redraw the recent conversation of a resumed session (and forget the old one's)."""
        messages = self.agent.conversation.messages
        self.recall = Recall(summary=latest_summary(messages))
        written = self.session.resumed
        lines = (recap_as_written(written.original_messages, written.landmarks)
                 if written is not None and written.original_messages else recap(messages))
        for line in lines:
            self.console.print(line)
        origin = written.meta.get("forked_from") if written is not None else None
        if origin:
            self.console.print(note(f"this session is a fork of {origin}: its history up to "
                                    "the fork is shared, and nothing here changes the original"))

    async def _close(self) -> None:
        from mini_claude.agent.lifecycle import end_session

        if self._session is None and self._building is None:
            return  # nothing was built: the build failed, and said so
        await self.session_ready()
        agent = self.agent
        for warning in await end_session(agent.hooks, "other" if self.terminated
                                         else "prompt_input_exit"):
            self.console.print(note(warning, "warning"))
        # A session that never got a message is not kept; one rewound to before its first
        # message is (its transcript holds the messages, and the rewind to undo).
        kept = (len(agent.conversation) > 0 or bool(agent.transcript.last_message_id)
                or self.session.resumed is not None)
        if self.resumable and kept:
            self.console.print(note(f"transcript: {agent.transcript.path}"))
            self.console.print(note(f"resume with: mini-claude --resume "
                                    f"{self.session.session_id}"))
        if self.status_command is not None:
            await self.status_command.close()
        await self.session.aclose()
        if not kept:
            with contextlib.suppress(OSError):
                agent.transcript.path.unlink()


async def _stop_quietly(task: asyncio.Task[None] | None) -> None:
    """A keep-alive ping that failed cost nothing and changes nothing: it is not reported."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task


async def _pump(events: AsyncIterator[ev.Event], queue: EventQueue,
                before: Callable[[], Awaitable[None]]) -> None:
    await before()
    async for event in events:
        queue.put_nowait(event)


@contextmanager
def _sigint_calls(callback: Callable[[], None]) -> Iterator[None]:
    """A SIGINT that arrives while no prompt_toolkit app owns the keys interrupts the turn."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, lambda _sig, _frame: loop.call_soon_threadsafe(callback))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


# SIGHUP: the terminal was closed; the session ends as on SIGTERM (children stopped).
ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


@contextmanager
def _sigterm_calls(callback: Callable[[], None]) -> Iterator[None]:
    """SIGTERM or SIGHUP ends the REPL the orderly way: terminal restored, transcript closed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    for number in ENDING_SIGNALS:
        loop.add_signal_handler(number, callback)
    try:
        yield
    finally:
        for number in ENDING_SIGNALS:
            loop.remove_signal_handler(number)


def _endpoint_label(base_url: str | None) -> str:
    """`` @ localhost:8080`` when talking to a server other than the provider's own."""
    if not base_url:
        return ""
    host = urlsplit(base_url).netloc or base_url
    return "" if host in DEFAULT_API_HOSTS else f" @ {host}"


def _short_path(path: Path) -> str:
    try:
        inside_home = path.relative_to(Path.home())
    except ValueError:
        return str(path)
    return "~" if inside_home == Path() else f"~/{inside_home}"
