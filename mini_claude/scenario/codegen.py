"""Plausible source text for the benchmark's project: Python modules, configs, logs, test output.

The content only has to look and tokenize like a real project (identifiers,
docstrings, indentation, numbers); nothing here is ever executed. Every
function takes the random generator it draws from, so one seed gives the
same bytes on every machine.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

NOUNS = (
    "order", "invoice", "customer", "product", "shipment", "warehouse", "price", "discount",
    "payment", "refund", "session", "report", "event", "metric", "schedule", "account",
    "ledger", "stock", "supplier", "coupon", "tax", "cart", "batch", "route", "quota",
)
VERBS = (
    "load", "save", "compute", "validate", "apply", "build", "parse", "render", "fetch",
    "update", "sync", "resolve", "merge", "split", "normalize", "reserve", "release",
    "notify", "retry", "export", "collect", "score", "group", "match",
)
ATTRIBUTES = (
    "id", "total", "amount", "currency", "status", "created_at", "updated_at", "owner",
    "region", "quantity", "weight", "priority", "attempts", "deadline", "label", "sku",
)
EXCEPTIONS = ("ValueError", "KeyError", "LookupError", "RuntimeError", "TimeoutError")
STDLIB = (
    "import json", "import logging", "import time", "import re", "import math",
    "from collections import defaultdict", "from dataclasses import dataclass, field",
    "from datetime import datetime, timedelta", "from decimal import Decimal",
    "from pathlib import Path", "from typing import Any, Iterable, Iterator",
    "from functools import lru_cache", "import itertools",
)
PHRASES = (
    "so that retries stay idempotent", "before the nightly export runs",
    "without touching the ledger", "for the reporting dashboard", "as the API contract requires",
    "keeping the original ordering", "while the lock is held", "in the customer's currency",
    "so partial batches can resume", "when the upstream service is slow",
)


def pick(rng: random.Random, items: Sequence[str]) -> str:
    return items[rng.randrange(len(items))]


def camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


class ModuleWriter:
    """Builds one module block by block until it reaches a target length."""

    def __init__(self, rng: random.Random, package: str, module: str) -> None:
        self.rng = rng
        self.package = package
        self.module = module
        self.lines: list[str] = []

    def write(self, target_lines: int, extra_lines: Sequence[str]) -> str:
        """A module of about ``target_lines`` lines with ``extra_lines`` placed between blocks."""
        self._header()
        blocks: list[list[str]] = []
        produced = len(self.lines)
        while produced < target_lines:
            block = self._block()
            blocks.append(block)
            produced += len(block) + 2
        slots = sorted(self.rng.sample(range(len(blocks) + 1), k=min(len(extra_lines),
                                                                        len(blocks) + 1)))
        placed = dict(zip(slots, extra_lines, strict=False))
        for index, block in enumerate(blocks):
            if index in placed:
                self.lines.extend(["", placed[index]])
            self.lines.extend(["", "", *block])
        if len(blocks) in placed:
            self.lines.extend(["", placed[len(blocks)]])
        leftovers = list(extra_lines[len(placed):])
        self.lines.extend(leftovers)
        return "\n".join(self.lines) + "\n"

    def _header(self) -> None:
        rng = self.rng
        noun = pick(rng, NOUNS)
        self.lines += [
            f'"""{camel(self.module)} handling for the {self.package} service.',
            "",
            f"Keeps the {noun} rules in one place {pick(rng, PHRASES)}.",
            '"""',
            "",
            "from __future__ import annotations",
            "",
        ]
        self.lines += sorted(rng.sample(STDLIB, k=rng.randint(3, 6)))
        self.lines += ["", f"from {self.package} import {pick(rng, NOUNS)}s, settings", ""]
        self.lines.append(f'logger = logging.getLogger("{self.package}.{self.module}")')
        for _ in range(rng.randint(2, 5)):
            name = f"{pick(rng, NOUNS).upper()}_{pick(rng, ('LIMIT', 'TIMEOUT', 'BATCH', 'TTL'))}"
            self.lines.append(f"{name} = {rng.randint(2, 900)}")

    def _block(self) -> list[str]:
        roll = self.rng.random()
        if roll < 0.55:
            return self._function(indent="")
        if roll < 0.85:
            return self._class()
        return self._dataclass()

    def _signature(self) -> tuple[str, str, list[str]]:
        rng = self.rng
        noun = pick(rng, NOUNS)
        name = f"{pick(rng, VERBS)}_{noun}"
        args = [f"{noun}s", *rng.sample(ATTRIBUTES, k=rng.randint(0, 3))]
        return name, noun, args

    def _function(self, indent: str, method: bool = False) -> list[str]:
        rng = self.rng
        name, noun, args = self._signature()
        params = ", ".join((["self"] if method else []) + [f"{a}: Any" for a in args])
        body_indent = indent + "    "
        lines = [
            f"{indent}def {name}({params}) -> dict[str, Any]:",
            f'{body_indent}"""{camel(name.split("_")[0])} the {noun}s {pick(rng, PHRASES)}."""',
        ]
        for _ in range(rng.randint(2, 6)):
            lines += self._statement(body_indent, args)
        lines.append(f"{body_indent}return result")
        return lines

    def _statement(self, indent: str, args: list[str]) -> list[str]:
        rng = self.rng
        first = args[0]
        attribute = pick(rng, ATTRIBUTES)
        other = pick(rng, ATTRIBUTES)
        choice = rng.randrange(6)
        inner = indent + "    "
        if choice == 0:
            return [
                f"{indent}if {first} is None:",
                f'{inner}raise {pick(rng, EXCEPTIONS)}("{first} is required")',
            ]
        if choice == 1:
            return [
                f"{indent}result: dict[str, Any] = defaultdict(list)",
                f"{indent}for item in {first}:",
                f"{inner}if item.{attribute} is None:",
                f"{inner}    continue",
                f"{inner}result[item.{attribute}].append(item.{other})",
            ]
        if choice == 2:
            return [
                f"{indent}started = time.monotonic()",
                f"{indent}result = {{key: value for key, value in {first}.items() if value}}",
                f'{indent}logger.debug("{attribute} pass took %.3fs", time.monotonic() - started)',
            ]
        if choice == 3:
            return [
                f"{indent}try:",
                f"{inner}result = settings.lookup({first}, key={attribute!r})",
                f"{indent}except {pick(rng, EXCEPTIONS)} as exc:",
                f'{inner}logger.warning("cannot resolve {attribute}: %s", exc)',
                f"{inner}result = {{}}",
            ]
        if choice == 4:
            limit = rng.randint(3, 500)
            return [
                f"{indent}result = {{}}",
                f"{indent}for index, item in enumerate(sorted({first}, key=lambda x: x.{other})):",
                f"{inner}if index >= {limit}:",
                f"{inner}    break",
                f"{inner}result[item.{attribute}] = round(item.{other} * {rng.random():.3f}, 2)",
            ]
        return [
            f"{indent}# {pick(rng, PHRASES).capitalize()}.",
            f"{indent}result = dict(total=sum(x.{attribute} for x in {first}), count=len({first}))",
        ]

    def _class(self) -> list[str]:
        rng = self.rng
        noun = pick(rng, NOUNS)
        name = f"{camel(noun)}{pick(rng, ('Service', 'Repository', 'Planner', 'Tracker', 'Cache'))}"
        lines = [
            f"class {name}:",
            f'    """Owns the {noun} state {pick(rng, PHRASES)}."""',
            "",
            "    def __init__(self, store: Any, *, limit: int = 100) -> None:",
            "        self.store = store",
            "        self.limit = limit",
            f"        self._{noun}s: dict[str, Any] = {{}}",
        ]
        for _ in range(rng.randint(2, 5)):
            lines.append("")
            lines += self._function(indent="    ", method=True)
        return lines

    def _dataclass(self) -> list[str]:
        rng = self.rng
        noun = pick(rng, NOUNS)
        lines = ["@dataclass(frozen=True)", f"class {camel(noun)}Record:"]
        lines.append(f'    """One {noun} as stored {pick(rng, PHRASES)}."""')
        lines.append("")
        for attribute in rng.sample(ATTRIBUTES, k=rng.randint(3, 8)):
            kind = pick(rng, ("str", "int", "float", "Decimal", "datetime | None"))
            lines.append(f"    {attribute}: {kind}")
        return lines


