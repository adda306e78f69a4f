"""Background shells: commands that outlive the tool call, such as a dev server or a watcher.

Each runs in its own process group with stdout and stderr going straight to a
file under the session's results folder, so a shell that prints megabytes
costs disk, never memory. ``shell_output`` reads what arrived since the last
read; every shell still running is stopped when the session ends, at exit and
on a forced exit (its group is in ``LIVE_GROUPS``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import signal
import subprocess
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from mini_claude.private_dirs import make_private_dirs
from mini_claude.tools.common import ToolError
from mini_claude.tools.process import LIVE_GROUPS, signal_group

STOP_GRACE_SECONDS = 2.0
POLL_SECONDS = 0.02
MAX_LINE_CHARS = 2_000


@dataclass
class BackgroundShell:
    id: str
    command: str
    process: subprocess.Popen[bytes]
    log_path: Path
    started: float = field(default_factory=time.monotonic)
    read_offset: int = 0  # bytes of the log already returned by shell_output
    stopped_by_user: bool = False

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def exit_code(self) -> int | None:
        return self.process.poll()

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


class BackgroundShells:
    """The session's background shells, numbered ``bash_1``, ``bash_2``…"""

    def __init__(self) -> None:
        self._shells: dict[str, BackgroundShell] = {}
        self._counter = 0
        _EVERY_ROSTER.add(self)

    def start(self, command: str, cwd: Path, env: Mapping[str, str], log_dir: Path
              ) -> BackgroundShell:
        self._counter += 1
        shell_id = f"bash_{self._counter}"
        try:
            make_private_dirs(log_dir)
            log_path = log_dir / f"{shell_id}-{time.time_ns()}.log"
            fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        except OSError as exc:
            raise ToolError(f"cannot create the shell's log: {exc.strerror or exc}") from None
        try:
            process = subprocess.Popen(
                ["bash", "-c", command], cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
                stdout=fd, stderr=subprocess.STDOUT, start_new_session=True,
            )
        except OSError as exc:
            raise ToolError(f"could not start bash: {exc.strerror or exc}") from None
        finally:
            os.close(fd)
        LIVE_GROUPS.add(process.pid)
        shell = BackgroundShell(shell_id, command, process, log_path)
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
        size = shell.log_size()
        start = shell.read_offset
        if size <= start:
            return ShellRead("", 0, 0, 0 if matcher else None)
        with open(shell.log_path, "rb") as handle:
            if matcher is not None:
                read = _filtered(handle, start, size, matcher, cap)
                end = size
            else:
                read, end = _head_and_tail(handle, start, size, cap, whole_lines=running)
        shell.read_offset = end
        return read

    def stop(self, shell_id: str, grace: float = STOP_GRACE_SECONDS) -> BackgroundShell:
        shell = self.get(shell_id)
        if shell.running:
            shell.stopped_by_user = True
        _stop_group(shell.process, grace)
        return shell

    def stop_all(self, grace: float = STOP_GRACE_SECONDS) -> int:
        """Stop every shell still running (the session ends); returns how many were."""
        running = self.running()
        for shell in running:
            signal_group(shell.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for shell in running:
            _wait(shell.process, max(0.0, deadline - time.monotonic()))
        for shell in self._shells.values():
            _stop_group(shell.process, 0.0)  # children that outlived their shell go too
        return len(running)


def _stop_group(process: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM the group, wait up to ``grace``, then SIGKILL whatever is left of it."""
    signal_group(process.pid, signal.SIGTERM)
    _wait(process, grace)
    signal_group(process.pid, signal.SIGKILL)
    _wait(process, STOP_GRACE_SECONDS)
    LIVE_GROUPS.discard(process.pid)


def _wait(process: subprocess.Popen[bytes], timeout: float) -> None:
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=timeout)


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
