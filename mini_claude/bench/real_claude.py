"""The real Claude Code CLI played through a scripted session against the simulator.

The CLI runs as a user would run it (print mode, stream-json input, one user
message per turn) with ``ANTHROPIC_BASE_URL`` pointing at the simulator. The
scripted model is the benchmark's own (:class:`ScriptPolicy`); this module only
speaks Claude Code's tool vocabulary to it: our calls become Read, Bash and
Edit calls, and the CLI's results and notices are read back in ours, so the
same script, the same recovery rule and the same summarizer decide every row.
Cost, cache use, compactions and overflows come from the server's records,
priced like every other row.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shlex
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from mini_claude.bench.cli_policy import TranslatingPolicy, fresh_workdir
from mini_claude.bench.runner import (
    CLOCK_START,
    CompactionMark,
    RunResult,
    _check_needs,
    _check_recoveries,
    _join,
    explain_losses,
    recovery_cost,
)
from mini_claude.bench.strategies import CLAUDE_CODE_FLOOR_WINDOW
from mini_claude.permissions.mode_table import BYPASS_MODE
from mini_claude.prompts import SUMMARY_HEADING
from mini_claude.scenario.policy import read_on_notice, saved_notice
from mini_claude.scenario.script import Call, Script
from mini_claude.simulator import RecordedRequest, SimClock, Simulator
from mini_claude.simulator.latency import NO_LATENCY, Latency
from mini_claude.simulator.summary import REALISTIC, SummaryStyle, build_summary
from mini_claude.simulator.types import (
    Reply,
    SimConversation,
    SimMessage,
    TextPart,
    ToolCall,
)

CLAUDE_ENV = "MINI_CLAUDE_BENCH_CLAUDE"  # the CLI to run; else the one the agent SDK bundles
CLAUDE_MODEL = "claude-sonnet-4-5"
# The opening of Claude Code's compaction request (its /compact and auto-compact prompt).
COMPACT_OPENING = "Your task is to create a detailed summary of the conversation so far"
TURN_TIMEOUT_SECONDS = 900.0
# Its notice for a tool result it saved to a file, and its refusal of a file too big to read.
PERSISTED = re.compile(r"Output too large \((?P<number>[\d.]+)\s?(?P<unit>[KMG]?B)\)\. Full output "
                       r"saved to: "
                       r"(?P<path>\S+)")
TOO_BIG_TO_READ = re.compile(r"File content \([^)]*\) exceeds maximum allowed")


def bundled_claude() -> Path | None:
    """The CLI named by the environment, or the binary the installed agent SDK ships."""
    named = os.environ.get(CLAUDE_ENV)
    if named:
        return Path(named)
    try:
        import claude_agent_sdk  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    binary = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return binary if binary.exists() else None


def to_claude(call: Call, project: Path) -> ToolCall:
    """Our scripted call as Claude Code's model would make it (this CLI offers no Grep or
    Glob tool: it says to search and list with Bash)."""
    args = call.input

    def where(path: object) -> str:
        text = str(path)
        return text if text.startswith("/") else str(project / text)

    if call.name == "read_file":
        extra = {k: args[k] for k in ("offset", "limit") if k in args}
        return ToolCall("Read", {"file_path": where(args["path"]), **extra})
    if call.name == "edit_file":
        return ToolCall("Edit", {"file_path": where(args["path"]), "old_string": args["old"],
                                 "new_string": args["new"]})
    if call.name == "run_shell":
        return ToolCall("Bash", {"command": str(args["command"])})
    if call.name == "grep_search":
        target = shlex.quote(str(args.get("path") or "."))
        return ToolCall("Bash", {"command": f"grep -rn {shlex.quote(str(args['pattern']))} "
                                            f"{target}"})
    if call.name == "list_files":
        target = shlex.quote(str(args.get("path") or "."))
        return ToolCall("Bash", {"command": f"find {target} -not -path '*/.*' | sort"})
    raise ValueError(f"no Claude Code tool for {call.name}")


def file_lines(path: Path) -> int:
    try:
        with path.open("rb") as handle:
            return sum(1 for _ in handle)
    except OSError:
        return 0


def result_in_our_words(content: str, use: Call, project: Path) -> str:
    """A result as our pager reads results: a saved output names its file and lines, and a
    file too big to read at once asks to be read in pages."""
    saved = PERSISTED.search(content)
    if saved is not None:
        lines = file_lines(Path(saved.group("path")))
        size = f"{saved.group('number')} {saved.group('unit')}"
        return f"{content}\n{saved_notice(saved.group('path'), size, lines)}"
    if use.name == "read_file" and TOO_BIG_TO_READ.search(content):
        path = str(use.input["path"])
        lines = file_lines(Path(path) if path.startswith("/") else project / path)
        return f"{content}\n{read_on_notice(0, lines)}"
    return content


class ClaudeCodePolicy(TranslatingPolicy):
    """The scripted model, speaking Claude Code's tools; it also writes the CLI's summaries."""

    def is_summary_request(self, conv: SimConversation) -> bool:
        """The CLI's compaction request: the server records (and holds) it as a summary."""
        return COMPACT_OPENING in (conv.messages[-1].text if conv.messages else "")

    def summary_reply(self, conv: SimConversation) -> Reply:
        # the model reads the CLI's calls as the calls they stand for, as it does when it
        # answers them
        summary_request = as_summary_request(self.in_our_words(conv))
        return Reply(build_summary(summary_request, self.counter, self.style))

    def to_theirs(self, call: Call) -> ToolCall:
        return to_claude(call, self.project)

    def result_in_our_words(self, content: str, call: Call) -> str:
        return result_in_our_words(content, call, self.project)


