"""The real opencode CLI played through a scripted session against the simulator.

opencode runs as a user runs it without its TUI: ``opencode run`` once per turn,
each turn continuing the same session, with a project ``opencode.json`` that
points its Anthropic provider at the simulator and declares the model's window.
As with the real Claude Code, the scripted model is the benchmark's own; this
module only speaks opencode's tools to it (read, edit, bash, grep, glob) and
reads the CLI's results and its compaction request back in ours, so the same
script, recovery rule and summarizer decide every row. opencode asks for a
summary as a new conversation of one message that carries the history as text;
that text is read back into the messages it stands for, and the instructions
after it are the request the summarizer follows.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from mini_claude.bench.cli_policy import TranslatingPolicy, fresh_workdir
from mini_claude.bench.real_claude import CLAUDE_MODEL, file_lines, score_cli_run
from mini_claude.bench.runner import CLOCK_START, RunResult
from mini_claude.prompts import SUMMARY_HEADING
from mini_claude.scenario.policy import read_on_notice, saved_notice
from mini_claude.scenario.script import Call, Script
from mini_claude.simulator import SimClock, Simulator
from mini_claude.simulator.summary import REALISTIC, SUMMARY_TAG, SummaryStyle, build_summary
from mini_claude.simulator.types import (
    Reply,
    SimConversation,
    SimMessage,
    TextPart,
    ToolCall,
    ToolResultPart,
    ToolUsePart,
)

OPENCODE_ENV = "MINI_CLAUDE_BENCH_OPENCODE"  # the CLI to run; else one `make bench-opencode` put
OPENCODE_PACKAGE = "opencode-ai@1.18.33"
TOOLS_FOLDER = Path(".bench-tools")  # where `make bench-opencode` installs it, under the repo
REAL_OPENCODE = "opencode-real"
TURN_TIMEOUT_SECONDS = 900.0
# The opening of opencode's compaction request, and its parts.
SUMMARY_OPENING = "Here is the conversation so far:"
CONVERSATION = re.compile(r"<conversation>\n?(?P<text>.*?)\n?</conversation>", re.DOTALL)
PRIOR_SUMMARY = re.compile(r"Here is the summary of the conversation before the <conversation> "
                           r"above:\s*<prior-summary>\n?(?P<text>.*?)\n?</prior-summary>",
                           re.DOTALL)
ENTRY = re.compile(r"^\[(?P<kind>User|Assistant|Assistant reasoning|Assistant tool call|"
                   r"Tool result|Tool error|System update|Synthetic context|Shell)\]: ",
                   re.MULTILINE)
TOOL_CALL = re.compile(r"(?P<name>\w+)\((?P<input>.*)\)\s*$", re.DOTALL)
# Its notices: a read stopped at its size cap, a read stopped at its line cap, a command's
# output saved to a file.
CAPPED_READ = re.compile(r"Showing lines \d+-(?P<last>\d+)\. Use offset=\d+ to continue")
MORE_LINES = re.compile(r"read beyond line (?P<last>\d+)")
SAVED = re.compile(r"Full output saved to: (?P<path>\S+)")
# The model's limits as models.dev lists Claude Sonnet at 200K; a local model's at 32K.
OUTPUT_LIMIT_200K = 64_000
OUTPUT_LIMIT_SMALL = 8_192
SMALL_WINDOW_LIMIT = 100_000


def installed_opencode() -> Path | None:
    """The CLI named by the environment, the one `make bench-opencode` installed, or PATH's."""
    named = os.environ.get(OPENCODE_ENV)
    if named:
        return Path(named)
    repo = Path(__file__).resolve().parents[2]
    local = repo / TOOLS_FOLDER / "node_modules" / ".bin" / "opencode"
    if local.exists():
        return local
    found = shutil.which("opencode")
    return Path(found) if found else None


def opencode_version() -> str:
    """The installed CLI's own word for its version ("opencode" if it will not say)."""
    binary = installed_opencode()
    if binary is None:
        return "opencode"
    try:
        done = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                              timeout=60, check=False, env=cli_environment(Path("/tmp")))
    except (OSError, subprocess.TimeoutExpired):
        return "opencode"
    version = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    return f"opencode {version}" if version else "opencode"


def _absolute(path: object, project: Path) -> str:
    text = str(path)
    return text if text.startswith("/") else str(project / text)


def to_opencode(call: Call, project: Path) -> ToolCall:
    """Our scripted call as opencode's model would make it, with its tools and absolute paths."""
    args = call.input
    if call.name == "read_file":
        extra = {k: args[k] for k in ("offset", "limit") if k in args}
        return ToolCall("read", {"filePath": _absolute(args["path"], project), **extra})
    if call.name == "edit_file":
        return ToolCall("edit", {"filePath": _absolute(args["path"], project),
                                 "oldString": args["old"], "newString": args["new"]})
    if call.name == "write_file":
        return ToolCall("write", {"filePath": _absolute(args["path"], project),
                                  "content": args["content"]})
    if call.name == "run_shell":
        return ToolCall("bash", {"command": str(args["command"])})
    if call.name == "grep_search":
        return ToolCall("grep", {"pattern": str(args["pattern"]),
                                 "path": _absolute(args.get("path") or ".", project)})
    if call.name == "list_files":
        return ToolCall("glob", {"pattern": "**/*",
                                 "path": _absolute(args.get("path") or ".", project)})
    raise ValueError(f"no opencode tool for {call.name}")


