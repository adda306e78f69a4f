"""The scripted session: what the user asks each turn and which tool calls the model makes.

The script is fixed in advance from the project plan and a seed, so every
strategy faces the same requests. It records which turn reveals each planted
fact and, for a later turn, which facts that turn needs again.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mini_claude.scenario import codegen
from mini_claude.scenario.workload import (
    CONFIGS,
    ENV_COMMAND,
    HOT_MODULES,
    LAST_FAILED_COMMAND,
    LINT_COMMAND,
    LOG_KEYWORD,
    PACKAGE,
    TEST_COMMAND,
    WORKER_TAIL_COMMAND,
    Fact,
    ProjectPlan,
)

FULL_TURNS = 60
QUICK_TURNS = 8
SHORT_IDLE_SECONDS = (20.0, 90.0)
LONG_IDLE_SECONDS = (6 * 60.0, 20 * 60.0)
LONG_IDLE_EVERY = 6
MIN_NEED_DISTANCE = 3
REPEATED_NEEDS = 6
MAX_NEEDS_PER_TURN = 3


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    input: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Step:
    """One assistant message: a sentence and the tool calls it makes together."""

    say: str
    calls: tuple[Call, ...]


@dataclass(frozen=True, slots=True)
class Turn:
    user: str
    steps: tuple[Step, ...]
    answer: str
    idle_before: float = 0.0  # simulated seconds between the previous turn and this one
    reveals: tuple[str, ...] = ()  # fact ids whose text a call of this turn returns
    needs: tuple[str, ...] = ()  # fact ids that must still be in context when it starts
    kind: str = ""  # explore, fix, review, logs, tests, config, big-log, orient

    @property
    def tool_calls(self) -> int:
        return sum(len(step.calls) for step in self.steps)


@dataclass(frozen=True)
class Script:
    turns: tuple[Turn, ...]
    facts: Mapping[str, Fact]
    # For each fact, the one call that shows it again: what a model re-runs to recover it.
    recovery: Mapping[str, Call] = field(default_factory=dict)
    # For a fact whose question names where it is (a file, the end of a log, a search in a
    # log), the call that question points to: any model would make it, pointer or none.
    asked: Mapping[str, Call] = field(default_factory=dict)

    @property
    def tool_calls(self) -> int:
        return sum(turn.tool_calls for turn in self.turns)

    @property
    def needs(self) -> int:
        return sum(len(turn.needs) for turn in self.turns)

    @property
    def long_idle_turns(self) -> int:
        return sum(1 for turn in self.turns if turn.idle_before >= LONG_IDLE_SECONDS[0])


def read(path: str, **extra: int) -> Call:
    return Call("read_file", {"path": path, **extra})


def grep(pattern: str, path: str | None = None) -> Call:
    return Call("grep_search", {"pattern": pattern} if path is None else
                {"pattern": pattern, "path": path})


def listing(path: str) -> Call:
    return Call("list_files", {"path": path})


def shell(command: str) -> Call:
    return Call("run_shell", {"command": command})


def edit(path: str, old: str, new: str) -> Call:
    return Call("edit_file", {"path": path, "old": old, "new": new})


@dataclass
class _Draft:
    user: str
    kind: str = ""
    steps: list[Step] = field(default_factory=list)
    answer: str = ""
    reveals: list[str] = field(default_factory=list)


class _Planner:
    """Builds turns of each kind, walking through the project so that cold files are read once."""

    def __init__(self, plan: ProjectPlan, rng: random.Random) -> None:
        self.plan = plan
        self.rng = rng
        cold = plan.cold_modules
        rng.shuffle(cold)
        self.cold: deque[str] = deque(cold)
        self.anchors = {m: deque(lines) for m, lines in plan.anchors.items()}
        self.test_files = deque(rng.sample(list(plan.module_lines), k=len(plan.module_lines)))

    # ---- helpers ------------------------------------------------------------------------

    def _hot(self, count: int = 1) -> list[str]:
        return self.rng.sample(HOT_MODULES, k=count)

    def _next_cold(self) -> str | None:
        return self.cold.popleft() if self.cold else None

    def _next_test(self) -> str:
        module = self.test_files[0]
        self.test_files.rotate(-1)
        return self.plan.test_path(module)

    def _symbol(self) -> str:
        verb, noun = codegen.pick(self.rng, codegen.VERBS), codegen.pick(self.rng, codegen.NOUNS)
        return f"def {verb}_{noun}"

    def _step(self, draft: _Draft, say: str, *calls: Call) -> None:
        draft.steps.append(Step(say, tuple(calls)))
        for call in calls:
            draft.reveals.extend(self._revealed_by(call))

    def _revealed_by(self, call: Call) -> Iterator[str]:
        plan = self.plan
        if call.name == "read_file" and "offset" not in call.input:
            path = str(call.input["path"])
            for module, fact in plan.module_facts.items():
                if plan.module_path(module) == path:
                    yield fact.id
            if path in plan.config_facts:
                yield plan.config_facts[path].id
        elif call.name == "run_shell":
            command = str(call.input["command"])
            if command in plan.command_facts:
                yield plan.command_facts[command].id
            if command == LAST_FAILED_COMMAND:
                yield plan.command_facts[TEST_COMMAND].id
        elif call.name == "grep_search" and call.input.get("pattern") == LOG_KEYWORD:
            yield from (fact.id for fact in plan.keyword_facts)

    def _answer(self, *topics: str) -> str:
        rng = self.rng
        lead = codegen.pick(rng, ("Here is what I found.", "Summary of what I checked.",
                                  "Done; the details are below."))
        body = [f"- `{topic}`: the {codegen.pick(rng, codegen.NOUNS)} records are handled here "
                f"{codegen.pick(rng, codegen.PHRASES)}; `{codegen.pick(rng, codegen.ATTRIBUTES)}` "
                "is checked explicitly."
                for topic in topics]
        tail = codegen.pick(rng, ("Nothing else looks risky.", "I would add a test for the edge "
                                  "case next.", "Tell me if you want me to go further."))
        return "\n".join([lead, *body, tail])

    # ---- turn kinds ---------------------------------------------------------------------

    def orient(self) -> _Draft:
        draft = _Draft("I just cloned this repository. Give me an overview of the layout and how "
                       "to run the tests.")
        self._step(draft, "Let me look at the layout first.", listing("."), read("README.md"))
        self._step(draft, "Now the package and the project file.",
                   listing(f"src/{PACKAGE}"), read("pyproject.toml"))
        draft.answer = self._answer("README.md", "pyproject.toml", f"src/{PACKAGE}")
        return draft

    def explore(self) -> _Draft:
        modules = [m for m in (self._next_cold(), self._next_cold()) if m]
        others = [m for m in self._hot(3) if m not in modules]
        hot = others[0]
        modules = modules or others[1:3]
        names = " and ".join(f"{m}.py" for m in modules)
        draft = _Draft(f"How do {names} work, and how do they connect to {hot}.py?")
        self._step(draft, "Let me find where these are used.",
                   grep(f"from .* import ({'|'.join(modules)})"))
        self._step(draft, "Reading the modules.",
                   *(read(self.plan.module_path(m)) for m in modules), read(self._next_test()))
        self._step(draft, f"And how {hot}.py calls into them.", read(self.plan.module_path(hot)),
                   grep(self._symbol(), f"src/{PACKAGE}"))
        draft.answer = self._answer(*(self.plan.module_path(m) for m in [*modules, hot]))
        return draft

    def fix(self) -> _Draft:
        module = self._hot()[0]
        path = self.plan.module_path(module)
        draft = _Draft(f"Totals computed in {module}.py are wrong for split batches. Find the "
                       "cause, fix it, and run the tests.")
        self._step(draft, "Searching for the computation.",
                   grep(self._symbol(), f"src/{PACKAGE}"))
        self._step(draft, f"Reading {path}.", read(path))
        self._step(draft, "Running the tests to see the failure.", shell(TEST_COMMAND))
        anchors = self.anchors[module]
        if anchors:
            old = anchors.popleft()
            self._step(draft, "Applying the fix.", edit(path, old, old.replace("pending", "done")))
        self._step(draft, "Re-running the failed tests.", shell(LAST_FAILED_COMMAND),
                   read(self._next_test()))
        draft.answer = self._answer(path, "tests")
        return draft

    def logs(self, first_time: bool) -> _Draft:
        draft = _Draft("Staging had errors last night. Check the logs and tell me what went wrong.")
        if first_time:
            self._step(draft, "Looking for errors in the logs.", grep(LOG_KEYWORD, "logs"))
            self._step(draft, "And the end of the worker log.", shell(WORKER_TAIL_COMMAND))
        else:
            self._step(draft, "Counting errors first.", shell("grep -c ERROR logs/app.log"),
                       shell("tail -n 80 logs/access.log"))
            self._step(draft, "Looking at recent errors.", grep("ERROR .* failed", "logs/app.log"))
        module = self._hot()[0]
        self._step(draft, f"Checking the code path in {module}.py.",
                   read(self.plan.module_path(module)))
        draft.answer = self._answer("logs/app.log", "logs/worker.log", module)
        return draft

    def review(self) -> _Draft:
        first, second, third = self._hot(3)
        draft = _Draft(f"Review {first}.py and {second}.py again: anything risky before the "
                       "release?")
        self._step(draft, "Re-reading both modules.", read(self.plan.module_path(first)),
                   read(self.plan.module_path(second)))
        self._step(draft, f"{third}.py shares the state, checking it too.",
                   read(self.plan.module_path(third)), grep("TODO|FIXME|XXX"))
        self._step(draft, "And the tests that cover them.", listing("tests"))
        draft.answer = self._answer(first, second, third)
        return draft

    def config(self) -> _Draft:
        draft = _Draft("Check the config files and the environment: are the staging settings "
                       "sane?")
        self._step(draft, "Listing the config folder.", listing("config"))
        self._step(draft, "Reading the configs.", *(read(path) for path in CONFIGS))
        self._step(draft, "And the resolved environment.", shell(ENV_COMMAND))
        draft.answer = self._answer(*CONFIGS)
        return draft

    def tests(self, with_lint: bool) -> _Draft:
        draft = _Draft("Run the whole suite" + (" and the linters" if with_lint else "") +
                       ", then summarise what fails and why.")
        self._step(draft, "Running the suite.", shell(TEST_COMMAND))
        self._step(draft, "Reading the failing tests.", read(self._next_test()),
                   read(self._next_test()))
        if with_lint:
            self._step(draft, "Now the linters.", shell(LINT_COMMAND))
        module = self._hot()[0]
        self._step(draft, f"The failures point at {module}.py.",
                   read(self.plan.module_path(module)))
        draft.answer = self._answer("tests", module)
        return draft

    def big_log(self) -> _Draft:
        draft = _Draft("Skim logs/app.log end to end and give me the error rate per hour.")
        self._step(draft, "Reading the whole log.", read("logs/app.log"))
        self._step(draft, "Cross-checking the sizes.", shell("wc -l logs/*.log"),
                   grep("ERROR", "logs/worker.log"))
        draft.answer = self._answer("logs/app.log")
        return draft


def _kinds(count: int) -> list[str]:
    """Turn kinds in order: mostly exploring, fixing and reviewing, with one-off chores."""
    one_off = {1: "explore", 3: "config", 5: "logs-first", 8: "tests-lint", 14: "big-log",
               40: "big-log"}
    cycle = ["explore", "fix", "review", "explore", "logs", "fix", "tests", "explore", "review"]
    kinds = ["orient"]
    position = 0
    while len(kinds) < count:
        kind = one_off.get(len(kinds))
        if kind is None:
            kind = cycle[position % len(cycle)]
            position += 1
        kinds.append(kind)
    return kinds


def _draft_for(planner: _Planner, kind: str) -> _Draft:
    draft = _make_draft(planner, kind)
    draft.kind = kind.removesuffix("-first").removesuffix("-lint")
    return draft


def _make_draft(planner: _Planner, kind: str) -> _Draft:
    if kind == "orient":
        return planner.orient()
    if kind == "explore":
        return planner.explore()
    if kind == "fix":
        return planner.fix()
    if kind in ("logs", "logs-first"):
        return planner.logs(first_time=kind == "logs-first")
    if kind == "review":
        return planner.review()
    if kind == "config":
        return planner.config()
    if kind in ("tests", "tests-lint"):
        return planner.tests(with_lint=kind == "tests-lint")
    return planner.big_log()


def _idle_before(index: int, rng: random.Random, long_idle_every: int) -> float:
    """Seconds before turn ``index``: short gaps (the prompt cache still warm), and every
    ``long_idle_every`` turns a gap longer than the cache's 5-minute life (0: never)."""
    if index == 0:
        return 0.0
    if long_idle_every and index % long_idle_every == 0:
        return round(rng.uniform(*LONG_IDLE_SECONDS))
    return round(rng.uniform(*SHORT_IDLE_SECONDS))


