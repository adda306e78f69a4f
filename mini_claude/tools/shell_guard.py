"""The guard every shell command runs under, so nothing it starts outlives the session.

Signalling a command's process group is not enough: its children can leave the group
(``setsid``, a double fork, ``nohup … &``), and a mini-claude killed with SIGKILL cleans
up nothing. So mini-claude starts each command through this small program (standard
library only, ``python -I -S shell_guard.py``), which stays between it and the command:

- The guard is a child subreaper (``PR_SET_CHILD_SUBREAPER``): a descendant whose parent
  exits is re-parented to the guard instead of init, so everything the command started,
  however it detached, stays in the guard's tree and is found by walking ``/proc``.
- It holds the read end of a lifeline pipe whose only write end mini-claude keeps. The
  kernel closes that end however mini-claude ends (exit, crash, SIGKILL); the guard then
  sees end-of-file and kills its whole tree. No cgroups, no polling of mini-claude.
- The command (``bash -c``) runs in a session of its own (it cannot reach the terminal),
  with ``PR_SET_PDEATHSIG`` = SIGKILL: should the guard itself be killed, bash goes too.
- With the sandbox on, the command is ``bwrap … -- bash -c``: bubblewrap gets the same death
  signal and passes it on (``--die-with-parent``), and the end of its PID namespace ends
  everything inside it.
- bash's exit status goes to mini-claude on a status pipe as soon as bash exits; the
  guard then stays while anything bash started still runs (``server > log &``), so those
  die with the session rather than with the command.
- SIGTERM (kill_shell, a timeout, the end of a session): SIGTERM to the whole tree, up to
  a grace period for it to go, then SIGKILL to whatever is left. SIGUSR1: SIGKILL at once.
- With a log path (a background shell) the guard copies the command's output to the log,
  keeping its first and last bytes within a cap and a line saying how many were dropped
  between (``LOG_GAP``), rewritten whole at most every ``FLUSH_SECONDS`` once over the cap.

Usage: ``shell_guard.py LIFELINE_FD STATUS_FD GRACE LOG_PATH|- LOG_CAP COMMAND…``.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import select
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
STOP_NOW = signal.SIGUSR1  # SIGKILL the tree without a grace period
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, STOP_NOW)
NO_LOG = "-"
FLUSH_SECONDS = 0.2
KILL_SWEEP_SECONDS = 10.0  # a process stuck in the kernel cannot hold the guard forever
READ_CHUNK = 1024 * 1024
# Written after the head of a log that outgrew its cap; the reader finds it there.
LOG_GAP = "\n[... {dropped:,} bytes dropped here; the log keeps the first {head:,} and the " \
          "last {tail:,} bytes of the output ...]\n"
LOG_GAP_PATTERN = re.compile(rb"\n\[\.\.\. ([\d,]+) bytes dropped here;[^\n]*\]\n")


def head_size(cap: int) -> int:
    """How many of a log's first bytes are kept; the tail keeps the rest of the cap."""
    return cap // 2


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):  # not Linux: the process group is all we can stop
        return False


class CappedLog:
    """The output as it arrives while small; past the cap, its head, the gap and its tail."""

    def __init__(self, path: str, cap: int) -> None:
        self.path = path
        self.head_cap = head_size(cap)
        self.tail_cap = cap - self.head_cap
        self.cap = cap
        self.total = 0
        self.head = b""
        self.tail = bytearray()
        self.dropped = 0
        self.over = False  # past the cap: the file is rewritten whole from here on
        self.dirty = False
        self.flushed_at = 0.0
        self.file = open(path, "ab", buffering=0)  # noqa: SIM115 - held for the guard's life

    def write(self, data: bytes) -> None:
        if not self.over and self.total + len(data) <= self.cap:
            self.file.write(data)
            self.total += len(data)
            return
        self.total += len(data)
        if self.over:
            self.tail += data
        else:  # the first overflow: the head and tail from what the file holds, and this
            with open(self.path, "rb") as handle:
                everything = handle.read() + data
            self.head = everything[: self.head_cap]
            self.tail = bytearray(everything[self.head_cap:])
            self.over = True
        excess = len(self.tail) - self.tail_cap
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess
        self.dirty = True

    def flush(self, *, now: bool = False) -> None:
        """Rewrite the log as head, gap line and tail, atomically; at most so often."""
        if not self.dirty or (not now and time.monotonic() - self.flushed_at < FLUSH_SECONDS):
            return
        gap = LOG_GAP.format(dropped=self.dropped, head=len(self.head), tail=self.tail_cap)
        partial = f"{self.path}.partial"
        with contextlib.suppress(OSError):
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with open(fd, "wb") as out:
                out.write(self.head + gap.encode() + bytes(self.tail))
            os.replace(partial, self.path)
        self.dirty = False
        self.flushed_at = time.monotonic()

    def next_flush_ms(self) -> int:
        if not self.dirty:
            return -1
        return max(0, int((self.flushed_at + FLUSH_SECONDS - time.monotonic()) * 1000))