def from_opencode(name: str, args: object, project: Path) -> Call:
    """A call of opencode's in our words, for one the scripted model did not make itself."""
    given = args if isinstance(args, dict) else {}

    def relative(key: str) -> str:
        path = str(given.get(key) or ".")
        return path.removeprefix(f"{project}/")

    if name == "read" and "filePath" in given:
        extra = {k: given[k] for k in ("offset", "limit") if k in given}
        return Call("read_file", {"path": relative("filePath"), **extra})
    if name == "edit" and "filePath" in given:
        return Call("edit_file", {"path": relative("filePath"), "old": given.get("oldString"),
                                  "new": given.get("newString")})
    if name == "bash" and "command" in given:
        return Call("run_shell", {"command": given["command"]})
    if name == "grep" and "pattern" in given:
        return Call("grep_search", {"pattern": given["pattern"], "path": relative("path")})
    return Call(name, given)


def result_in_our_words(content: str, use: Call, project: Path) -> str:
    """A result as our pager reads results: a saved output names its file and lines, and a
    whole-file read that stopped early says how far it got and how long the file is."""
    saved = SAVED.search(content)
    if saved is not None:
        path = Path(saved.group("path"))
        size = path.stat().st_size if path.exists() else 0
        return f"{content}\n{saved_notice(path, f'{size / 1024:.1f} KB', file_lines(path))}"
    stopped = CAPPED_READ.search(content) or MORE_LINES.search(content)
    if use.name == "read_file" and stopped is not None and "offset" not in use.input:
        lines = file_lines(Path(_absolute(use.input["path"], project)))
        return f"{content}\n{read_on_notice(stopped.group('last'), lines)}"
    return content


def _canonical(name: str, args: object) -> str:
    return f"{name}:{json.dumps(args, sort_keys=True)}"


class OpenCodePolicy(TranslatingPolicy):
    """The scripted model, speaking opencode's tools; it also writes the CLI's summaries."""

    OWN_REQUEST_REPLY = "Scripted session"  # its title request

    def __init__(self, script: Script, project: Path, clock: SimClock, counter: Any,
                 style: SummaryStyle = REALISTIC) -> None:
        super().__init__(script, project, clock, counter, style)
        self.by_call: dict[str, Call] = {}  # opencode's call as text -> ours

    def is_summary_request(self, conv: SimConversation) -> bool:
        """The CLI's compaction request: one message, no tools, the history as text."""
        return not conv.tool_names and conv.last_user_text.startswith(SUMMARY_OPENING)

    def summary_reply(self, conv: SimConversation) -> Reply:
        request = summary_request(conv, self.call_for)
        return Reply(build_summary(request, self.counter, self.style))

    def to_theirs(self, call: Call) -> ToolCall:
        return to_opencode(call, self.project)

    def made(self, theirs: ToolCall, ours: Call) -> None:
        self.by_call[_canonical(theirs.name, theirs.input)] = ours

    def result_in_our_words(self, content: str, call: Call) -> str:
        return result_in_our_words(content, call, self.project)

    def call_for(self, name: str, args: object) -> Call:
        """Our call an opencode call in a summary request stands for."""
        found = self.by_call.get(_canonical(name, args))
        return found if found is not None else from_opencode(name, args, self.project)


def summary_request(conv: SimConversation, call_for: Any) -> SimConversation:
    """opencode's one-message request as the history it carries, an earlier summary first,
    and its instructions last, headed as the simulated summarizer recognises a request."""
    text = conv.last_user_text
    history: list[SimMessage] = []
    prior = PRIOR_SUMMARY.search(text)
    if prior is not None:
        history.append(SimMessage("user", [TextPart(
            "This session was compacted; the summary of the earlier conversation:\n\n"
            f"<summary>\n{_unwrapped(prior.group('text'))}\n</summary>")]))
    carried = CONVERSATION.search(text)
    if carried is not None:
        history += history_of(carried.group("text"), call_for)
    instruction = text
    for part in (carried, prior):
        if part is not None:
            instruction = instruction.replace(part.group(0), "")
    instruction = instruction.replace(SUMMARY_OPENING, "", 1).strip()
    heading = SimMessage("user", [TextPart(f"{SUMMARY_HEADING}\n\n{instruction}")])
    return replace(conv, messages=[*history, heading])


def _unwrapped(summary: str) -> str:
    tagged = SUMMARY_TAG.search(summary)
    return tagged.group(1).strip() if tagged else summary.strip()


