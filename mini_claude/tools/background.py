"""Background shells: commands that outlive the tool call, such as a dev server or a watcher.

Each runs under a guard (see ``shell_guard``) that writes its stdout and stderr to a
file under the session's results folder, so a shell that prints megabytes costs disk,
never memory, and at most ``shell_log_cap_bytes`` of it: past the cap the log keeps its
head and its tail and says how many bytes were dropped between. ``shell_output`` reads
what arrived since the last read. Every shell, and everything it started, is stopped
when the session ends: at exit, on a forced exit, and by the guard itself if
mini-claude is killed.

A command started in the foreground can be sent here while it runs (Ctrl-B): the same
process is adopted, with what it printed so far at the head of its log, and its pipes
are pumped into that log from then on.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import re
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from mini_claude.private_dirs import make_private_dirs
from mini_claude.tools.common import ToolError
from mini_claude.tools.process import GuardedProcess, spawn_guarded, stop_guarded
from mini_claude.tools.shell_guard import FLUSH_SECONDS, LOG_GAP_PATTERN, CappedLog, head_size

STOP_GRACE_SECONDS = 2.0
POLL_SECONDS = 0.02
MAX_LINE_CHARS = 2_000
PUMP_CHUNK = 64 * 1024
SETTLE_SECONDS = 2.0  # an ended command's last output, still in its pipes, reaches the log


@dataclass
class BackgroundShell:
    id: str
    command: str
    process: GuardedProcess
    log_path: Path
    log_cap: int
    started: float = field(default_factory=time.monotonic)
    read_offset: int = 0  # bytes of the output already returned by shell_output
    stopped_by_user: bool = False
    # A command moved from the foreground: the tasks copying its pipes into the log.
    pumps: list[asyncio.Task[None]] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def exit_code(self) -> int | None:
        """None while it runs, or (moved from the foreground) while something it started
        still holds its output open."""
        code = self.process.poll()
        if code is not None and self._pumping() and self.process.guard_running():
            return None
        return code

    def _pumping(self) -> bool:
        return any(not pump.done() for pump in self.pumps)

    async def output_settled(self, timeout: float = SETTLE_SECONDS) -> None:
        """Once it has ended, wait for the last of its output to reach the log."""
        if self._pumping() and not self.process.guard_running():
            await asyncio.wait(self.pumps, timeout=timeout)

    @property
    def running(self) -> bool:
        return self.exit_code is None

    def state(self) -> str:
        """``running (12 s)``, ``exited with code 1``, ``killed``."""
        code = self.exit_code
        if code is None:
            return f"running ({time.monotonic() - self.started:.0f} s)"
        if self.stopped_by_user:
            return "killed"
        if code < 0:
            return f"killed by signal {-code}"
        return f"exited with code {code}"

    def log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0


@dataclass(frozen=True, slots=True)
class ShellRead:
    """New output of a shell since the previous read."""

    text: str
    new_bytes: int
    omitted_bytes: int  # left out of ``text`` (too much at once); still in the log
    matched_lines: int | None  # with a filter: the lines that matched
    dropped_bytes: int = 0  # never kept: the log was over its cap


class BackgroundShells:
    """The session's background shells, numbered ``bash_1``, ``bash_2``…"""

    def __init__(self) -> None:
        self._shells: dict[str, BackgroundShell] = {}
        self._counter = 0
        # Foreground commands running now, each with the event that sends it here.
        self._foreground: list[asyncio.Event] = []
        _EVERY_ROSTER.add(self)

    def _new_log(self, log_dir: Path) -> tuple[str, Path]:
        """The next shell id and its log, created empty and private."""
        self._counter += 1
        shell_id = f"bash_{self._counter}"
        try:
            make_private_dirs(log_dir)
            log_path = log_dir / f"{shell_id}-{time.time_ns()}.log"
            fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        except OSError as exc:
            raise ToolError(f"cannot create the shell's log: {exc.strerror or exc}") from None
        os.close(fd)
        return shell_id, log_path

    def start(self, command: str, cwd: Path, env: Mapping[str, str], log_dir: Path,
              log_cap: int, sandbox: Sequence[str] = ()) -> BackgroundShell:
        """``sandbox``: the command line the shell runs inside (empty: none)."""
        shell_id, log_path = self._new_log(log_dir)  # the guard writes it
        try:
            process = spawn_guarded([*sandbox, "bash", "-c", command], cwd, env,
                                    log_path=log_path, log_cap=log_cap)
        except OSError as exc:
            raise ToolError(f"could not start bash: {exc.strerror or exc}") from None
        shell = BackgroundShell(shell_id, command, process, log_path, log_cap)
        self._shells[shell_id] = shell
        return shell

    # ---- foreground commands sent to the background (Ctrl-B) ---------------------------

    @contextlib.contextmanager
    def foreground(self) -> Iterator[asyncio.Event]:
        """A foreground command runs: the event is set when the user sends it here."""
        requested = asyncio.Event()
        self._foreground.append(requested)
        try:
            yield requested
        finally:
            self._foreground.remove(requested)

    def foreground_running(self) -> bool:
        """A foreground command runs that :meth:`send_to_background` would move."""
        return any(not requested.is_set() for requested in self._foreground)

    def send_to_background(self) -> int:
        """Ask every foreground command running now to move here; how many were asked.

        Call it on the event loop's thread; with nothing running it does nothing."""
        waiting = [requested for requested in self._foreground if not requested.is_set()]
        for requested in waiting:
            requested.set()
        return len(waiting)

    def adopt(self, command: str, process: GuardedProcess,
              streams: Sequence[asyncio.StreamReader], printed: str, log_dir: Path,
              log_cap: int) -> BackgroundShell:
        """A running foreground command becomes a background shell: ``printed`` (its output
        so far) heads the log, and what its ``streams`` bring from now on follows."""
        shell_id, log_path = self._new_log(log_dir)
        try:
            log = CappedLog(str(log_path), log_cap)
            log.write(printed.encode("utf-8", "replace"))
        except OSError as exc:
            raise ToolError(f"cannot write the shell's log: {exc.strerror or exc}") from None
        shell = BackgroundShell(shell_id, command, process, log_path, log_cap,
                                read_offset=log.total)  # the tool result showed that much
        pumps = [asyncio.create_task(_pump_to_log(stream, log)) for stream in streams]
        shell.pumps = [*pumps, asyncio.create_task(_close_when_done(pumps, log))]
        self._shells[shell_id] = shell
        return shell

    def get(self, shell_id: str) -> BackgroundShell:
        shell = self._shells.get(shell_id.strip())
        if shell is None:
            known = ", ".join(self._shells) or "none"
            raise ToolError(f"no background shell {shell_id!r} (this session's shells: {known})")
        return shell

    def all(self) -> list[BackgroundShell]:
        return list(self._shells.values())

    def running(self) -> list[BackgroundShell]:
        return [s for s in self._shells.values() if s.running]

    def read_new(self, shell_id: str, pattern: str | None, cap: int) -> ShellRead:
        shell = self.get(shell_id)
        matcher = _compile(pattern)
        running = shell.running
        try:
            handle = open(shell.log_path, "rb")  # noqa: SIM115 - closed below
        except OSError:
            return ShellRead("", 0, 0, 0 if matcher else None)
        with handle:
            layout = _layout(handle, head_size(shell.log_cap))
            start = shell.read_offset
            if layout.output_size <= start:
                return ShellRead("", 0, 0, 0 if matcher else None)
            before, dropped, after = layout.pieces(start)
            pieces = [piece for piece in (before, after) if piece[1] > piece[0]]
            share = cap // len(pieces) if pieces else cap
            texts: list[str] = []
            omitted = 0
            matched: int | None = 0 if matcher else None
            end = start
            for number, (first, last) in enumerate(pieces):
                if matcher is not None:
                    read = _filtered(handle, first, last, matcher, share)
                    piece_end = last
                else:
                    hold = running and number == len(pieces) - 1
                    read, piece_end = _head_and_tail(handle, first, last, share, whole_lines=hold)
                texts.append(read.text)
                omitted += read.omitted_bytes
                if matched is not None and read.matched_lines is not None:
                    matched += read.matched_lines
                end = layout.output_offset(piece_end)
        if dropped:
            gap = f"[... {dropped:,} bytes dropped: the log keeps only its head and tail ...]"
            texts.insert(1 if before[1] > before[0] else 0, gap)
            if not after[1] > after[0]:
                end = max(end, layout.output_size)
        shell.read_offset = max(end, start)
        text = "\n".join(t.rstrip("\n") if i < len(texts) - 1 else t for i, t in enumerate(texts))
        return ShellRead(text, shell.read_offset - start, omitted, matched, dropped)

    def stop(self, shell_id: str, grace: float = STOP_GRACE_SECONDS) -> BackgroundShell:
        shell = self.get(shell_id)
        if shell.running:
            shell.stopped_by_user = True
        _stop_group(shell.process, grace)
        return shell

    def stop_all(self, grace: float = STOP_GRACE_SECONDS) -> int:
        """Stop every shell still running (the session ends); returns how many were."""
        running = self.running()
        guarded = [s.process for s in self._shells.values() if s.process.guard_running()]
        for process in guarded:  # children that outlived their shell go too
            process.request_stop(now=grace <= 0)
        deadline = time.monotonic() + grace
        for process in guarded:
            process.wait_stopped(max(0.0, deadline - time.monotonic()))
        return len(running)


