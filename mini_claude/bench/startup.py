"""How long a user waits: ``mini-claude --version``, and the REPL until its prompt is drawn.

Both run the installed command in a fresh process; the REPL runs in a real
pseudo-terminal against the simulator, so nothing is faked on the way to the
prompt.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from mini_claude.simulator import Simulator

PROMPT_READY = r"ctrl-d exits[\s\S]*?> "
PROMPT_TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class StartupTimes:
    runs: int
    version_ms: list[float]
    prompt_ms: list[float]
    note: str = ""

    @property
    def version_median(self) -> float:
        return statistics.median(self.version_ms) if self.version_ms else float("nan")

    @property
    def prompt_median(self) -> float:
        return statistics.median(self.prompt_ms) if self.prompt_ms else float("nan")


def command() -> list[str]:
    """The installed ``mini-claude`` next to this interpreter, or the module as a fallback."""
    installed = Path(sys.executable).with_name("mini-claude")
    if installed.exists():
        return [str(installed)]
    found = shutil.which("mini-claude")
    return [found] if found else [sys.executable, "-m", "mini_claude.cli"]


def _environment(base_url: str, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "OPENAI_", "MINI_CLAUDE_"))}
    env.update({
        "ANTHROPIC_API_KEY": "bench",
        "ANTHROPIC_BASE_URL": base_url,
        "MINI_CLAUDE_PROVIDER": "anthropic",
        "MINI_CLAUDE_MODEL": "sim-sonnet",
        "MINI_CLAUDE_HOME": str(home),
        "TERM": "xterm-256color",
        "PROMPT_TOOLKIT_NO_CPR": "1",
    })
    return env


def time_version(cmd: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run([*cmd, "--version"], check=True, capture_output=True, timeout=60)
    return (time.perf_counter() - started) * 1000


def time_prompt(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    """Milliseconds from spawning the REPL in a pty until its prompt is on screen."""
    import pexpect

    started = time.perf_counter()
    child = pexpect.spawn(cmd[0], cmd[1:], env=env, cwd=str(cwd), dimensions=(40, 120),
                          encoding="utf-8", codec_errors="replace")
    try:
        child.expect(PROMPT_READY, timeout=PROMPT_TIMEOUT_SECONDS)
        elapsed = (time.perf_counter() - started) * 1000
        child.sendcontrol("d")
        child.expect(pexpect.EOF, timeout=PROMPT_TIMEOUT_SECONDS)
    finally:
        child.close(force=True)
    return elapsed


def measure(runs: int) -> StartupTimes:
    cmd = command()
    version = [time_version(cmd) for _ in range(runs)]
    try:
        import pexpect  # noqa: F401
    except ImportError:
        return StartupTimes(runs, version, [], "pexpect is not installed; REPL start-up skipped")
    prompt: list[float] = []
    with tempfile.TemporaryDirectory(prefix="mini-claude-startup-") as folder, Simulator() as sim:
        root = Path(folder)
        (root / "project").mkdir()
        env = _environment(sim.anthropic_base_url, root / "home")
        for _ in range(runs):
            try:
                prompt.append(time_prompt(cmd, env, root / "project"))
            except Exception as exc:  # a REPL that never shows its prompt is a result, not a crash
                return StartupTimes(runs, version, prompt,
                                    f"the REPL prompt did not appear: {type(exc).__name__}")
    return StartupTimes(runs, version, prompt)


def startup_table(times: StartupTimes) -> str:
    lines = [f"| measure (median of {times.runs} runs) | time |", "|---|---|",
             f"| `mini-claude --version` | {times.version_median:.0f} ms |"]
    if times.prompt_ms:
        lines.append(f"| REPL prompt on screen (pty, simulator) | {times.prompt_median:.0f} ms |")
    if times.note:
        lines.append(f"\n{times.note}")
    return "\n".join(lines)


BARE_IMPORTS = "import prompt_toolkit, rich, dotenv"


def time_bare_imports() -> float:
    """Milliseconds for a fresh interpreter to import only the REPL's three libraries.

    The floor any REPL built on them pays; ``compare_with_bare_imports`` puts
    ours beside it, measured in the same run so machine load affects both.
    """
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", BARE_IMPORTS], check=True, capture_output=True,
                   timeout=60)
    return (time.perf_counter() - started) * 1000


def compare_with_bare_imports(runs: int) -> tuple[float, float]:
    """Median prompt-on-screen time and median bare-import time, runs interleaved."""
    cmd = command()
    prompt: list[float] = []
    bare: list[float] = []
    with tempfile.TemporaryDirectory(prefix="mini-claude-startup-") as folder, Simulator() as sim:
        root = Path(folder)
        (root / "project").mkdir()
        env = _environment(sim.anthropic_base_url, root / "home")
        for _ in range(runs):
            bare.append(time_bare_imports())
            prompt.append(time_prompt(cmd, env, root / "project"))
    return statistics.median(prompt), statistics.median(bare)
