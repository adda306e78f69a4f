"""What the sandbox costs per command: ``python -m mini_claude.bench.sandbox_overhead [N]``.

Runs N short commands (``true``) through run_shell's own ``execute`` (guard included),
alternating sandbox on and off so both see the same machine load, and prints the median and
95th percentile of each and their ratio.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mini_claude.permissions.sandbox.bwrap import unavailable_reason
from mini_claude.permissions.sandbox.state import SandboxState
from mini_claude.tools.builtin.run_shell import execute

DEFAULT_COMMANDS = 200


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def measure(count: int) -> dict[str, list[float]]:
    project = Path(tempfile.mkdtemp(prefix="mini-claude-overhead-"))
    state = SandboxState(enabled_by_setting=True)
    prefix = state.prefix("default", project, (), project)
    times: dict[str, list[float]] = {"off": [], "on": []}
    try:
        for index in range(count * 2):
            which = "on" if index % 2 else "off"
            started = time.perf_counter()
            result = await execute("true", project, {"PATH": "/usr/bin:/bin"}, 60, 10_000,
                                   sandbox=prefix if which == "on" else ())
            times[which].append(time.perf_counter() - started)
            if result.exit_code != 0:
                raise SystemExit(f"the command failed ({which}): {result.stderr.strip()}")
    finally:
        state.close()
    return times


def main(argv: list[str]) -> int:
    missing = unavailable_reason("bwrap")
    if missing is not None:
        print(f"cannot measure: {missing}", file=sys.stderr)
        return 1
    count = int(argv[0]) if argv else DEFAULT_COMMANDS
    times = asyncio.run(measure(count))
    rows = {name: (statistics.median(v) * 1000, percentile(v, 0.95) * 1000)
            for name, v in times.items()}
    for name, (median, p95) in rows.items():
        print(f"sandbox {name:3}: median {median:6.1f} ms   p95 {p95:6.1f} ms   ({count} commands)")
    print(f"ratio on/off: median {rows['on'][0] / rows['off'][0]:.2f}x   "
          f"p95 {rows['on'][1] / rows['off'][1]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
