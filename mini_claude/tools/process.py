"""Child processes that can always be stopped, and output that can never grow unbounded.

Shell commands run under a guard (see ``shell_guard``): a small process that takes
everything the command started down with it when the session ends, however it ends.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
import subprocess
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import BinaryIO, Protocol

from mini_claude.private_dirs import make_private_dirs
from mini_claude.secrets import mask, secret_values
from mini_claude.tools import shell_guard

TERMINATE_GRACE_SECONDS = 2.0
EXIT_POLL_SECONDS = 0.02
# How long a stop waits for the guard beyond the grace it gives the command; a guard still
# busy after that finishes on its own (it needs nothing more from us).
GUARD_STOP_MARGIN_SECONDS = 3.0
GUARD_SCRIPT = shell_guard.__file__


class Exited(Protocol):
    @property
    def returncode(self) -> int | None: ...


class GuardedProcess:
    """A command running under its guard; ``pid`` is the guard's (its own process group).

    ``returncode`` is the command's exit status, which the guard reports the moment the
    command exits, although the guard stays while anything the command started runs.
    """

    def __init__(self, popen: subprocess.Popen[bytes], status_fd: int) -> None:
        self.popen = popen
        self._status_fd = status_fd
        self._status = b""
        self._code: int | None = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        return self.poll()

    def poll(self) -> int | None:
        if self._code is not None or self._status_fd < 0:
            return self._code
        try:
            data = os.read(self._status_fd, 64)
        except BlockingIOError:
            return None
        except OSError:
            data = b""
        self._status += data
        if data and b"\n" not in self._status:
            return None
        try:
            self._code = int(self._status.split(b"\n", 1)[0])
        except ValueError:  # the guard was killed before it could say
            self._code = -signal.SIGKILL
        os.close(self._status_fd)
        self._status_fd = -1
        return self._code

    def guard_running(self) -> bool:
        return self.popen.poll() is None

    def request_stop(self, *, now: bool = False) -> None:
        """Ask the guard to stop the command and all it started (SIGKILL at once if ``now``)."""
        if self.guard_running():
            with contextlib.suppress(ProcessLookupError):
                self.popen.send_signal(shell_guard.STOP_NOW if now else signal.SIGTERM)

    def wait_stopped(self, timeout: float) -> bool:
        """Wait for the guard to finish; True when everything below it has ended."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=timeout)
        self.poll()
        return not self.guard_running()


# Guards whose commands (or what those started) may still run, so a forced exit can end them.
LIVE_GUARDS: set[GuardedProcess] = set()
_lifeline: tuple[int, int] | None = None


def _lifeline_read_end() -> int:
    """The pipe every guard watches; its write end lives exactly as long as this process."""
    global _lifeline
    if _lifeline is None:
        _lifeline = os.pipe()  # not inherited: only the guards get the read end, by number
    return _lifeline[0]


def spawn_guarded(
    argv: Sequence[str], cwd: os.PathLike[str] | str, env: Mapping[str, str], *,
    stdout: int = subprocess.DEVNULL, stderr: int = subprocess.DEVNULL,
    log_path: Path | None = None, log_cap: int = 0,
    grace: float = TERMINATE_GRACE_SECONDS,
) -> GuardedProcess:
    """Start ``argv`` under a guard (stdin closed); with ``log_path`` its output goes there,
    capped at ``log_cap`` bytes. Raises OSError when it cannot start."""
    lifeline = _lifeline_read_end()
    status_r, status_w = os.pipe()
    try:
        popen = subprocess.Popen(
            [sys.executable, "-I", "-S", GUARD_SCRIPT, str(lifeline), str(status_w),
             f"{grace:g}", str(log_path) if log_path else shell_guard.NO_LOG, str(log_cap),
             *argv],
            cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
            pass_fds=(lifeline, status_w), start_new_session=True,
        )
    except BaseException:
        os.close(status_r)
        raise
    finally:
        os.close(status_w)
    os.set_blocking(status_r, False)
    process = GuardedProcess(popen, status_r)
    _prune()
    LIVE_GUARDS.add(process)
    return process