def as_summary_request(conv: SimConversation) -> SimConversation:
    """The CLI's compaction request, headed as the simulated summarizer recognises one: it then
    follows the request's own words, as for every other row."""
    last = conv.messages[-1]
    heading = SimMessage("user", [TextPart(f"{SUMMARY_HEADING}\n\n{last.text}")])
    return replace(conv, messages=[*conv.messages[:-1], heading])


@dataclass
class CliRun:
    """What one CLI process reported: its turns' result lines and its stderr."""

    results: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0


def cli_environment(base_url: str, home: Path, auto_compact_window: int | None) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "IS_SANDBOX": "1",  # bypassPermissions as root
        "DISABLE_AUTOUPDATER": "1",
        # Thinking off, as in every other row (the scripted model does not reason). With it on,
        # the history the CLI sent after a compaction kept a tool call without the thinking
        # block before it, which the API's thinking rule (and so the simulator) refuses.
        "MAX_THINKING_TOKENS": "0",
    }
    if auto_compact_window is not None:
        env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = str(auto_compact_window)
    return env


def _lines_of(stdout: IO[str]) -> queue.Queue[str | None]:
    """The CLI's output lines, read by a thread of their own (None at the end)."""
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _read_until_result(lines: queue.Queue[str | None], deadline: float) -> dict[str, Any] | None:
    """Lines of the CLI's stream-json output up to the turn's ``result``."""
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            return None
        if line is None:
            return None
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("type") == "result":
            return event
    return None