def _schedule_needs(drafts: list[_Draft], rng: random.Random, facts: Mapping[str, Fact],
                    min_distance: int) -> dict[int, list[str]]:
    """For each fact, a later turn that needs it, far enough from its latest reveal."""
    reveals: dict[str, list[int]] = {}
    for index, draft in enumerate(drafts):
        for fact_id in draft.reveals:
            reveals.setdefault(fact_id, []).append(index)
    needs: dict[int, list[str]] = {}
    ordered = [f for f in facts if f in reveals]
    repeated = rng.sample(ordered, k=min(REPEATED_NEEDS, len(ordered)))
    full: set[int] = set()
    for fact_id in [*ordered, *repeated]:
        taken = full | {t for t, ids in needs.items() if fact_id in ids}
        turn = _need_turn(reveals[fact_id], len(drafts), rng, min_distance, taken)
        if turn is not None:
            needs.setdefault(turn, []).append(fact_id)
            if len(needs[turn]) >= MAX_NEEDS_PER_TURN:
                full.add(turn)
    return needs


def _need_turn(seen_at: list[int], turns: int, rng: random.Random, min_distance: int,
               taken: set[int]) -> int | None:
    """A turn at least ``min_distance`` after the latest reveal before it, or None."""
    candidates = []
    for turn in range(turns):
        earlier = [s for s in seen_at if s < turn]
        if earlier and turn - max(earlier) >= min_distance and turn not in taken:
            candidates.append(turn)
    return rng.choice(candidates) if candidates else None


