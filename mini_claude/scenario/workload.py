"""The benchmark's project folder: sources, configs, logs and scripts, with planted facts.

:func:`plan_project` decides everything from a seed (names, sizes, where each
fact lives); :func:`write_project` puts it on disk. The session script reads
the plan, so it knows which call reveals which fact without reading files.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from mini_claude.scenario import codegen

PACKAGE = "shopfloor"
MODULE_NAMES = (
    "models", "storage", "api", "cache", "pricing", "orders", "shipping", "auth", "reports",
    "scheduler", "events", "metrics", "utils", "validators", "cli", "db", "migrations",
    "notifications", "search", "export", "inventory", "billing", "tax", "routing",
)
HOT_MODULES = ("orders", "pricing", "cache", "api", "billing", "scheduler")
FACT_KEYS = (
    "retry-limit", "cache-ttl", "max-batch", "pool-size", "lock-timeout", "owner", "region",
    "rate-limit", "shard-count", "grace-period", "queue-depth", "flag", "sla", "version-pin",
    "backoff", "window", "budget", "threshold", "replicas", "port", "cutoff", "quota",
)
TEST_COMMAND = "bash scripts/run_tests.sh"
LAST_FAILED_COMMAND = "bash scripts/run_tests.sh --last-failed"
LINT_COMMAND = "bash scripts/lint.sh"
ENV_COMMAND = "bash scripts/env_report.sh"
WORKER_TAIL_COMMAND = "tail -n 200 logs/worker.log"
LOG_KEYWORD = "deadlock"
WORKER_TAIL_LINES = 200
LOGS = {"logs/app.log": 120_000, "logs/worker.log": 160_000, "logs/access.log": 100_000}
CONFIGS = ("config/settings.yaml", "config/deploy.toml", "config/logging.json")


@dataclass(frozen=True, slots=True)
class Fact:
    """A line the session will need again later; ``where`` is how the user refers to it."""

    id: str
    value: str
    where: str

    @property
    def line(self) -> str:
        return f"FACT-{self.id}: {self.value}"

    def seen_in(self, text: str) -> bool:
        """Its id with its value: as planted (``FACT-X: v``) or restated (``FACT-X was v``).

        A summary or an answer that repeats the value in its own words still
        holds the fact; the id alone (the user's question) does not.
        """
        if f"FACT-{self.id}" not in text:
            return False
        pattern = rf"FACT-{re.escape(self.id)}(?::\s*|\s+was\s+){re.escape(self.value)}\b"
        return re.search(pattern, text) is not None


@dataclass
class ProjectPlan:
    """Everything about the project that the script needs, decided from the seed."""

    seed: int
    module_lines: dict[str, int]
    output_scale: float = 1.0  # how large tool outputs run: module and log sizes scale with it
    module_facts: dict[str, Fact] = field(default_factory=dict)
    config_facts: dict[str, Fact] = field(default_factory=dict)
    command_facts: dict[str, Fact] = field(default_factory=dict)
    keyword_facts: list[Fact] = field(default_factory=list)  # revealed by a search for LOG_KEYWORD
    anchors: dict[str, list[str]] = field(default_factory=dict)  # module -> editable lines

    @property
    def facts(self) -> dict[str, Fact]:
        every = [*self.module_facts.values(), *self.config_facts.values(),
                 *self.command_facts.values(), *self.keyword_facts]
        return {f.id: f for f in every}

    @property
    def cold_modules(self) -> list[str]:
        return [m for m in self.module_lines if m not in HOT_MODULES]

    @staticmethod
    def module_path(module: str) -> str:
        return f"src/{PACKAGE}/{module}.py"

    @staticmethod
    def test_path(module: str) -> str:
        return f"tests/test_{module}.py"


def _module_size(rng: random.Random) -> int:
    """Most modules are short; a few are long, as in real projects."""
    roll = rng.random()
    if roll < 0.55:
        return rng.randint(50, 250)
    if roll < 0.88:
        return rng.randint(250, 500)
    return rng.randint(500, 800)


class _FactMaker:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.keys = list(FACT_KEYS)
        rng.shuffle(self.keys)

    def make(self, fact_id: str, where: str) -> Fact:
        key = self.keys.pop() if self.keys else f"setting-{fact_id.lower()}"
        value = f"{key}={self.rng.randint(2, 9_999)}"
        return Fact(fact_id, value, where)


def plan_project(seed: int, output_scale: float = 1.0) -> ProjectPlan:
    """The project of ``seed``; ``output_scale`` makes its modules and logs (so the tool
    outputs that show them) smaller or larger than usual."""
    rng = random.Random(seed)
    sizes = {name: _module_size(rng) for name in MODULE_NAMES}
    sizes["orders"] = max(sizes["orders"], 720)  # the one big module everybody has
    if output_scale != 1.0:
        sizes = {name: max(60, round(lines * output_scale)) for name, lines in sizes.items()}
    plan = ProjectPlan(seed=seed, module_lines=sizes, output_scale=output_scale)
    facts = _FactMaker(rng)
    cold = plan.cold_modules
    for index, module in enumerate(rng.sample(cold, k=min(12, len(cold)))):
        plan.module_facts[module] = facts.make(f"M{index + 1:02d}", plan.module_path(module))
    for index, path in enumerate(CONFIGS):
        plan.config_facts[path] = facts.make(f"C{index + 1}", path)
    plan.command_facts[TEST_COMMAND] = facts.make("T1", "the test run's summary")
    plan.command_facts[LINT_COMMAND] = facts.make("S1", "the lint report")
    plan.command_facts[ENV_COMMAND] = facts.make("S2", "the environment report")
    plan.command_facts[WORKER_TAIL_COMMAND] = facts.make("L1", "the end of logs/worker.log")
    plan.keyword_facts = [facts.make(f"L{n}", f"the {LOG_KEYWORD} lines in logs/app.log")
                          for n in (2, 3)]
    for module in HOT_MODULES:
        plan.anchors[module] = [f"# review-note-{module}-{n}: pending" for n in range(1, 5)]
    return plan


# ---- writing the folder -------------------------------------------------------------------


def write_project(plan: ProjectPlan, root: Path) -> None:
    """Create the project under ``root``; the same plan always gives the same bytes."""
    rng = random.Random(plan.seed * 7_919 + 1)
    root.mkdir(parents=True, exist_ok=True)
    _write(root / "README.md", _readme())
    _write(root / "pyproject.toml", _pyproject())
    _write(root / f"src/{PACKAGE}/__init__.py", f'"""The {PACKAGE} service."""\n')
    for module, lines in plan.module_lines.items():
        extra = list(plan.anchors.get(module, ()))
        if module in plan.module_facts:
            extra.append(f"# {plan.module_facts[module].line}")
        text = codegen.python_module(rng, PACKAGE, module, lines, extra)
        _write(root / plan.module_path(module), text)
        _write(root / plan.test_path(module),
               codegen.test_module(rng, PACKAGE, module, rng.randint(4, 14)))
    _write_configs(plan, root)
    _write_logs(plan, rng, root)
    _write_scripts(plan, rng, root)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _readme() -> str:
    return (f"# {PACKAGE}\n\nOrder, pricing and shipping service.\n\n"
            "## Development\n\n- `bash scripts/run_tests.sh` runs the suite\n"
            "- `bash scripts/lint.sh` runs the linters\n"
            "- logs of the staging run are under `logs/`\n")


def _pyproject() -> str:
    return (f'[project]\nname = "{PACKAGE}"\nversion = "2.4.1"\nrequires-python = ">=3.11"\n'
            'dependencies = ["sqlalchemy>=2", "httpx>=0.27", "pydantic>=2"]\n\n'
            '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')


def _write_configs(plan: ProjectPlan, root: Path) -> None:
    facts = plan.config_facts
    settings = ["service:", f"  name: {PACKAGE}", "  workers: 8", "database:",
                "  url: postgresql://db.internal/shop", "  pool: 12",
                f"# {facts['config/settings.yaml'].line}", "cache:", "  backend: redis",
                "  ttl_seconds: 300", "features:", "  split_shipments: true",
                "  new_pricing: false"]
    _write(root / "config/settings.yaml", "\n".join(settings) + "\n")
    deploy = ["[deploy]", 'region = "eu-west-1"', "replicas = 4",
              f"# {facts['config/deploy.toml'].line}", "", "[deploy.healthcheck]",
              'path = "/healthz"', "interval_seconds = 15"]
    _write(root / "config/deploy.toml", "\n".join(deploy) + "\n")
    logging_config = {"version": 1, "root": {"level": "INFO", "handlers": ["console"]},
                      "handlers": {"console": {"class": "logging.StreamHandler"}},
                      "_note": facts["config/logging.json"].line}
    _write(root / "config/logging.json", json.dumps(logging_config, indent=2) + "\n")


def _write_logs(plan: ProjectPlan, rng: random.Random, root: Path) -> None:
    for path, size in LOGS.items():
        size = round(size * plan.output_scale)
        lines = codegen.log_lines(rng, path.split("/")[1].removesuffix(".log"), size)
        if path == "logs/worker.log":
            fact = plan.command_facts[WORKER_TAIL_COMMAND]
            _plant(lines, len(lines) - WORKER_TAIL_LINES // 3, f"WARN  worker[2] {fact.line}")
        if path == "logs/app.log":
            spots = sorted(rng.sample(range(len(lines) // 10, len(lines) - 10), k=4))
            notes = [f"WARN  db[{n}] {LOG_KEYWORD} detected on table orders, retried"
                     for n in range(2)]
            notes += [f"ERROR db[3] {LOG_KEYWORD} on ledger ({f.line})" for f in plan.keyword_facts]
            for spot, note in zip(spots, notes, strict=True):
                _plant(lines, spot, note)
        _write(root / path, "\n".join(lines) + "\n")


def _plant(lines: list[str], index: int, text: str) -> None:
    stamp = lines[index].split(" ", 1)[0]
    lines[index] = f"{stamp} {text}"


def _shell_script(output: str, *, comment: str, exit_code: int, quick_tail: int = 0) -> str:
    body = ["#!/usr/bin/env bash", f"# {comment}", "report() {", "cat <<'REPORT_END'",
            output.rstrip("\n"), "REPORT_END", "}"]
    if quick_tail:
        body.append(f'if [ "$1" = "--last-failed" ]; then report | tail -n {quick_tail}; '
                    "else report; fi")
    else:
        body.append("report")
    body.append(f"exit {exit_code}")
    return "\n".join(body) + "\n"


def _write_scripts(plan: ProjectPlan, rng: random.Random, root: Path) -> None:
    facts = plan.command_facts
    tests = codegen.test_run_output(rng, PACKAGE, list(plan.module_lines), 26,
                                    [facts[TEST_COMMAND].line])
    _write(root / "scripts/run_tests.sh",
           _shell_script(tests, comment="Runs the suite and prints pytest's verbose report.",
                         exit_code=1, quick_tail=40))
    lint = codegen.lint_output(rng, PACKAGE, list(plan.module_lines), 140,
                               facts[LINT_COMMAND].line)
    _write(root / "scripts/lint.sh", _shell_script(lint, comment="Runs the linters.", exit_code=1))
    env = codegen.env_report(rng, facts[ENV_COMMAND].line)
    _write(root / "scripts/env_report.sh",
           _shell_script(env, comment="Prints the resolved environment.", exit_code=0))