@dataclass(frozen=True, slots=True)
class _LogLayout:
    """Where the output's bytes are in a log that may have dropped its middle.

    Output offsets count every byte the command printed; the log holds ``[0, head)``
    as is, then (once over its cap) a gap line, then the last bytes from ``tail_at``.
    """

    file_size: int
    head: int  # bytes of output kept before the gap (the whole log when there is none)
    dropped: int
    tail_at: int  # file offset of the first tail byte

    @property
    def output_size(self) -> int:
        return self.head + self.dropped + (self.file_size - self.tail_at)

    def pieces(self, start: int) -> tuple[tuple[int, int], int, tuple[int, int]]:
        """File ranges of the output from ``start``: before the gap, bytes lost, after it."""
        if not self.dropped:
            return (start, self.file_size), 0, (self.file_size, self.file_size)
        before = (min(start, self.head), self.head)
        dropped = max(0, self.head + self.dropped - max(start, self.head))
        skip = max(0, start - self.head - self.dropped)
        return before, dropped, (self.tail_at + skip, self.file_size)

    def output_offset(self, file_offset: int) -> int:
        if not self.dropped or file_offset <= self.head:
            return file_offset
        return self.head + self.dropped + max(0, file_offset - self.tail_at)


def _layout(handle: BinaryIO, head: int) -> _LogLayout:
    """Read the gap line the guard writes after the head of a log over its cap."""
    handle.seek(0, os.SEEK_END)
    size = handle.tell()
    if size > head:
        handle.seek(head)
        gap = LOG_GAP_PATTERN.match(handle.read(300))
        if gap is not None:
            dropped = int(gap.group(1).replace(b",", b""))
            return _LogLayout(size, head, dropped, head + gap.end())
    return _LogLayout(size, size, 0, size)


