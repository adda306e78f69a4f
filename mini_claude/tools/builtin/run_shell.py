"""run_shell: one bash command in the project folder, under its guard.

The guard (see ``shell_guard``) is what makes stopping reliable: a timeout or a
cancelled turn kills the command and everything it started, not just the shell,
and nothing it started outlives the session, however the session ends.

While it runs the user may send it to the background (Ctrl-B): the call then returns
at once and the same process goes on as a background shell.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mini_claude.models import key_variables
from mini_claude.permissions.asking import PermissionRequest
from mini_claude.permissions.sandbox.gate import failure_note, sandbox_prefix
from mini_claude.protocol import ToolOutput, ToolSpec
from mini_claude.secrets import api_keys
from mini_claude.settings import Settings
from mini_claude.tool_kinds import ToolTraits
from mini_claude.tools.background import BackgroundShell
from mini_claude.tools.base import Prepared, ToolContext
from mini_claude.tools.common import ToolError, error_output
from mini_claude.tools.paths import project_root
from mini_claude.tools.process import (
    EXIT_POLL_SECONDS,
    GuardedProcess,
    HeadTailBuffer,
    pump,
    spawn_guarded,
    stop_guarded_async,
)
from mini_claude.tools.progress import CallProgress

MAX_TIMEOUT_SECONDS = 600.0
# After the shell exits, how long to wait for background children to release its output pipes.
PIPE_DRAIN_SECONDS = 1.0
BACKGROUND_NOTE = ("Runs in the background: the turn goes on while it runs; its output is read "
                   "with shell_output, and /shells lists it.")

SPEC = ToolSpec(
    name="run_shell",
    description=(
        "Run a bash command in the project folder and return its exit code, stdout and stderr. "
        "Standard input is closed, so interactive programs fail at once: pass flags such as "
        "`--yes` or `-y` instead. Times out after `timeout` seconds (default 120, max 600); the "
        "command and all its child processes are then killed. Very long output keeps its "
        "beginning and end. Use it for builds, tests, git and other programs; prefer read_file, "
        "grep_search and list_files for looking at files. `run_in_background` (a server, a "
        "watcher): returns a shell id at once, for shell_output and kill_shell."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The bash command line to run."},
            "timeout": {
                "type": "number",
                "description": "Seconds before the command is killed (default 120, max 600).",
            },
            "run_in_background": {"type": "boolean", "description": "Return a shell id at once."},
            "dangerouslyDisableSandbox": {
                "type": "boolean",
                "description": "When commands run in a sandbox: run this one outside it, "
                               "only if it failed there for a reason the sandbox causes. "
                               "The user is asked.",
            },
            "reason": {"type": "string", "description": "Why it must run outside the sandbox."},
        },
        "required": ["command"],
        "additionalProperties": False,
    },
)


def child_environment(environ: Mapping[str, str], settings: Settings) -> dict[str, str]:
    """The environment for commands: ours, minus the API keys we hold.

    Any variable whose value is one of our configured keys goes too, whatever
    its name, so a key copied into ``MY_TOKEN`` does not leak either.
    """
    secrets, names = set(api_keys(settings)), set(key_variables())
    return {
        name: value
        for name, value in environ.items()
        if name not in names and value not in secrets
    }


@dataclass(frozen=True, slots=True)
class ShellResult:
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    detached_output: bool  # background children kept the pipes open after the shell exited
    moved_to: BackgroundShell | None = None  # sent to the background while it ran


# Takes a running command over as a background shell: its process, its output pipes and
# what it printed so far.
Adopt = Callable[[GuardedProcess, Sequence[asyncio.StreamReader], str], BackgroundShell]


@dataclass
class MoveRequest:
    """How a foreground command may be sent to the background while it runs."""

    requested: asyncio.Event = field(default_factory=asyncio.Event)
    adopt: Adopt | None = None


class RunShellTool:
    spec = SPEC
    read_only = False
    traits = ToolTraits("shell", "command", "command", ("Bash",), streams_output=True)

    def permission(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        command = str(args.get("command", ""))
        return Prepared(PermissionRequest(
            tool_name=self.spec.name, summary=command, subject=f"run_shell:{command}",
            detail=BACKGROUND_NOTE if args.get("run_in_background") else None,
        ))

    async def run(
        self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared
    ) -> ToolOutput:
        try:
            command = str(args.get("command", ""))
            if not command.strip():
                raise ToolError("command must not be empty")
            env = ctx.env if ctx.env is not None else child_environment(os.environ, ctx.settings)
            sandbox = sandbox_prefix(args, ctx.rules, ctx.root, project_root(ctx), ctx.approve)
            if args.get("run_in_background"):
                return await start_in_background(command, env, ctx, sandbox)
            timeout = _timeout(args.get("timeout"), ctx.settings)
            progress = ctx.progress
            capture = await ctx.checkpoints.before_command("run_shell")
            result: ShellResult | None = None
            try:
                with ctx.shells.foreground() as requested:
                    result = await execute(
                        command, project_root(ctx), env, timeout,
                        ctx.settings.tool_output_cap_chars, spill_dir=_spill_dir(ctx),
                        secrets=api_keys(ctx.settings), progress=progress,
                        spill_cap=ctx.settings.shell_log_cap_bytes, sandbox=sandbox,
                        move=MoveRequest(requested, _adopter(command, ctx)),
                    )
            finally:
                moved = result.moved_to if result is not None else None
                # A command moved to the background: its later changes are the shell's.
                await ctx.checkpoints.after_command(
                    capture, running=(lambda: moved.running) if moved is not None else None)
        except ToolError as exc:
            return error_output(exc.message)
        if result.moved_to is not None:
            return _render_moved(result.moved_to, _render_parts(result))
        return _render(result, timeout, failure_note(ctx.rules, ctx.root) if sandbox else "")


def _adopter(command: str, ctx: ToolContext) -> Adopt:
    """Makes the running command one of the session's background shells."""

    def adopt(process: GuardedProcess, streams: Sequence[asyncio.StreamReader],
              printed: str) -> BackgroundShell:
        return ctx.shells.adopt(command, process, streams, printed, _shell_log_dir(ctx),
                                ctx.settings.shell_log_cap_bytes)

    return adopt


