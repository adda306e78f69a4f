"""`mini-claude -p`: one turn, the answer on stdout, tool activity on stderr."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from mini_claude import __version__
from mini_claude import events as ev
from mini_claude.context.compact_notices import failure_notice
from mini_claude.exit_codes import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_OUTPUT_CLOSED,
    EXIT_USAGE,
)
from mini_claude.headless import HeadlessReporter, RunInfo, stop_signals
from mini_claude.headless.options import HeadlessOptions
from mini_claude.headless.safe_json import OutputClosed, write_or_close
from mini_claude.headless.session_setup import SetupFailed, open_session, start_agent
from mini_claude.permissions.asking import deny_all
from mini_claude.sanitize import EMPTY_REPLY_NOTICE
from mini_claude.settings import Settings
from mini_claude.text import format_tokens, shorten_at_word
from mini_claude.tools.process import kill_live_groups
from mini_claude.visible import visible

if TYPE_CHECKING:
    from mini_claude.agent.loop import Agent
    from mini_claude.session.wiring import Session


# A successful call's first line on stderr; an error or a denial is shown whole.
NARRATED_RESULT_CHARS = 100


def run_print_mode(settings: Settings, cwd: Path, prompt: str, args: argparse.Namespace) -> int:
    # `kill` stops the turn as Ctrl-C does, so a running shell command is stopped with it;
    # a tool thread that cannot be stopped does not keep the process alive.
    restore_signals = stop_signals.install()
    run = PrintRun()
    stop_signals.last_words.append(run.finish_interrupted)
    try:
        return asyncio.run(_run(settings, cwd, prompt, args, sys.stdout, sys.stderr, run))
    except OutputClosed:
        return EXIT_OUTPUT_CLOSED  # nobody reads on: no traceback, no result to give
    except (KeyboardInterrupt, asyncio.CancelledError):
        kill_live_groups()  # whatever the unwinding left running, before the result line
        if run.headless is not None and run.headless.output_closed:
            return EXIT_OUTPUT_CLOSED  # the reader left; the turn was stopped for it
        with contextlib.suppress(OSError):  # a closed terminal (SIGHUP) cannot be written
            print("mini-claude: interrupted", file=sys.stderr)
        run.finish_interrupted()  # the JSON formats still end with a result
        return stop_signals.exit_code()  # SIGTERM: 143, as a shell reports it
    finally:
        kill_live_groups()  # no shell command outlives the run, however it ended
        stop_signals.last_words.remove(run.finish_interrupted)
        restore_signals()


class PrintRun:
    """What outlives an interrupted event loop: the reporter that owes a result line."""

    def __init__(self) -> None:
        self.headless: HeadlessReporter | None = None

    def finish_interrupted(self) -> None:
        """The result line of an interrupted run (once; nothing when there is no reporter)."""
        if self.headless is not None:
            with contextlib.suppress(OSError, ValueError, OutputClosed):
                self.headless.finish(interrupted=True)


async def _run(
    settings: Settings,
    cwd: Path,
    prompt: str,
    args: argparse.Namespace,
    out: TextIO,
    err: TextIO,
    run: PrintRun | None = None,
) -> int:
    from mini_claude.agent.lifecycle import end_session
    from mini_claude.session.custom_commands import prompt_events

    stop_signals.cancel_in_loop()
    options = HeadlessOptions.from_args(args)
    # Nobody can be asked: what no rule or mode allows is refused (--yes allows it all).
    try:
        session = open_session(settings, cwd, args, deny_all, err)
    except SetupFailed as exc:
        print(f"mini-claude: {exc}", file=err)
        return EXIT_USAGE
    if session.project_hooks_status() in ("unknown", "denied"):
        print(f"mini-claude: {unapproved_settings_notice(session)}", file=err)
    try:
        agent = start_agent(session, args, err)
    except SetupFailed as exc:
        await session.provider.close()
        print(f"mini-claude: {exc}", file=err)
        return EXIT_USAGE
    agent.steps.end_with_turn(options.max_turns)  # no notes start that nobody would read
    reporter = PrintReporter(args.output_format, out, err)
    headless: HeadlessReporter | None = None
    try:
        # Before the init line and the first request, so both carry the servers' tools.
        await start_mcp_servers(session, getattr(args, "trust_project_mcp", False), err)
        if args.output_format in ("json", "stream-json"):
            narrate = reporter.narrate_only if args.output_format == "json" else None
            headless = HeadlessReporter(
                args.output_format, out, narrate,
                partial=bool(getattr(args, "include_partial_messages", False)),
            )
            headless.begin(run_info(session, agent, options), agent)
            if run is not None:
                run.headless = headless
        async for event in prompt_events(session, prompt, options.max_turns):
            if headless is not None:
                headless.handle(event)
                reporter.note_outcome(event)
            else:
                reporter.handle(event)
        for warning in await end_session(agent.hooks, "other"):
            print(f"warning: {warning}", file=err)
    finally:
        await session.aclose()  # notes nobody will read are not waited for
        for notice in session.checkpointer.take_notices():
            print(f"warning: {notice}", file=err)
        if agent.transcript.write_failed:
            print(
                f"warning: the transcript could not be written ({agent.transcript.failure}); "
                "this session will not be saved in full",
                file=err,
            )
    if headless is not None:
        outcome = headless.finish()
        return EXIT_OK if outcome is not None and not outcome.is_error else EXIT_FAILED
    reporter.finish(session.session_id, agent.stats())
    return EXIT_OK if reporter.error is None and not reporter.limited else EXIT_FAILED


def run_info(session: Session, agent: Agent, options: HeadlessOptions) -> RunInfo:
    settings = session.settings
    status = agent.status()
    return RunInfo(
        session_id=session.session_id,
        cwd=str(session.cwd),
        model=settings.model,
        provider=settings.provider,
        tools=tuple(session.registry.names()),
        permission_mode=session.permission_setup.permissions.mode,
        version=__version__,
        context_window=status.window,
        effective_window=status.effective_window,
        autocompact_at=status.autocompact_at,
        max_turns=options.max_turns,
    )


def unapproved_settings_notice(session: Session) -> str:
    files = ", ".join(str(f.path.relative_to(session.cwd))
                      for f in session.permission_setup.layers.project_files())
    return (f"this project's settings ({files}) are not used beyond their deny rules: "
            "approve them once in the REPL (mini-claude)")


async def start_mcp_servers(session: Session, trust_project: bool, err: TextIO) -> None:
    """Connect the allowed MCP servers before the turn; project ones only with the flag
    or an earlier approval (``--yes`` is about tool calls, not about starting programs)."""
    manager = session.mcp
    if not manager.configured:
        return
    if trust_project:
        manager.approve_project(remember=False)
    notice = manager.unapproved_notice(
        "approve them once in the REPL (mini-claude), or pass --trust-project-mcp"
    )
    if notice:
        print(f"mini-claude: {visible(notice, one_line=True)}", file=err)
    manager.start()
    await manager.wait_settled(session.settings.mcp_startup_wait_seconds)
    for skipped in manager.skipped_tools:
        print(f"warning: {visible(skipped, one_line=True)}", file=err)
    for view in manager.views():
        if view.state.startswith("failed"):
            line = f"warning: MCP server {view.name!r} {view.state}"
            print(visible(line, one_line=True), file=err)
    late = manager.connecting()
    if late:
        print(f"warning: MCP server {visible(', '.join(late), one_line=True)} still connecting "
              f"after {session.settings.mcp_startup_wait_seconds:g}s; its tools may join later "
              "requests (MINI_CLAUDE_MCP_STARTUP_WAIT_SECONDS)", file=err)


class PrintReporter:
    """Turns events into print-mode output for one of three formats."""

    def __init__(self, output_format: str, out: TextIO, err: TextIO) -> None:
        self.format = output_format
        self.out = out
        self.err = err
        self.final_text = ""
        self.error: str | None = None
        self.limited = False

    def handle(self, event: ev.Event) -> None:
        self.note_outcome(event)
        self._narrate(event)

    def note_outcome(self, event: ev.Event) -> None:
        """The answer or the error, whatever the format (errors also go to stderr)."""
        if isinstance(event, ev.TurnFinished):
            self.final_text = event.final_text
        elif isinstance(event, ev.TurnError):
            self.error = event.message
            print(f"mini-claude: {visible(event.message, one_line=True)}", file=self.err)
        elif isinstance(event, ev.TurnLimitReached):
            self.limited = True
            print(
                f"mini-claude: stopped after {event.requests} model calls (--max-turns); "
                "continue with -c",
                file=self.err,
            )

    def narrate_only(self, event: ev.Event) -> None:
        self._narrate(event)

    def _narrate(self, event: ev.Event) -> None:
        line = narration(event)
        if not line:
            return
        line = visible(line, one_line=True)  # a file or a reply never drives the terminal
        if isinstance(event, ev.Notice) and event.text == EMPTY_REPLY_NOTICE:
            line = f"\x1b[2m{line}\x1b[0m" if _is_terminal(self.err) else line  # dim
        with contextlib.suppress(OSError):  # stderr closed: narration is not worth dying
            print(line, file=self.err, flush=True)

    def finish(self, session_id: str, stats: dict[str, Any]) -> None:
        if self.final_text:
            text = visible(self.final_text) if _is_terminal(self.out) else self.final_text
            write_or_close(self.out, text + "\n")


def narration(event: ev.Event) -> str | None:
    """One stderr line for the events a print-mode user wants to see."""
    if isinstance(event, ev.ToolStarted):
        target = next(
            (str(v) for k, v in event.input.items() if k in ("path", "command", "pattern")), ""
        )
        return f"→ {event.name} {target}".rstrip()
    if isinstance(event, ev.ToolFinished):
        first = next(iter(event.result.content.strip().splitlines()), "")
        if event.result.is_error:  # why a call failed or was denied, whole
            return f"  ✗ {first}"
        return f"  ✓ {shorten_at_word(first, NARRATED_RESULT_CHARS)}"
    if isinstance(event, ev.TierFired):
        return f"  · {event.report.describe()}"
    if isinstance(event, ev.CompactionStarted):
        return f"  · compacting ({event.reason}) at {format_tokens(event.tokens_before)} tokens"
    if isinstance(event, ev.CompactionFinished):
        return (
            f"  · compacted: {format_tokens(event.tokens_before)} → "
            f"{format_tokens(event.tokens_after)} tokens"
        )
    if isinstance(event, ev.CompactionFailed):
        notice = failure_notice(event)
        return f"  · {notice}" if notice is not None else None
    if isinstance(event, ev.Retrying):
        return (
            f"  · {event.error}; retrying in {event.delay_seconds:.1f}s (attempt {event.attempt})"
        )
    if isinstance(event, ev.Notice):
        return f"  · {event.text}"
    if isinstance(event, ev.PlanUpdated):
        done = sum(item.status == "completed" for item in event.items)
        current = next((i.content for i in event.items if i.status == "in_progress"), "")
        return f"  · todo list {done}/{len(event.items)} done" + (f": {current}" if current else "")
    return None


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
