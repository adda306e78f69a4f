"""Child processes that can always be stopped, and output that can never grow unbounded."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from mini_claude.private_dirs import make_private_dirs
from mini_claude.secrets import mask, secret_values

TERMINATE_GRACE_SECONDS = 2.0
EXIT_POLL_SECONDS = 0.02


# Process groups of commands still running, so a forced exit can take them along.
LIVE_GROUPS: set[int] = set()


def kill_live_groups() -> None:
    """SIGKILL every command group still running (the process is about to exit)."""
    for pgid in list(LIVE_GROUPS):
        signal_group(pgid, signal.SIGKILL)


def signal_group(pgid: int, signum: int) -> None:
    """Signal a whole process group; a group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


async def wait_for_exit(process: asyncio.subprocess.Process, timeout: float | None) -> bool:
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
    is usually there); memory stays at ``cap`` characters whatever arrives.
    """

    def __init__(self, cap: int, spill_path: Path | None = None,
                 secrets: tuple[str, ...] = ()) -> None:
        self.head_cap = cap // 2
        self.tail_cap = cap - self.head_cap
        self.head = ""
        self.tail = ""
        self.dropped = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.spill_path = spill_path  # where the whole stream goes once it outgrows the cap
        self.spilled: Path | None = None
        self._spill: TextIO | None = None
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
            self._spill = os.fdopen(fd, "w", encoding="utf-8")
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
            self._spill.write(text)
            self._spill.flush()
        except OSError:
            failed, self._spill = self._spill, None
            with contextlib.suppress(OSError):
                failed.close()
            self.spilled = None

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
        where = f"; the full output is saved at {self.spilled}" if self.spilled else ""
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
