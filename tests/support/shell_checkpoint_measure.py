"""What checkpointing shell commands costs, on a generated project and on this repository.

    make bench-undo     (or: .venv/bin/python -m tests.support.shell_checkpoint_measure
                         [--files 10000 --mb 60])

A session against the simulator runs `true` through run_shell many times (the added
cost: the listing before and after, against `true`'s own time), then `sed -i` on 1,000
files and `rm -rf src/` on 2,000, and rewinds each (checking every byte and mode).
Not a test: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from mini_claude.checkpoints.recorder import Checkpointer, Checkpoints
from mini_claude.checkpoints.tree import Capture
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.tools.builtin.run_shell import execute
from tests.support.agent import Run
from tests.support.rewind import rewinder

TRUE_CALLS = 60
REPOSITORY = Path(__file__).resolve().parents[2]


class TimedCommands(Checkpoints):
    """The session's checkpointer, timed around each command."""

    def __init__(self, inner: Checkpointer) -> None:
        self.inner = inner
        self.seconds: list[float] = []
        self._started = 0.0
        self._spent = 0.0

    def before_write(self, path: Path, new: bytes | str) -> None:
        self.inner.before_write(path, new)

    async def before_command(self, label: str) -> Capture | None:
        started = time.perf_counter()
        capture = await self.inner.before_command(label)
        self._spent = time.perf_counter() - started
        return capture

    async def after_command(self, capture: Capture | None,
                            running: Callable[[], bool] | None = None) -> None:
        started = time.perf_counter()
        await self.inner.after_command(capture, running)
        self.seconds.append(self._spent + time.perf_counter() - started)

    def at_turn_boundary(self) -> None:
        self.inner.at_turn_boundary()


def generate(project: Path, files: int, megabytes: int) -> None:
    """``files`` files of source-like text; a fifth of them under src/, some executable."""
    size = megabytes * 1024 * 1024 // files
    for number in range(files):
        top = "src" if number < files // 5 else "lib"
        folder = project / top / f"pkg{number % 50}"
        folder.mkdir(parents=True, exist_ok=True)
        line = f"def function_{number}(value):  # {os.urandom(12).hex()}\n    return value\n"
        path = folder / f"module_{number}.py"
        path.write_text((line * (size // len(line) + 1))[:size])
        if number % 10 == 0:
            path.chmod(0o755)
    (project / ".gitignore").write_text("build/\n*.log\n")


def copy_of_repository(project: Path) -> None:
    project.mkdir()
    archive = subprocess.run(["git", "-C", str(REPOSITORY), "archive", "HEAD"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(project)], input=archive, check=True)


def tree(root: Path) -> dict[str, tuple[bytes, int]]:
    found = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            found[str(path.relative_to(root))] = (path.read_bytes(), path.stat().st_mode & 0o7777)
    return found


def policy(with_changes: bool) -> ScriptedPolicy:
    steps = [Reply(f"true {n}", [ToolCall("run_shell", {"command": "true"})])
             for n in range(TRUE_CALLS)]
    steps.append(Reply("done"))
    if with_changes:
        sed = "find lib -name '*.py' | sort | head -1000 | xargs sed -i 's/value/VALUE/'"
        steps += [Reply("sed", [ToolCall("run_shell", {"command": sed})]), Reply("done"),
                  Reply("rm", [ToolCall("run_shell", {"command": "rm -rf src/"})]),
                  Reply("done")]
    return ScriptedPolicy(steps, final=Reply("ok"))


def command_alone(project: Path) -> list[float]:
    async def times() -> list[float]:
        found = []
        for _ in range(TRUE_CALLS):
            started = time.perf_counter()
            await execute("true", project, dict(os.environ), 60, 30_000)
            found.append(time.perf_counter() - started)
        return found
    return asyncio.run(times())


def measure(name: str, project: Path, home: Path, *, with_changes: bool) -> None:
    print(f"== {name}: {sum(1 for _ in project.rglob('*') if _.is_file()):,} files, "
          f"{sum(p.stat().st_size for p in project.rglob('*') if p.is_file()) / 2**20:.1f} MB")
    with Simulator(policy(with_changes)) as sim:
        run = Run(sim, "anthropic", home, project, context_window=1_000_000)
        run.start()
        timed = TimedCommands(run.session.checkpointer)
        run.agent.tool_context.checkpoints = timed
        run.turn("run true many times")
        first, rest = timed.seconds[0], sorted(timed.seconds[1:])
        alone = sorted(command_alone(project))
        median, p95 = statistics.median(rest), rest[int(len(rest) * 0.95) - 1]
        command = statistics.median(alone)
        print(f"first command of the session (lists and stores the whole project): "
              f"{first * 1000:.0f} ms")
        print(f"added per run_shell: median {median * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms; "
              f"`true` alone: median {command * 1000:.1f} ms (ratio {median / command:.2f}x "
              f"median, {p95 / command:.2f}x p95 against it)")
        print(f"store after the first listing: {run.session.checkpoints.size().bytes / 2**20:.1f}"
              " MB")
        if with_changes:
            changes_and_rewinds(run, project)
        run.close()


def changes_and_rewinds(run: Run, project: Path) -> None:
    before_sed = tree(project)
    size = run.session.checkpoints.size().bytes
    run.turn("sed 1000 files")
    grown = run.session.checkpoints.size().bytes - size
    print(f"store growth per file sed changed: {grown / 1000:.0f} bytes")
    before_rm = tree(project)
    run.turn("rm -rf src")
    assert not (project / "src").exists()
    for prompt, wanted, label in (("rm -rf src", before_rm, "rm -rf src/ (2,000 files)"),
                                  ("sed 1000", before_sed, "1,000 files sed changed")):
        point = next(p for p in rewinder(run).points() if p.text.startswith(prompt))
        started = time.perf_counter()
        r = rewinder(run)
        outcome = r.rewind(point, code=True, conversation=False, plan=r.plan(point))
        seconds = time.perf_counter() - started
        same = tree(project) == wanted
        print(f"rewind of {label}: {seconds:.2f} s, {len(outcome.restored)} restored, "
              f"every byte and mode back: {same}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--mb", type=int, default=60)
    args = parser.parse_args()
    print("load average at the start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        generate(root / "generated", args.files, args.mb)
        measure("generated project", root / "generated", root / "home", with_changes=True)
        copy_of_repository(root / "repository")
        measure("this repository", root / "repository", root / "home2", with_changes=False)
    print("load average at the end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
