"""`mini-claude -p`: one turn, the answer on stdout, tool activity on stderr."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from mini_claude import events as ev
from mini_claude import stop_signals
from mini_claude.exit_codes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from mini_claude.protocol import ProviderError
from mini_claude.sanitize import EMPTY_REPLY_NOTICE
from mini_claude.settings import Settings
from mini_claude.text import format_tokens
from mini_claude.tools.base import allow_all, deny_all


def run_print_mode(settings: Settings, cwd: Path, prompt: str, args: argparse.Namespace) -> int:
    # `kill` stops the turn as Ctrl-C does, so a running shell command is stopped with it;
    # a tool thread that cannot be stopped does not keep the process alive.
    restore_signals = stop_signals.install()
    try:
        return asyncio.run(_run(settings, cwd, prompt, args, sys.stdout, sys.stderr))
    except KeyboardInterrupt:
        print("mini-claude: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        restore_signals()


async def _run(
    settings: Settings, cwd: Path, prompt: str, args: argparse.Namespace, out: TextIO, err: TextIO
) -> int:
    from mini_claude.providers import create_provider
    from mini_claude.session import Session, SessionError, startup_housekeeping

    startup_housekeeping(settings)
    try:
        provider = create_provider(settings)
    except ProviderError as exc:
        print(f"mini-claude: {exc.message}", file=err)
        return EXIT_USAGE
    session = Session(settings, cwd, provider, allow_all if args.yes else deny_all)
    try:
        if args.continue_session or args.resume:
            agent = session.resume(args.resume)
        else:
            agent = session.start_new()
    except SessionError as exc:
        print(f"mini-claude: {exc}", file=err)
        return EXIT_USAGE
    for warning in session.warnings:
        print(f"warning: {warning}", file=err)
    reporter = PrintReporter(args.output_format, out, err)
    try:
        async for event in agent.turn(prompt):
            reporter.handle(event)
    finally:
        await session.provider.close()
        agent.transcript.close()
        if agent.transcript.write_failed:
            print(
                f"warning: the transcript could not be written ({agent.transcript.failure}); "
                "this session will not be saved in full",
                file=err,
            )
    reporter.finish(session.session_id, agent.stats())
    return EXIT_OK if reporter.error is None else EXIT_FAILED


class PrintReporter:
    """Turns events into print-mode output for one of three formats."""

    def __init__(self, output_format: str, out: TextIO, err: TextIO) -> None:
        self.format = output_format
        self.out = out
        self.err = err
        self.final_text = ""
        self.error: str | None = None

    def handle(self, event: ev.Event) -> None:
        if self.format == "stream-json":
            self._emit_json(event)
        if isinstance(event, ev.TurnFinished):
            self.final_text = event.final_text
        elif isinstance(event, ev.TurnError):
            self.error = event.message
            print(f"mini-claude: {event.message}", file=self.err)
        if self.format != "stream-json":
            self._narrate(event)

    def _narrate(self, event: ev.Event) -> None:
        line = narration(event)
        if line and isinstance(event, ev.Notice) and event.text == EMPTY_REPLY_NOTICE:
            line = f"\x1b[2m{line}\x1b[0m" if _is_terminal(self.err) else line  # dim
        if line:
            print(line, file=self.err, flush=True)

    def _emit_json(self, event: ev.Event) -> None:
        payload: dict[str, Any] = {"type": type(event).__name__}
        payload.update(_jsonable(asdict(event)))
        print(json.dumps(payload, ensure_ascii=False, default=str), file=self.out, flush=True)

    def finish(self, session_id: str, stats: dict[str, Any]) -> None:
        if self.format == "text":
            if self.final_text:
                print(self.final_text, file=self.out, flush=True)
        elif self.format == "json":
            result = {
                "result": self.final_text,
                "error": self.error,
                "session_id": session_id,
                **stats,
            }
            print(json.dumps(result, ensure_ascii=False), file=self.out, flush=True)


def narration(event: ev.Event) -> str | None:
    """One stderr line for the events a print-mode user wants to see."""
    if isinstance(event, ev.ToolStarted):
        target = next(
            (str(v) for k, v in event.input.items() if k in ("path", "command", "pattern")), ""
        )
        return f"→ {event.name} {target}".rstrip()
    if isinstance(event, ev.ToolFinished):
        mark = "✗" if event.result.is_error else "✓"
        first = event.result.content.strip().splitlines()[:1]
        return f"  {mark} {first[0][:100] if first else ''}"
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
        return f"  · compaction failed: {event.error}"
    if isinstance(event, ev.Retrying):
        return (
            f"  · {event.error}; retrying in {event.delay_seconds:.1f}s (attempt {event.attempt})"
        )
    if isinstance(event, ev.Notice):
        return f"  · {event.text}"
    return None


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)
