"""What checkpoints cost: a 300-call session over HTTP against the simulator, then a rewind.

    .venv/bin/python -m tests.support.rewind_measure

Prints the store's size, the transcript's, the time and bytes a checkpoint adds per
edit, and how long a rewind to the first message takes (code and conversation).
Not a test: timings depend on the machine.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from mini_claude.checkpoints.recorder import Checkpointer, Checkpoints
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.agent import Run
from tests.support.rewind import rewinder

FILES, LINES, TURNS, CALLS_PER_TURN = 30, 200, 10, 30


def write_files(project: Path) -> None:
    project.mkdir()
    for f in range(FILES):
        body = "".join(f"line {n} of module {f}: value 0\n" for n in range(LINES))
        (project / f"module_{f}.py").write_text(body)


def steps() -> list[Reply]:
    replies: list[Reply] = []
    for turn in range(TURNS):
        for call in range(CALLS_PER_TURN):
            number = turn * CALLS_PER_TURN + call
            f, n = number % FILES, number // FILES
            old = f"line {n} of module {f}: value 0"
            new = f"line {n} of module {f}: value {turn + 1}"
            replies.append(Reply(f"Edit {number}.", [ToolCall(
                "edit_file", {"path": f"module_{f}.py", "old": old, "new": new})]))
        replies.append(Reply(f"Turn {turn} done."))
    return replies


class TimedCheckpointer(Checkpoints):
    """Wraps the session's checkpointer to time each call."""

    def __init__(self, inner: Checkpointer) -> None:
        self.inner = inner
        self.seconds: list[float] = []
        self.cpu_seconds: list[float] = []

    def before_write(self, path: Path, new: bytes | str) -> None:
        started, cpu = time.perf_counter(), time.thread_time()
        self.inner.before_write(path, new)
        self.seconds.append(time.perf_counter() - started)
        self.cpu_seconds.append(time.thread_time() - cpu)


def main() -> None:
    with tempfile.TemporaryDirectory() as folder, Simulator(ScriptedPolicy(steps())) as sim:
        root = Path(folder)
        write_files(root / "project")
        run = Run(sim, "anthropic", root / "home", root / "project", context_window=1_000_000)
        run.start()
        timed = TimedCheckpointer(run.session.checkpointer)
        run.agent.tool_context.checkpoints = timed
        for turn in range(TURNS):
            run.turn(f"turn {turn}: bump the values")
        size = run.session.checkpoints.size()
        transcript = run.agent.transcript.path.stat().st_size
        records = transcript_checkpoint_bytes(run.agent.transcript.path)
        started = time.perf_counter()
        point = next(p for p in rewinder(run).points() if p.text.startswith("turn 0"))
        r = rewinder(run)
        plan = r.plan(point)
        outcome = r.rewind(point, code=True, conversation=True, plan=plan)
        rewind_seconds = time.perf_counter() - started
        calls = len(timed.seconds)
        print(f"edits checkpointed: {calls}")
        print(f"store: {size.bytes:,} bytes, {size.contents} contents, {size.sessions} session")
        print(f"store per edit: {size.bytes / calls:,.0f} bytes")
        print(f"transcript: {transcript:,} bytes, of which checkpoint records {records:,} "
              f"({records / calls:,.0f} bytes per edit)")
        print(f"checkpoint time per edit: median {sorted(timed.seconds)[calls // 2] * 1000:.2f} "
              f"ms, max {max(timed.seconds) * 1000:.2f} ms; CPU median "
              f"{sorted(timed.cpu_seconds)[calls // 2] * 1000:.2f} ms")
        print(f"rewind to the first message: {rewind_seconds * 1000:.0f} ms "
              f"({len(outcome.restored)} files restored, {outcome.messages} messages kept)")
        run.close()


def transcript_checkpoint_bytes(path: Path) -> int:
    return sum(len(line) + 1 for line in path.read_bytes().split(b"\n")
               if b'"type": "checkpoint"' in line)


if __name__ == "__main__":
    main()