def python_module(
    rng: random.Random, package: str, module: str, lines: int, extra_lines: Sequence[str] = ()
) -> str:
    return ModuleWriter(rng, package, module).write(lines, extra_lines)


def test_module(rng: random.Random, package: str, module: str, tests: int) -> str:
    """A pytest file for ``module`` with ``tests`` small test functions."""
    out = [f'"""Tests for {package}.{module}."""', "", "import pytest", "",
           f"from {package} import {module}", ""]
    for index in range(tests):
        verb, noun = pick(rng, VERBS), pick(rng, NOUNS)
        out += [
            "",
            f"def test_{verb}_{noun}_{index}() -> None:",
            f"    items = [{module}.make_{noun}(id=i) for i in range({rng.randint(1, 9)})]",
            f"    result = {module}.{verb}_{noun}(items)",
            f"    assert len(result) == {rng.randint(0, 9)}",
        ]
    return "\n".join(out) + "\n"


def log_lines(rng: random.Random, service: str, target_bytes: int) -> list[str]:
    """Timestamped lines of a service log, about ``target_bytes`` in all."""
    lines: list[str] = []
    size = 0
    seconds = rng.randint(0, 3_600)
    while size < target_bytes:
        seconds += rng.randint(0, 4)
        stamp = f"2026-03-14T{seconds // 3600 % 24:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        lines.append(f"{stamp}.{rng.randrange(1000):03d}Z {_log_line(rng, service)}")
        size += len(lines[-1]) + 1
    return lines