def play_cli(binary: Path, script: Script, policy: ClaudeCodePolicy, sim: Simulator,
             project: Path, home: Path, auto_compact_window: int | None) -> tuple[CliRun,
                                                                                   list[int]]:
    """Every turn of the script, one user message at a time, into one CLI process."""
    run = CliRun()
    turn_starts: list[int] = []
    started = time.perf_counter()
    command = [str(binary), "-p", "--input-format", "stream-json", "--output-format",
               "stream-json", "--verbose", "--permission-mode", BYPASS_MODE,
               "--model", CLAUDE_MODEL, "--session-id", str(uuid.uuid4())]
    env = cli_environment(sim.anthropic_base_url, home, auto_compact_window)
    errors = home / "cli-stderr.txt"  # a file, not a pipe nobody reads while turns run
    with errors.open("w", encoding="utf-8") as stderr, subprocess.Popen(
            command, cwd=project, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=stderr, text=True, bufsize=1) as process:
        assert process.stdin is not None and process.stdout is not None
        lines = _lines_of(process.stdout)
        try:
            for index, turn in enumerate(script.turns):
                sim.clock.advance(turn.idle_before)
                policy.begin_turn(index)
                turn_starts.append(len(sim.requests))
                message = {"type": "user", "message": {"role": "user", "content": turn.user}}
                process.stdin.write(json.dumps(message) + "\n")
                process.stdin.flush()
                result = _read_until_result(lines, time.monotonic() + TURN_TIMEOUT_SECONDS)
                if result is None:
                    run.errors.append(f"turn {index}: no result from the CLI")
                    break
                run.results.append(result)
                if result.get("is_error"):
                    run.errors.append(f"turn {index}: {str(result.get('result'))[:300]}")
        finally:
            process.stdin.close()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
    tail = errors.read_text(encoding="utf-8", errors="replace")[-2_000:].strip()
    if tail:
        run.errors.append(tail)
    run.seconds = time.perf_counter() - started
    return run, turn_starts


def compactions_of(records: list[RecordedRequest]) -> list[CompactionMark]:
    """Each summary request, with the prompt it summarized and the next request's size."""
    marks = []
    for index, record in enumerate(records):
        if not record.is_summary_request:
            continue
        after = next((r.prompt_tokens for r in records[index + 1:]
                      if r.status == 200 and not r.is_side_request), 0)
        marks.append(CompactionMark(index, "auto", record.prompt_tokens, after))
    return marks


def run_real_claude(binary: Path, script: Script, *, window: int, template: Path,
                    workdir: Path, auto_compact_window: int | None,
                    summary_style: SummaryStyle = REALISTIC,
                    title: str = "Claude Code (real CLI)",
                    latency: Latency = NO_LATENCY) -> RunResult:
    """One row: the real CLI through the whole script at ``window``, against a server that
    answers as late as ``latency`` says (its compactions are side requests)."""
    started = time.perf_counter()
    project, home = fresh_workdir(workdir, template)
    clock = SimClock(start=CLOCK_START)
    with Simulator(None, context_window=window, clock=clock,
                   summary_style=summary_style, latency=latency) as sim:
        policy = ClaudeCodePolicy(script, project, clock, sim.counter, summary_style)
        sim.policy = policy
        cli, turn_starts = play_cli(binary, script, policy, sim, project, home,
                                    auto_compact_window)
        records = list(sim.requests)
    return score_cli_run(RunResult(REAL_CLAUDE, title, False, window, window), script,
                         records, turn_starts, policy, cli.errors, started)


def score_cli_run(result: RunResult, script: Script, records: list[RecordedRequest],
                  turn_starts: list[int], policy: TranslatingPolicy, errors: list[str],
                  started: float) -> RunResult:
    """A real CLI's run scored from the server's records, by the rules every row is scored by;
    ``started`` is when the run began (``time.perf_counter``)."""
    inner = policy.inner
    result.tool_calls = policy.tool_calls
    result.wall_seconds = time.perf_counter() - started
    result.requests = _join(records, [], turn_starts)
    result.compactions = compactions_of(records)
    checks = _check_needs(script, records, turn_starts)
    checks = _check_recoveries(checks, inner, script, records, turn_starts)
    result.needs = explain_losses(checks, records, result.requests, script)
    result.recovery = recovery_cost(inner, records, result.requests)
    result.pages_read = inner.pages_read
    result.turn_errors = [(0, "cli", e) for e in errors]
    return result


REAL_CLAUDE = "claude-code-real"
# 200K: the CLI as installed; 100K: CLAUDE_CODE_AUTO_COMPACT_WINDOW at its floor, on a server
# that refuses prompts over 100K.
REAL_WINDOWS = (200_000, CLAUDE_CODE_FLOOR_WINDOW)


def real_auto_compact_window(window: int) -> int | None:
    """CLAUDE_CODE_AUTO_COMPACT_WINDOW for a window below the model's own 200K (never below
    its floor); None leaves it unset."""
    return None if window >= 200_000 else max(window, CLAUDE_CODE_FLOOR_WINDOW)