def _prune() -> None:
    for process in list(LIVE_GUARDS):
        if not process.guard_running():
            LIVE_GUARDS.discard(process)


def stop_guarded(process: GuardedProcess, grace: float = TERMINATE_GRACE_SECONDS) -> None:
    """Stop the command and everything it started; SIGKILL at once when ``grace`` is 0."""
    process.request_stop(now=grace <= 0)
    if process.wait_stopped(grace + GUARD_STOP_MARGIN_SECONDS):
        LIVE_GUARDS.discard(process)


async def stop_guarded_async(
    process: GuardedProcess, grace: float = TERMINATE_GRACE_SECONDS
) -> None:
    """``stop_guarded`` for the event loop; the stop is asked for even if this is cancelled."""
    process.request_stop(now=grace <= 0)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace + GUARD_STOP_MARGIN_SECONDS
    while process.guard_running() and loop.time() < deadline:
        await asyncio.sleep(EXIT_POLL_SECONDS)
    process.poll()
    if not process.guard_running():
        LIVE_GUARDS.discard(process)


def kill_live_groups() -> None:
    """SIGKILL every command still running, and all it started (the process is about to exit)."""
    for process in list(LIVE_GUARDS):
        process.request_stop(now=True)


def signal_group(pgid: int, signum: int) -> None:
    """Signal a whole process group; a group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


async def wait_for_exit(process: Exited, timeout: float | None) -> bool:
    """Wait until the process itself has exited; True when it did within ``timeout``.

    ``Process.wait()`` on Python 3.11 also waits for every pipe to close, so a
    background child that inherited stdout would keep it waiting; the exit
    status is set as soon as the child watcher reaps the process, so poll that.
    """
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    while process.returncode is None:
        if deadline is not None and loop.time() >= deadline:
            return False
        await asyncio.sleep(EXIT_POLL_SECONDS)
    return True


async def terminate_group(
    process: asyncio.subprocess.Process, grace: float = TERMINATE_GRACE_SECONDS
) -> None:
    """SIGTERM the process's group, wait up to ``grace`` seconds, then SIGKILL what is left.

    The SIGKILL is sent even when the leader exited on SIGTERM, because its
    children may ignore SIGTERM; it is sent even if this wait is cancelled.
    The process must have been started with ``start_new_session=True``.
    """
    signal_group(process.pid, signal.SIGTERM)
    try:
        await wait_for_exit(process, grace)
    finally:
        signal_group(process.pid, signal.SIGKILL)
    await wait_for_exit(process, grace)


class HeadTailBuffer:
    """Keeps the first and last characters of a stream and counts what fell in between.

    The head shows how a command started, the tail how it ended (the error
    is usually there); memory stays at ``cap`` characters whatever arrives. The
    spill file, once the stream outgrows that, keeps at most ``spill_cap`` bytes:
    its head and tail, with the line a background shell's log has between them.
    """

    def __init__(self, cap: int, spill_path: Path | None = None,
                 secrets: tuple[str, ...] = (), spill_cap: int | None = None) -> None:
        self.head_cap = cap // 2
        self.tail_cap = cap - self.head_cap
        self.head = ""
        self.tail = ""
        self.dropped = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.spill_path = spill_path  # where the whole stream goes once it outgrows the cap
        self.spilled: Path | None = None
        self._spill: BinaryIO | None = None
        self._spill_cap = spill_cap
        self._spill_written = 0
        self._spill_tail: deque[bytes] = deque()
        self._spill_tail_size = 0
        self._spill_dropped = 0
        self._secrets = secret_values(secrets)
        # The end of what arrived, held back until no key can straddle it: a key is only
        # ever written masked, even if the process dies mid-command.
        self._held_back = ""
        self._hold = max((len(x) for x in self._secrets), default=1) - 1

    def feed(self, data: bytes, *, final: bool = False) -> None:
        self.add(self._decoder.decode(data, final=final))
        if final:
            self.close()

    def add(self, text: str) -> None:
        if self._spill is not None:
            self._write_spill(text)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += text[:room]
            text = text[room:]
        if not text:
            return
        excess = len(self.tail) + len(text) - self.tail_cap
        if excess > 0 and not self.dropped and self._spill is None:
            self._start_spill(self.head + self.tail + text)
        self.tail += text
        if excess > 0:
            self.dropped += excess
            self.tail = self.tail[excess:]

    def _start_spill(self, everything_so_far: str) -> None:
        """Nothing is lost: from the first byte that would be dropped, the stream goes to disk."""
        if self.spill_path is None:
            return
        try:
            make_private_dirs(self.spill_path.parent)
            fd = os.open(self.spill_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            self._spill = os.fdopen(fd, "wb")
            self.spilled = self.spill_path
            self._write_spill(everything_so_far)
        except OSError:
            self._spill = None
            self.spilled = None

    def _write_spill(self, text: str, *, final: bool = False) -> None:
        assert self._spill is not None
        text = self._mask(self._held_back + text)
        cut = len(text) if final else max(0, len(text) - self._hold)
        text, self._held_back = text[:cut], text[cut:]
        try:
            self._store(text.encode("utf-8", "replace"))
            if final:
                self._store_tail()
            self._spill.flush()
        except OSError:
            failed, self._spill = self._spill, None
            with contextlib.suppress(OSError):
                failed.close()
            self.spilled = None

    def _store(self, data: bytes) -> None:
        """Write the head of the spill; past it, hold the tail (in chunks) until the end."""
        assert self._spill is not None
        if self._spill_cap is None:
            self._spill.write(data)
            return
        room = shell_guard.head_size(self._spill_cap) - self._spill_written
        if room > 0:
            self._spill.write(data[:room])
            self._spill_written += min(room, len(data))
            data = data[room:]
        if not data:
            return
        self._spill_tail.append(data)
        self._spill_tail_size += len(data)
        tail_cap = self._spill_cap - shell_guard.head_size(self._spill_cap)
        while self._spill_tail_size - len(self._spill_tail[0]) >= tail_cap:
            dropped = self._spill_tail.popleft()
            self._spill_tail_size -= len(dropped)
            self._spill_dropped += len(dropped)

    def _store_tail(self) -> None:
        if self._spill is None or self._spill_cap is None:
            return
        tail_cap = self._spill_cap - shell_guard.head_size(self._spill_cap)
        tail = b"".join(self._spill_tail)
        self._spill_dropped += max(0, len(tail) - tail_cap)
        tail = tail[-tail_cap:] if len(tail) > tail_cap else tail
        if self._spill_dropped:
            self._spill.write(shell_guard.LOG_GAP.format(
                dropped=self._spill_dropped, head=self._spill_written, tail=tail_cap).encode())
        self._spill.write(tail)
        self._spill_tail.clear()

    def close(self) -> None:
        if self._spill is not None:
            self._write_spill("", final=True)
        if self._spill is not None:
            with contextlib.suppress(OSError):
                self._spill.close()
            self._spill = None

    def _mask(self, text: str) -> str:
        """Keys the command printed never reach the disk."""
        return mask(text, self._secrets)

    def text(self) -> str:
        self.close()
        if not self.dropped:
            return self.head + self.tail
        whole = "its first and last bytes are" if self._spill_dropped else "the full output is"
        where = f"; {whole} saved at {self.spilled}" if self.spilled else ""
        return f"{self.head}\n[... {self.dropped:,} characters omitted{where} ...]\n{self.tail}"


async def pump(
    stream: asyncio.StreamReader, buffer: HeadTailBuffer, chunk: int = 64 * 1024,
    watch: Callable[[bytes], None] | None = None,
) -> None:
    """Read a pipe to its end into a bounded buffer (and to ``watch``, a live view)."""
    while data := await stream.read(chunk):
        buffer.feed(data)
        if watch is not None:
            watch(data)
    buffer.feed(b"", final=True)