def _log_line(rng: random.Random, service: str) -> str:
    roll = rng.random()
    worker = f"{service}[{rng.randint(1, 8)}]"
    noun = pick(rng, NOUNS)
    if roll < 0.04:
        return (f"ERROR {worker} {noun} {rng.randint(1000, 99999)} failed: "
                f"{pick(rng, EXCEPTIONS)} after {rng.randint(100, 9000)}ms")
    if roll < 0.12:
        return f"WARN  {worker} slow {pick(rng, VERBS)}_{noun} took {rng.randint(500, 4000)}ms"
    return (f"INFO  {worker} {pick(rng, VERBS)} {noun}={rng.randint(1000, 99999)} "
            f"{pick(rng, ATTRIBUTES)}={rng.randint(0, 999)} in {rng.randint(1, 300)}ms")


def test_run_output(
    rng: random.Random, package: str, modules: Sequence[str], tests_per_module: int,
    summary_lines: Sequence[str],
) -> str:
    """What a verbose pytest run prints: one line per test, warnings, then the verdict."""
    out = ["============================= test session starts ==============================",
           "platform linux -- Python 3.11.9, pytest-8.3.2, pluggy-1.5.0",
           f"rootdir: /srv/{package}", "collected many items", ""]
    total = len(modules) * tests_per_module
    done = failed = 0
    failures: list[str] = []
    for module in modules:
        for index in range(tests_per_module):
            done += 1
            name = f"tests/test_{module}.py::test_{pick(rng, VERBS)}_{pick(rng, NOUNS)}_{index}"
            verdict = "PASSED"
            if rng.random() < 0.01:
                verdict = "FAILED"
                failed += 1
                failures.append(name)
            out.append(f"{name} {verdict} [{done * 100 // total:3d}%]")
    out += ["", "=============================== warnings summary ==============================="]
    for _ in range(rng.randint(4, 9)):
        where = f"{package}/{pick(rng, modules)}.py:{rng.randint(10, 700)}"
        out.append(f"  {where}: DeprecationWarning: {pick(rng, VERBS)}_{pick(rng, NOUNS)}() "
                   "is deprecated")
    out += ["", "=========================== short test summary info ============================"]
    out += [f"FAILED {name} - AssertionError: assert {rng.randint(0, 9)} == {rng.randint(0, 9)}"
            for name in failures]
    out += list(summary_lines)
    seconds = rng.uniform(20, 80)
    verdict = f"{failed} failed, {done - failed} passed in {seconds:.2f}s"
    out.append(f"============ {verdict} ============")
    return "\n".join(out) + "\n"


def lint_output(
    rng: random.Random, package: str, modules: Sequence[str], findings: int, last_line: str
) -> str:
    """A linter's findings, one per line, then a count and ``last_line``."""
    codes = (("E501", "line too long (104 > 100)"), ("F401", "imported but unused"),
             ("B008", "do not perform function calls in argument defaults"),
             ("SIM108", "use a ternary operator instead of if-else"),
             ("UP007", "use `X | Y` for type annotations"))
    out = []
    for _ in range(findings):
        code, text = codes[rng.randrange(len(codes))]
        out.append(f"src/{package}/{pick(rng, modules)}.py:{rng.randint(1, 700)}:"
                   f"{rng.randint(1, 80)}: {code} {text}")
    out += [f"Found {findings} errors.", last_line]
    return "\n".join(out) + "\n"


def env_report(rng: random.Random, planted: str) -> str:
    """Resolved settings as ``key = value`` lines, with ``planted`` among them."""
    out = []
    for noun in NOUNS:
        out.append(f"{noun.upper()}_{pick(rng, ('LIMIT', 'TIMEOUT', 'URL', 'MODE'))} = "
                   f"{rng.randint(1, 5000)}")
    out.insert(rng.randrange(len(out)), planted)
    return "\n".join(out) + "\n"
