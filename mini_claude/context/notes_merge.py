"""Notes written as additions: the model writes only what is new, and the notes are merged here.

Rewriting the whole notes at every update costs their full length in output tokens each time,
the dearest tokens there are, though most of it was already written. Once a compaction has put
a summary at the start of the history, an update asks only for what the messages after it add
(as Claude Code's session memory edits its notes file rather than writing it again) and merges
the reply into that summary: lines go under the heading of the same name, new headings at the
end, and where things stand (current work, next step) is replaced, not added to.

The notes stay within a length: past it, the oldest lines go first from the kinds that matter
least, raw details from tool output, then conclusions, problem solving and the like; the user's
words, the errors and the lists of files, commands and searches (which say where anything
left out can be read again) go last.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

# "## Title", "1. Title:", "**Title**": the shapes a model writes a section heading in.
_HEADING = re.compile(
    r"^\s*(?:#{1,6}\s+(?P<md>.+?)|(?:\d+[.)]\s+)?\*\*(?P<bold>[^*]+)\*\*:?|"
    r"\d+[.)]\s+(?P<num>[^:]{1,80}):)\s*$"
)
# A section that says where things stand now: an update replaces it.
_CURRENT = re.compile(r"\bcurrent\b|\bnext step|\bpending\b|\bstate\b", re.IGNORECASE)
# What goes first when the notes are too long, in that order; anything else goes after these,
# and the user's words, errors and the pointer lists (files, commands, searches) last of all.
_FIRST_TO_GO = (
    re.compile(r"\bdetails?\b|\btool output\b|\bexamples?\b", re.IGNORECASE),
    re.compile(r"\bfindings?\b|\bdecisions?\b|\bconcepts?\b|\bproblem|\bsolv|\blearn",
               re.IGNORECASE),
)
_LAST_TO_GO = re.compile(
    r"\buser\b|\brequests?\b|\binstructions?\b|\bintent\b|\berrors?\b|\bfiles?\b|"
    r"\bcommands?\b|\bsearch", re.IGNORECASE)


@dataclass(slots=True)
class NoteSection:
    """One heading and the lines under it (blank lines dropped)."""

    heading: str  # the heading line as written; "" for lines before any heading
    title: str  # the heading's words, lower case, for matching
    lines: list[str] = field(default_factory=list)


def sections_of(text: str) -> list[NoteSection]:
    """The notes cut at their headings, in order."""
    sections = [NoteSection("", "")]
    for raw in text.splitlines():
        match = _HEADING.match(raw)
        if match:
            words = next(g for g in match.group("md", "bold", "num") if g)
            sections.append(NoteSection(raw.rstrip(), _title(words)))
        elif raw.strip():
            sections[-1].lines.append(raw.rstrip())
    return [s for s in sections if s.heading or s.lines]


def _title(words: str) -> str:
    return " ".join(words.strip(" #*:").lower().split())


def render(sections: list[NoteSection]) -> str:
    parts = []
    for section in sections:
        lines = ([section.heading] if section.heading else []) + section.lines
        if lines:
            parts.append("\n".join(lines))
    return "\n\n".join(parts)


def merged_notes(base: str, additions: str) -> str:
    """``base`` with ``additions`` merged in: each added line under its heading unless it is
    there already, sections about the present replaced, new sections at the end."""
    sections = sections_of(base)
    by_title = {s.title: s for s in sections}
    for added in sections_of(additions):
        existing = by_title.get(added.title)
        if existing is None:
            sections.append(added)
            by_title[added.title] = added
        elif _CURRENT.search(added.title):
            existing.lines = list(added.lines)
        else:
            seen = {line.strip() for line in existing.lines}
            existing.lines.extend(line for line in added.lines if line.strip() not in seen)
    return render(sections)


def within(text: str, max_tokens: int, tokens_of: Callable[[str], float]) -> str:
    """The notes cut to ``max_tokens``: oldest lines first, from the kinds that matter least."""
    over = tokens_of(text) - max_tokens
    if over <= 0:
        return text
    sections = sections_of(text)
    for section in sorted(sections, key=_eviction_rank):
        while section.lines and over > 0:
            over -= tokens_of(section.lines.pop(0) + "\n")
            if not section.lines and section.heading:
                over -= tokens_of(section.heading + "\n\n")
                section.heading = ""  # an empty heading says nothing
    return render(sections)


def _eviction_rank(section: NoteSection) -> int:
    """Lower goes first. Where things stand now is kept whatever else goes."""
    for rank, words in enumerate(_FIRST_TO_GO):
        if words.search(section.title):
            return rank
    if _CURRENT.search(section.title):
        return len(_FIRST_TO_GO) + 3
    if _LAST_TO_GO.search(section.title):
        return len(_FIRST_TO_GO) + 2
    return len(_FIRST_TO_GO) + 1
