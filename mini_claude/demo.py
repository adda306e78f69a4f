"""`mini-claude --demo`: the real REPL against the simulated model, in a generated project.

A small window makes the context pipeline visible within a few messages:
the status bar climbs, results are trimmed and cleared, an auto-compact
happens. Nothing needs a key and nothing leaves the machine; the project and
the session files live in a temporary folder that is removed on exit.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from mini_claude.exit_codes import EXIT_USAGE
from mini_claude.permissions.asking import allow_all
from mini_claude.scenario.policy import ReplyMaker, SavedOutputPager
from mini_claude.scenario.script import Call, Script, Step, Turn, build_script, without_needs
from mini_claude.scenario.workload import plan_project, write_project
from mini_claude.session.wiring import Session
from mini_claude.settings import Settings
from mini_claude.simulator import Reply, SimClock, SimConversation, Simulator, TextPart

DEMO_WINDOW = 24_000
DEMO_MODEL = "sim-sonnet"
DEMO_SEED = 11
DEMO_TURNS = 40
BREAK_EVERY = 4  # every few turns the demo pretends the user took a break
BREAK_SECONDS = 6 * 60.0
NOT_A_TERMINAL = "the demo needs a terminal (it runs the interactive REPL)"

# A bracketed first line, as in the "kept word for word" copies a compaction leaves behind.
_BRACKETED_PREFIX = re.compile(r"^\[[^\]\n]*\]\n")

KEYWORD_KINDS = (
    (("test", "suite", "lint", "fail"), "tests"),
    (("fix", "bug", "wrong", "broken"), "fix"),
    (("log", "error", "staging", "crash"), "logs"),
    (("config", "setting", "env", "deploy"), "config"),
    (("review", "risk", "check"), "review"),
    (("overview", "layout", "structure", "start"), "orient"),
)


def banner(project: Path, window: int) -> str:
    return "\n".join([
        "DEMO: the model is SIMULATED. No API key is used and nothing leaves this machine.",
        f"The project is a generated sample in {project}; tools run there without asking.",
        f"The window is only {window // 1000}K tokens: within a few messages the status bar "
        "climbs,",
        "old tool results are trimmed and cleared, and the history is summarized. Every few "
        "messages",
        "the demo moves the clock 6 minutes ahead (a coffee break), so microcompact fires too.",
        'Try: "give me an overview", "run the tests", "check the logs", "fix the totals in '
        'orders.py",',
        '"review the config", then /context to see where the tokens went. Ctrl-D leaves.',
    ])


def _one_call_each(step: Step) -> list[Step]:
    return [Step(step.say if index == 0 else f"Also {_describe(call)}.", (call,))
            for index, call in enumerate(step.calls)]


def _describe(call: Call) -> str:
    target = call.input.get("pattern") or call.input.get("path") or call.input.get("command")
    verbs = {"read_file": "reading", "run_shell": "running", "grep_search": "searching for",
             "list_files": "listing"}
    return f"{verbs.get(call.name, 'using ' + call.name)} {target}"


def split_steps(turn: Turn) -> Turn:
    """One tool call per step: more requests, so the status bar moves in smaller steps."""
    steps = tuple(small for step in turn.steps for small in _one_call_each(step))
    return Turn(turn.user, steps, turn.answer, kind=turn.kind)


@dataclass
class _Current:
    user_text: str
    steps: deque[Step]
    answer: str


class DemoPolicy:
    """Turns whatever the user types into a plausible turn from the scripted session.

    There is no runner to announce turns here, so a new turn is recognised
    from the request: its last user message carries text other than the
    current turn's, or the model had already answered. A keyword in the text
    picks the kind of turn; otherwise the session's own order is followed.
    """

    def __init__(self, script: Script, clock: SimClock | None = None) -> None:
        self._turns = [split_steps(t) for t in script.turns]
        self._next = 0
        self._used: set[int] = set()
        self._clock = clock
        self._lock = threading.Lock()
        self._current: _Current | None = None
        self._pager = SavedOutputPager()
        self._replies = ReplyMaker(DEMO_SEED)
        self.turns_started = 0

    def respond(self, conv: SimConversation) -> Reply:
        with self._lock:
            typed = _typed_text(conv)
            if self._current is None or self._starts_turn(conv, typed):
                self._start(typed)
            current = self._current
            assert current is not None
            paging = self._pager.step(conv)
            if paging is not None:
                current.steps.extendleft(reversed(_one_call_each(paging)))
            if current.steps:
                return self._replies.reply(current.steps.popleft())
            return Reply(self._finish(current))

    def _starts_turn(self, conv: SimConversation, typed: str) -> bool:
        current = self._current
        if current is None or not conv.messages or not conv.messages[-1].is_plain_user_message:
            return False
        if not typed.endswith(current.user_text):
            return True
        before = conv.messages[-2] if len(conv.messages) > 1 else None
        return before is not None and before.role == "assistant" and not before.tool_uses

    def _start(self, typed: str) -> None:
        turn = self._pick(typed)
        self.turns_started += 1
        self._current = _Current(typed, deque(turn.steps), turn.answer)

    def _pick(self, typed: str) -> Turn:
        """The next unused turn of the kind the words ask for, else the next one in order."""
        lowered = typed.lower()
        kind = next((k for words, k in KEYWORD_KINDS if any(w in lowered for w in words)), None)
        count = len(self._turns)
        order = [(self._next + offset) % count for offset in range(count)]
        matching = [i for i in order if kind is not None and self._turns[i].kind == kind]
        fresh = [i for i in matching if i not in self._used]
        index = (fresh or matching or [i for i in order if i not in self._used] or order)[0]
        self._used.add(index)
        if not matching:
            self._next = (index + 1) % count
        return self._turns[index]

    def _finish(self, current: _Current) -> str:
        answer = current.answer
        if self._clock is not None and self.turns_started % BREAK_EVERY == 0:
            self._clock.advance(BREAK_SECONDS)
            answer += ("\n\n(demo: the clock jumps 6 minutes ahead, as if you took a break. The "
                       "prompt cache has expired, so before the next request microcompact "
                       "clears old tool results.)")
        current.answer = "Done; see above."
        return answer


def _typed_text(conv: SimConversation) -> str:
    """What the user typed last, without the bracketed note a compaction puts before it."""
    for message in reversed(conv.messages):
        if message.is_plain_user_message:
            texts = [b.text for b in message.blocks if isinstance(b, TextPart) and b.text.strip()]
            if texts:
                return _BRACKETED_PREFIX.sub("", texts[-1]).strip()
    return ""


@dataclass
class DemoEnvironment:
    simulator: Simulator
    session: Session
    policy: DemoPolicy
    project: Path
    window: int


def demo_settings(base_url: str, home: Path, window: int) -> Settings:
    return Settings(provider="anthropic", model=DEMO_MODEL, api_keys={"anthropic": "demo"},
                    base_urls={"anthropic": base_url}, context_window=window, home=home)


@contextmanager
def demo_environment(folder: Path, *, window: int = DEMO_WINDOW) -> Iterator[DemoEnvironment]:
    """A generated project, a running simulator and a ready session, all under ``folder``."""
    plan = plan_project(DEMO_SEED)
    project = folder / "shopfloor"
    write_project(plan, project)
    script = without_needs(build_script(plan, turns=DEMO_TURNS))
    clock = SimClock()
    policy = DemoPolicy(script, clock)
    with Simulator(policy, context_window=window, clock=clock) as sim:
        settings = demo_settings(sim.anthropic_base_url, folder / "home", window)
        session = Session.open(settings, project, allow_all, clock=clock.now)
        session.start_new()
        yield DemoEnvironment(sim, session, policy, project, window)


def run_demo(args: argparse.Namespace) -> int:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print(f"mini-claude: {NOT_A_TERMINAL}", file=sys.stderr)
        return EXIT_USAGE
    from mini_claude.ui.repl import run_session_repl

    with tempfile.TemporaryDirectory(prefix="mini-claude-demo-") as folder:
        with demo_environment(Path(folder)) as demo:
            code = asyncio.run(run_session_repl(demo.session, resumable=False,
                                                banner=banner(demo.project, demo.window)))
        print("mini-claude: the demo folder and its session files were removed.")
        return code