def _shell_log_dir(ctx: ToolContext) -> Path:
    return (ctx.results_folder or _spill_dir(ctx)) / "shells"


def _timeout(raw: Any, settings: Settings) -> float:
    if raw is None:
        return min(settings.shell_timeout_seconds, MAX_TIMEOUT_SECONDS)
    timeout = float(raw)
    if not math.isfinite(timeout) or timeout <= 0:
        raise ToolError("timeout must be a positive number of seconds")
    return min(timeout, MAX_TIMEOUT_SECONDS)


def _spawn(command: str, cwd: os.PathLike[str], env: Mapping[str, str],
           sandbox: Sequence[str] = ()) -> tuple[GuardedProcess, int, int]:
    """Start bash under its guard; the read ends of its stdout and stderr with it.

    Starting is synchronous, so no cancel can land while the child is half started.
    """
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        process = spawn_guarded([*sandbox, "bash", "-c", command], cwd, env, stdout=out_w,
                                stderr=err_w)
    except BaseException:
        os.close(out_r)
        os.close(err_r)
        raise
    finally:
        os.close(out_w)
        os.close(err_w)
    return process, out_r, err_r


async def _stream(fd: int) -> asyncio.StreamReader:
    """An asyncio reader over a pipe's read end (which it then owns)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**16, loop=loop)
    pipe = os.fdopen(fd, "rb", buffering=0)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    except BaseException:
        pipe.close()
        raise
    return reader


def _spill_dir(ctx: ToolContext) -> Path:
    return ctx.settings.tool_results_dir / (ctx.session_id or "no-session")


async def execute(
    command: str, cwd: os.PathLike[str], env: Mapping[str, str], timeout: float, cap: int,
    *, spill_dir: Path | None = None, secrets: tuple[str, ...] = (),
    progress: CallProgress | None = None, spill_cap: int | None = None,
    sandbox: Sequence[str] = (), move: MoveRequest | None = None,
) -> ShellResult:
    """Run ``bash -c command``; on timeout or cancellation kill it and all it started.

    Output beyond the in-memory cap is spilled to ``spill_dir``: whole, or its first and last
    ``spill_cap`` bytes (the cap of a background shell's log).
    ``progress`` sees the output as it arrives; when the run is cancelled it gets what
    was printed so far, for the model. ``sandbox``: the command line it runs inside.
    ``move``: once its event is set, the command stops being waited for and goes on as
    the background shell ``move.adopt`` makes of it (no timeout from then on).
    """
    stamp = f"{time.time_ns()}-run_shell"
    stdout = HeadTailBuffer(cap // 2, spill_dir / f"{stamp}-stdout.txt" if spill_dir else None,
                            secrets, spill_cap)
    stderr = HeadTailBuffer(cap - cap // 2,
                            spill_dir / f"{stamp}-stderr.txt" if spill_dir else None, secrets,
                            spill_cap)
    try:
        process, out_fd, err_fd = _spawn(command, cwd, env, sandbox)
    except OSError as exc:
        raise ToolError(f"could not start bash: {exc.strerror or exc}") from None
    readers: list[asyncio.Task[None]] = []
    streams: list[asyncio.StreamReader] = []
    unread = [out_fd, err_fd]  # pipes no reader owns yet
    timed_out = False
    detached = False
    moved_to: BackgroundShell | None = None
    cancelled = True  # until the command ends or times out
    try:
        for fd, buffer in ((out_fd, stdout), (err_fd, stderr)):
            unread.remove(fd)  # from here the reader owns it, and closes it if it fails
            stream = await _stream(fd)
            streams.append(stream)
            readers.append(asyncio.create_task(pump(stream, buffer, watch=_watch(progress))))
        async with asyncio.timeout(timeout):
            moving = await _exit_or_move(process, move)
        if moving and move is not None and move.adopt is not None:
            moved_to = await _hand_over(process, readers, streams, (stdout, stderr), move.adopt)
            cancelled = False
            return ShellResult(None, stdout.text(), stderr.text(), False, False, moved_to)
        _, still_open = await asyncio.wait(readers, timeout=PIPE_DRAIN_SECONDS)
        if still_open:
            detached = True  # background children hold our pipes: they would die of SIGPIPE
            await stop_guarded_async(process)
        cancelled = False
    except TimeoutError:
        timed_out = True
        cancelled = False
    finally:
        for fd in unread:
            os.close(fd)  # cancelled before a reader took it
        if moved_to is None and (process.returncode is None or timed_out):
            await stop_guarded_async(process)  # asked for even when cancelled
        await _finish_readers(readers)
        if cancelled and progress is not None:
            partial = ShellResult(None, stdout.text(), stderr.text(), False, False)
            progress.partial = _render_parts(partial)
    return ShellResult(process.returncode, stdout.text(), stderr.text(), timed_out, detached)


async def _exit_or_move(process: GuardedProcess, move: MoveRequest | None) -> bool:
    """Wait until the command exits (False) or the user sends it to the background (True)."""
    requested = move.requested if move is not None and move.adopt is not None else None
    while process.returncode is None:
        if requested is not None and requested.is_set():
            return True
        await asyncio.sleep(EXIT_POLL_SECONDS)
    return False


async def _hand_over(process: GuardedProcess, readers: list[asyncio.Task[None]],
                     streams: Sequence[asyncio.StreamReader],
                     buffers: tuple[HeadTailBuffer, HeadTailBuffer], adopt: Adopt
                     ) -> BackgroundShell:
    """Stop reading into this call's buffers (what is unread stays in the pipes' readers),
    then give the process, its pipes and what it printed so far to a background shell."""
    for reader in readers:
        reader.cancel()  # a reader waits only in read: no byte is half taken
    await asyncio.gather(*readers, return_exceptions=True)
    stdout, stderr = buffers
    printed = _render_parts(ShellResult(None, stdout.text(), stderr.text(), False, False))
    return adopt(process, streams, printed + "\n" if printed else "")


def _watch(progress: CallProgress | None) -> Callable[[bytes], None] | None:
    return progress.feeder() if progress is not None else None


async def start_in_background(command: str, env: Mapping[str, str], ctx: ToolContext,
                              sandbox: Sequence[str] = ()) -> ToolOutput:
    """Start the command as a background shell and say how to follow it."""
    log_dir = _shell_log_dir(ctx)
    capture = await ctx.checkpoints.before_command("a background shell")
    shell = ctx.shells.start(command, project_root(ctx), env, log_dir,
                             ctx.settings.shell_log_cap_bytes, sandbox)
    await ctx.checkpoints.after_command(capture, running=lambda: shell.running)
    text = f"Started background shell {shell.id} (pid {shell.pid}): {command}\n{_follow(shell)}"
    return ToolOutput(text)


def _follow(shell: BackgroundShell) -> str:
    return (f"Read its new output with shell_output(shell_id=\"{shell.id}\"), stop it with "
            f"kill_shell(shell_id=\"{shell.id}\"). It is stopped when the session ends.")


def _render_moved(shell: BackgroundShell, printed: str) -> ToolOutput:
    """The user sent the command to the background: it goes on; say where to follow it."""
    so_far = f"Output so far:\n{printed}" if printed else "No output so far."
    text = (f"The user moved this command to the background: it goes on running as background "
            f"shell {shell.id} (pid {shell.pid}).\n{so_far}\n{_follow(shell)}")
    return ToolOutput(text, display=text, display_kind="ansi")


async def _finish_readers(readers: list[asyncio.Task[None]]) -> None:
    """Collect the last output of killed processes, then stop reading for good."""
    _, pending = await asyncio.wait(readers, timeout=PIPE_DRAIN_SECONDS)
    for reader in pending:
        reader.cancel()
    await asyncio.gather(*readers, return_exceptions=True)


def _render_parts(result: ShellResult) -> str:
    parts: list[str] = []
    if result.stdout:
        parts.append(result.stdout.rstrip("\n"))
    if result.stderr:
        parts.append("[stderr]\n" + result.stderr.rstrip("\n"))
    return "\n".join(parts)


def _render(result: ShellResult, timeout: float, sandbox_note: str = "") -> ToolOutput:
    printed = _render_parts(result)
    parts: list[str] = [printed] if printed else []
    if result.detached_output:
        parts.append(
            "[background processes kept the output open and were stopped; to leave one "
            "running, redirect its output: `cmd > log.txt 2>&1 &`]"
        )
    if result.timed_out:
        parts.append(f"[timed out after {timeout:g} s; the command and its children were killed]")
    elif result.exit_code is not None and result.exit_code < 0:
        parts.append(f"[killed by signal {-result.exit_code}]")
    else:
        parts.append(f"[exit code {result.exit_code}]")
    failed = result.timed_out or result.exit_code != 0
    if failed and sandbox_note:
        parts.append(sandbox_note)
    text = "\n".join(parts)
    return ToolOutput(text, is_error=failed, display=text, display_kind="ansi")