async def _pump_to_log(stream: asyncio.StreamReader, log: CappedLog) -> None:
    """Copy a pipe into the log to its end; a log over its cap is rewritten even while quiet."""
    data: bytes | None
    while True:
        try:
            async with asyncio.timeout(FLUSH_SECONDS if log.dirty else None):
                data = await stream.read(PUMP_CHUNK)
        except TimeoutError:
            data = None  # nothing new for a while: the pending rewrite goes out now
        except OSError:
            data = b""
        if data is None:
            log.flush(now=True)
            continue
        if not data:
            return
        log.write(data)
        log.flush()


async def _close_when_done(pumps: Sequence[asyncio.Task[None]], log: CappedLog) -> None:
    """Both pipes ended: the log's last rewrite, then its file is closed."""
    await asyncio.gather(*pumps, return_exceptions=True)
    log.flush(now=True)
    with contextlib.suppress(OSError):
        log.file.close()


def _stop_group(process: GuardedProcess, grace: float) -> None:
    """Stop the shell and all it started: SIGTERM, ``grace`` seconds, then SIGKILL."""
    if process.guard_running():
        stop_guarded(process, grace)


def _compile(pattern: str | None) -> re.Pattern[str] | None:
    if not pattern:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"filter is not a valid regular expression: {exc}") from None


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _head_and_tail(handle: BinaryIO, start: int, size: int, cap: int, *, whole_lines: bool
                   ) -> tuple[ShellRead, int]:
    """The new bytes, or their head and tail when there are more than ``cap``.

    While the shell runs, a last line still being written waits for the next read.
    """
    new = size - start
    if new <= cap:
        handle.seek(start)
        data = handle.read(new)
        end = size
        if whole_lines and not data.endswith(b"\n") and b"\n" in data:
            cut = data.rindex(b"\n") + 1
            data, end = data[:cut], start + cut
        return ShellRead(_decode(data), end - start, 0, None), end
    half = cap // 2
    handle.seek(start)
    head = handle.read(half)
    handle.seek(size - half)
    tail = handle.read(half)
    omitted = new - 2 * half
    text = f"{_decode(head)}\n[... {omitted:,} bytes omitted ...]\n{_decode(tail)}"
    return ShellRead(text, new, omitted, None), size


def _filtered(handle: BinaryIO, start: int, size: int, matcher: re.Pattern[str], cap: int
              ) -> ShellRead:
    """Only the lines that match, read line by line so a huge log stays cheap."""
    handle.seek(start)
    kept: list[str] = []
    used = 0
    matched = 0
    omitted = 0
    position = start
    while position < size:
        raw = handle.readline(min(size - position, MAX_LINE_CHARS * 4))
        if not raw:
            break
        position += len(raw)
        line = _decode(raw).rstrip("\n")
        if not matcher.search(line):
            continue
        matched += 1
        if used + len(line) + 1 > cap:
            omitted += len(raw)
            continue
        kept.append(line)
        used += len(line) + 1
    text = "\n".join(kept)
    return ShellRead(text, size - start, omitted, matched)


# Every roster of this process, so the last ones standing are stopped at exit.
_EVERY_ROSTER: weakref.WeakSet[BackgroundShells] = weakref.WeakSet()


@atexit.register
def _stop_everything() -> None:
    for roster in list(_EVERY_ROSTER):
        roster.stop_all(grace=0.5)
