"""Notes written as additions and merged into the summary that heads the history.

The merge and the length limit alone; then the whole path over real HTTP: after a compaction
the update asks only for what is new, the reply holds only that, and the notes the next
compaction takes hold the earlier summary's lines and the new ones.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_claude import events as ev
from mini_claude.context.notes_merge import merged_notes, sections_of, within
from mini_claude.prompts import NOTES_ADDITIONS, NOTES_IN_FULL
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.agent import PROVIDERS, Run

BASE = """## User requests
- read every log part

## Files read
- logs/part-00.log

## Details from tool output
- FACT-0 part 0

## Current state and next step
- Working on: part 0"""


def tokens(text: str) -> float:
    return len(text) / 4


def test_additions_go_under_their_heading_once_and_the_present_is_replaced() -> None:
    additions = """## Files read
- logs/part-00.log
- logs/part-01.log

## Current state and next step
- Working on: part 1

## Errors seen
- read_file(logs/x.log): no such file"""
    merged = sections_of(merged_notes(BASE, additions))
    by_title = {s.title: s.lines for s in merged}
    assert by_title["files read"] == ["- logs/part-00.log", "- logs/part-01.log"]
    assert by_title["current state and next step"] == ["- Working on: part 1"]
    assert by_title["details from tool output"] == ["- FACT-0 part 0"]
    assert [s.title for s in merged][-1] == "errors seen"  # a new heading goes at the end


def test_numbered_and_bold_headings_match_the_same_section() -> None:
    base = "1. Files:\n- a.py\n\n**Errors and fixes**\n- none"
    merged = {s.title: s.lines for s in sections_of(merged_notes(base, "1. Files:\n- b.py"))}
    assert merged["files"] == ["- a.py", "- b.py"]
    assert merged["errors and fixes"] == ["- none"]


def test_over_its_length_the_notes_lose_raw_details_first_then_conclusions() -> None:
    text = "\n\n".join([
        "## User requests\n" + "\n".join(f"- request {i}" for i in range(10)),
        "## Findings and decisions\n" + "\n".join(f"- finding {i}" for i in range(40)),
        "## Files read\n" + "\n".join(f"- src/m{i}.py" for i in range(30)),
        "## Details from tool output\n" + "\n".join(f"- FACT-{i} value" for i in range(40)),
        "## Current state and next step\n- Working on: the report",
    ])
    cut = within(text, int(tokens(text) * 0.6), tokens)
    assert tokens(cut) <= tokens(text) * 0.6
    kept = {s.title: s.lines for s in sections_of(cut)}
    assert "details from tool output" not in kept  # all of it went first
    assert kept["findings and decisions"][-1] == "- finding 39"  # the oldest went, not the newest
    assert len(kept["findings and decisions"]) < 40
    assert len(kept["user requests"]) == 10 and len(kept["files read"]) == 30
    assert kept["current state and next step"] == ["- Working on: the report"]
    assert within(text, int(tokens(text)) + 1, tokens) == text


# ---- the whole path, over HTTP ------------------------------------------------------------

LOG = "\n".join(f"line {n}: routine entry with some words to fill the page" for n in range(150))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "logs").mkdir(parents=True)
    for i in range(90):
        (root / "logs" / f"part-{i:02d}.log").write_text(f"FACT-{i} part {i}\n{LOG}")
    return root


@pytest.fixture(params=PROVIDERS)
def run(request: pytest.FixtureRequest, simulator: Simulator, isolated_home: Path,
        project: Path) -> Iterator[Run]:
    r = Run(simulator, request.param, isolated_home, project, context_window=24_000,
            output_reserve=4_000, session_memory_background=False, session_memory_start_pct=0.6)
    yield r
    r.close()


def part(i: int) -> str:
    return f"logs/part-{i:02d}.log"


def reading_policy(count: int) -> ScriptedPolicy:
    steps = [Reply(f"Reading part {i}.", [ToolCall("read_file", {"path": part(i)})])
             for i in range(count)]
    return ScriptedPolicy([*steps, Reply("All parts read.")])


def newest_part(notes: str) -> int:
    return max(int(n) for n in re.findall(r"part-(\d\d)\.log", notes))


def session_notes(r: Run) -> list[str]:
    lines = r.agent.transcript.path.read_text().splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    return [rec["text"] for rec in records
            if rec.get("type") == "event" and rec.get("kind") == "session_notes"]


def test_after_a_compaction_an_update_writes_only_what_is_new_and_the_notes_keep_the_rest(
    run: Run,
) -> None:
    r = run
    r.sim.policy = reading_policy(85)
    r.start()
    events = r.turn("read every log part and tell me the facts")
    assert isinstance(events[-1], ev.TurnFinished)
    compactions = [e for e in events if isinstance(e, ev.CompactionFinished)]
    assert len(compactions) >= 2, "the turn must compact more than once"
    notes_requests = [q for q in r.sim.requests if q.is_notes_request]
    first, later = notes_requests[0], notes_requests[1:]
    assert NOTES_IN_FULL in json.dumps(first.body) and NOTES_ADDITIONS not in json.dumps(first.body)
    additions = [q for q in later if NOTES_ADDITIONS in json.dumps(q.body)]
    assert additions, "no update after a compaction asked only for what is new"
    for q in additions:
        assert q.reply is not None and "part-00.log" not in q.reply.text  # the summary has it
    # The merged notes hold what the first summary said and what came after it.
    written = session_notes(r)
    merged = written[-1]
    assert "logs/part-00.log" in merged
    assert newest_part(merged) > newest_part(written[0])
    # A compaction from merged notes carries them whole.
    later_from_notes = [c for c in compactions[1:] if c.from_notes]
    assert later_from_notes and "logs/part-00.log" in later_from_notes[-1].summary