def _parents() -> dict[int, int]:
    """Every process's parent, from /proc."""
    parents: dict[int, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return parents
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()  # the name may hold spaces and ")"
        if len(fields) > 1:
            parents[int(name)] = int(fields[1])
    return parents


def descendants(root: int) -> list[int]:
    """Every process below ``root`` (orphans re-parented to it included)."""
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    found: list[int] = []
    pending = list(children.get(root, []))
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(children.get(pid, []))
    return found


class Guard:
    """Runs the command, reports its exit, and takes its whole tree down when told to."""

    def __init__(self, lifeline: int, status: int, grace: float, log: CappedLog | None) -> None:
        self.lifeline = lifeline
        self.status = status
        self.grace = grace
        self.log = log
        self.output: int | None = None  # read end of the command's output, with a log
        self.output_write_end: int | None = None
        self.command_pid = 0
        self.reported = False
        self.stop_grace: float | None = None  # set by a stop signal
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        if log is not None:
            self.output, self.output_write_end = os.pipe()
            os.set_blocking(self.output, False)
            with contextlib.suppress(OSError, AttributeError):
                import fcntl
                fcntl.fcntl(self.output, fcntl.F_SETPIPE_SZ, READ_CHUNK)

    def start(self, argv: list[str]) -> None:
        handled = {signal.SIGCHLD, *STOP_SIGNALS}
        signal.pthread_sigmask(signal.SIG_BLOCK, handled)  # no signal before the fork is done
        for signum in handled:
            signal.signal(signum, self._on_signal)
        signal.set_wakeup_fd(self.wake_w)
        guard_pid = os.getpid()
        pid = os.fork()
        if pid == 0:
            self._become_command(argv, guard_pid)
        self.command_pid = pid
        if self.output_write_end is not None:
            os.close(self.output_write_end)
        # The guard's own stdout and stderr are the command's: holding them would keep
        # a reader waiting after the command ended.
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.close(devnull)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, handled)

    def _become_command(self, argv: list[str], guard_pid: int) -> None:
        try:
            os.setsid()
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != guard_pid:
                os._exit(137)  # the guard died before the death signal was armed
            signal.set_wakeup_fd(-1)
            for signum in (signal.SIGCHLD, signal.SIGPIPE, *STOP_SIGNALS):
                signal.signal(signum, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, set())
            if self.output_write_end is not None:
                os.dup2(self.output_write_end, 1)
                os.dup2(self.output_write_end, 2)
            os.execvp(argv[0], argv)
        except BaseException as exc:  # nothing may return into the guard's loop
            with contextlib.suppress(BaseException):
                os.write(2, f"cannot run {argv[0]}: {exc}\n".encode())
        os._exit(127)

    def _on_signal(self, signum: int, frame: object) -> None:
        if signum == signal.SIGCHLD:
            return  # the main loop reaps
        grace = 0.0 if signum == STOP_NOW else self.grace
        self.stop_grace = grace if self.stop_grace is None else min(self.stop_grace, grace)

    def run(self) -> int:
        poller = select.poll()
        poller.register(self.lifeline, select.POLLIN)
        poller.register(self.wake_r, select.POLLIN)
        if self.output is not None:
            poller.register(self.output, select.POLLIN)
        while True:
            if self.stop_grace is not None:
                return self.stop(self.stop_grace)
            timeout = self.log.next_flush_ms() if self.log is not None else -1
            for fd, _ in poller.poll(timeout):
                if fd == self.lifeline:
                    return self.stop(self.grace)  # mini-claude is gone, however it ended
                if fd == self.wake_r:
                    with contextlib.suppress(OSError):
                        os.read(self.wake_r, 4096)
            had_output = self.output
            self._pump_output()
            if had_output is not None and self.output is None:
                poller.unregister(had_output)
            if self.log is not None:
                self.log.flush()
            if self._reap() and self.reported and self.output is None:
                return 0  # the command and everything it started have ended

    def _pump_output(self) -> None:
        """Copy what the command printed to the log, without ever blocking."""
        while self.output is not None:
            try:
                data = os.read(self.output, READ_CHUNK)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                os.close(self.output)
                self.output = None
                return
            assert self.log is not None
            self.log.write(data)

    def _reap(self) -> bool:
        """Collect exited children; True when none is left (nothing below the guard runs)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return True
            if pid == 0:
                return False
            if pid == self.command_pid:
                self._report(os.waitstatus_to_exitcode(status))

    def _report(self, code: int) -> None:
        """bash's exit status, once everything it printed so far is in the log."""
        self._pump_output()
        if self.log is not None:
            self.log.flush(now=True)
        with contextlib.suppress(OSError):
            os.write(self.status, f"{code}\n".encode())
        self.reported = True

    def _signal_tree(self, signum: int) -> None:
        for pid in descendants(os.getpid()):
            with contextlib.suppress(OSError):
                os.kill(pid, signum)
        with contextlib.suppress(OSError):
            os.killpg(self.command_pid, signum)  # where /proc cannot be read

    def stop(self, grace: float) -> int:
        """SIGTERM the tree, give it ``grace`` seconds, then SIGKILL what is left."""
        if grace > 0:
            self._signal_tree(signal.SIGTERM)
            deadline = time.monotonic() + grace
            while not self._reap() and time.monotonic() < deadline:
                self._pump_output()
                time.sleep(0.02)
        deadline = time.monotonic() + KILL_SWEEP_SECONDS
        while not self._reap() and time.monotonic() < deadline:
            self._signal_tree(signal.SIGKILL)
            self._pump_output()
            time.sleep(0.01)
        self._pump_output()
        if self.log is not None:
            self.log.flush(now=True)
        if not self.reported:
            self._report(-signal.SIGKILL)
        return 0


def main(argv: list[str]) -> int:
    lifeline, status = int(argv[1]), int(argv[2])
    grace, log_path, cap, command = float(argv[3]), argv[4], int(argv[5]), argv[6:]
    os.set_inheritable(lifeline, False)  # the command must not hold them
    os.set_inheritable(status, False)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    log = CappedLog(log_path, cap) if log_path != NO_LOG else None
    guard = Guard(lifeline, status, grace, log)
    guard.start(command)
    return guard.run()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
