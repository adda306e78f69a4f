"""Child processes that can always be stopped, and output that can never grow unbounded."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal

TERMINATE_GRACE_SECONDS = 2.0
EXIT_POLL_SECONDS = 0.02


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

    def __init__(self, cap: int) -> None:
        self.head_cap = cap // 2
        self.tail_cap = cap - self.head_cap
        self.head = ""
        self.tail = ""
        self.dropped = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, data: bytes, *, final: bool = False) -> None:
        self.add(self._decoder.decode(data, final=final))

    def add(self, text: str) -> None:
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += text[:room]
            text = text[room:]
        if not text:
            return
        self.tail += text
        excess = len(self.tail) - self.tail_cap
        if excess > 0:
            self.dropped += excess
            self.tail = self.tail[excess:]

    def text(self) -> str:
        if not self.dropped:
            return self.head + self.tail
        return f"{self.head}\n[... {self.dropped:,} characters omitted ...]\n{self.tail}"


async def pump(
    stream: asyncio.StreamReader, buffer: HeadTailBuffer, chunk: int = 64 * 1024
) -> None:
    """Read a pipe to its end into a bounded buffer."""
    while data := await stream.read(chunk):
        buffer.feed(data)
    buffer.feed(b"", final=True)