def _with_needs(draft: _Draft, fact_ids: list[str], facts: Mapping[str, Fact]) -> tuple[str, str]:
    asks = " ".join(f"Also, what exactly did FACT-{f} in {facts[f].where} say?" for f in fact_ids)
    answers = "\n".join(f"- FACT-{f} was {facts[f].value}." for f in fact_ids)
    return f"{draft.user} {asks}", f"{draft.answer}\n{answers}"


def build_script(plan: ProjectPlan, *, turns: int = FULL_TURNS, seed: int | None = None,
                 long_idle_every: int = LONG_IDLE_EVERY) -> Script:
    """The session for ``plan``: ``turns`` user requests with their tool calls and needs."""
    rng = random.Random(plan.seed if seed is None else seed)
    planner = _Planner(plan, rng)
    drafts = [_draft_for(planner, kind) for kind in _kinds(turns)]
    min_distance = MIN_NEED_DISTANCE if turns >= FULL_TURNS else 2
    needs = _schedule_needs(drafts, rng, plan.facts, min_distance)
    built: list[Turn] = []
    for index, draft in enumerate(drafts):
        wanted = needs.get(index, [])
        user, answer = _with_needs(draft, wanted, plan.facts) if wanted else (draft.user,
                                                                              draft.answer)
        built.append(Turn(user, tuple(draft.steps), answer,
                          _idle_before(index, rng, long_idle_every),
                          tuple(dict.fromkeys(draft.reveals)), tuple(wanted), draft.kind))
    return Script(tuple(built), plan.facts, recovery_calls(plan), question_calls(plan))


