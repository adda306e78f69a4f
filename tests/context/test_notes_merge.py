"""Notes written as additions and merged into the summary that heads the history.

The merge and the length limit; the whole path over HTTP is in test_session_memory.py.
"""

from __future__ import annotations

from mini_claude.context.notes_merge import merged_notes, sections_of, within

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