def history_of(text: str, call_for: Any) -> list[SimMessage]:
    """The serialized conversation back as messages: users' words, the assistant's words and
    calls, and each call's result in the user message after it."""
    messages: list[SimMessage] = []
    pending: list[str] = []  # ids of calls whose result has not been read yet

    def add(role: Literal["user", "assistant"], block: Any) -> None:
        if messages and messages[-1].role == role and not (
                role == "user" and isinstance(block, TextPart)):
            messages[-1].blocks.append(block)
        else:
            messages.append(SimMessage(role, [block]))

    starts = list(ENTRY.finditer(text))
    for index, match in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(text)
        body = text[match.end():end].rstrip("\n")
        kind = match.group("kind")
        if kind == "User":
            add("user", TextPart(body))
        elif kind == "Assistant":
            add("assistant", TextPart(body))
        elif kind == "Assistant tool call":
            call = _parsed_call(body, call_for)
            use_id = f"summary_{index}"
            pending.append(use_id)
            add("assistant", ToolUsePart(use_id, call.name, dict(call.input)))
        elif kind in ("Tool result", "Tool error") and pending:
            add("user", ToolResultPart(pending.pop(0), body, kind == "Tool error"))
    return messages


def _parsed_call(body: str, call_for: Any) -> Call:
    found = TOOL_CALL.match(body.strip())
    if found is None:
        return Call("unknown", {})
    try:
        args = json.loads(found.group("input"))
    except ValueError:
        args = {}
    return call_for(found.group("name"), args)  # type: ignore[no-any-return]


def output_limit(window: int) -> int:
    """The output limit the model declares: Sonnet's at 200K, a local model's below."""
    return OUTPUT_LIMIT_200K if window >= SMALL_WINDOW_LIMIT else OUTPUT_LIMIT_SMALL


def project_config(base_url: str, window: int, compaction: dict[str, Any] | None = None,
                   output: int | None = None) -> dict[str, Any]:
    """The project's opencode.json: the simulator as its Anthropic provider, the model's window,
    every tool allowed, nothing sent anywhere else."""
    model = {"name": CLAUDE_MODEL, "tool_call": True,
             "limit": {"context": window, "output": output or output_limit(window)}}
    config: dict[str, Any] = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {"anthropic": {"options": {"baseURL": f"{base_url}/v1",
                                               "apiKey": "test-key"},
                                   "models": {CLAUDE_MODEL: model}}},
        "model": f"anthropic/{CLAUDE_MODEL}",
        "small_model": f"anthropic/{CLAUDE_MODEL}",
        "autoupdate": False,
        "share": "disabled",
        "permission": {"edit": "allow", "bash": "allow", "read": "allow",
                       "external_directory": "allow"},
    }
    if compaction:
        config["compaction"] = compaction
    return config


def cli_environment(home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
    }


@dataclass
class OpencodeSession:
    """What opencode reported over the session: its session id and its errors."""

    session_id: str | None = None
    errors: list[str] = field(default_factory=list)


def _events(stdout: str) -> list[dict[str, Any]]:
    events = []
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def play_turn(binary: Path, message: str, run: OpencodeSession, project: Path, home: Path,
              index: int) -> None:
    """One turn: one ``opencode run``, continuing the session from the turn before."""
    command = [str(binary), "run", "--format", "json"]
    if run.session_id:
        command += ["--session", run.session_id]
    command += ["--", message]
    try:
        done = subprocess.run(command, cwd=project, env=cli_environment(home), text=True,
                              capture_output=True, timeout=TURN_TIMEOUT_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        run.errors.append(f"turn {index}: no answer in {TURN_TIMEOUT_SECONDS:.0f} s")
        return
    events = _events(done.stdout)
    if run.session_id is None:
        run.session_id = next((str(e["sessionID"]) for e in events if e.get("sessionID")), None)
    failed = [e for e in events if e.get("type") == "error"]
    if done.returncode != 0 or failed:
        detail = json.dumps(failed[0])[:300] if failed else done.stderr.strip()[-300:]
        run.errors.append(f"turn {index}: exit {done.returncode}: {detail}")


def run_real_opencode(binary: Path, script: Script, *, window: int, template: Path,
                      workdir: Path, summary_style: SummaryStyle = REALISTIC,
                      compaction: dict[str, Any] | None = None, output: int | None = None,
                      title: str = "opencode (real CLI)") -> RunResult:
    """One row: the real CLI through the whole script at ``window``."""
    started = time.perf_counter()
    project, home = fresh_workdir(workdir, template)
    clock = SimClock(start=CLOCK_START)
    run = OpencodeSession()
    with Simulator(None, context_window=window, clock=clock,
                   summary_style=summary_style) as sim:
        policy = OpenCodePolicy(script, project, clock, sim.counter, summary_style)
        sim.policy = policy
        config = project_config(sim.anthropic_base_url, window, compaction, output)
        (project / "opencode.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
        turn_starts: list[int] = []
        for index, turn in enumerate(script.turns):
            sim.clock.advance(turn.idle_before)
            policy.begin_turn(index)
            turn_starts.append(len(sim.requests))
            play_turn(binary, turn.user, run, project, home, index)
        records = list(sim.requests)
    return score_cli_run(RunResult(REAL_OPENCODE, title, False, window, window), script,
                         records, turn_starts, policy, run.errors, started)