def recovery_calls(plan: ProjectPlan) -> dict[str, Call]:
    """The call that shows each fact again, keyed by fact id.

    Its main argument (a path, a command, a search pattern) is the pointer a
    model must still see somewhere in its context to think of making it.
    """
    calls: dict[str, Call] = {}
    for module, fact in plan.module_facts.items():
        calls[fact.id] = read(plan.module_path(module))
    for path, fact in plan.config_facts.items():
        calls[fact.id] = read(path)
    for command, fact in plan.command_facts.items():
        calls[fact.id] = shell(command)
    for fact in plan.keyword_facts:
        calls[fact.id] = grep(LOG_KEYWORD, "logs")
    return calls


def question_calls(plan: ProjectPlan) -> dict[str, Call]:
    """The call a question about each fact points to by itself, keyed by fact id.

    A question names where the fact is (``Fact.where``): a module's or a config's
    path is read again, "the end of logs/worker.log" is its tail, "the deadlock
    lines in logs/app.log" a search of that log. A question that only names a
    report ("the lint report") points to no call: its command must still be in
    the context.
    """
    calls: dict[str, Call] = {}
    for module, fact in plan.module_facts.items():
        calls[fact.id] = read(plan.module_path(module))
    for path, fact in plan.config_facts.items():
        calls[fact.id] = read(path)
    calls[plan.command_facts[WORKER_TAIL_COMMAND].id] = shell(WORKER_TAIL_COMMAND)
    for fact in plan.keyword_facts:
        calls[fact.id] = grep(LOG_KEYWORD, "logs/app.log")
    return calls


def pointer_of(call: Call) -> str:
    """The text that, seen in context, tells a model where a fact was: path, command, pattern."""
    for key in ("path", "command", "pattern"):
        value = call.input.get(key)
        if isinstance(value, str) and value:
            return value
    return call.name


def without_needs(script: Script) -> Script:
    """The same session with no fact questions (the demo has no use for them)."""
    return replace(script, turns=tuple(replace(t, needs=()) for t in script.turns))
