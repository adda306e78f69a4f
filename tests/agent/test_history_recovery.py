"""Poor summaries on a small window: every fact read early comes back in one tool call.

The scripted model reads twelve sources, each holding one fact, then works
long enough for many compactions whose summaries keep only the user's requests.
At the end it needs every fact: when one is no longer in its context it
follows a pointer that is (the ledger's path of the note, for read_file) or
searches its own history (search_history), once, and checks what came back.
Real agent, real adapters and SDKs, over HTTP against the simulator.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mini_claude import events as ev
from mini_claude.context.ledger import FILES_HEADING, TITLE, ledger_header, ledger_tokens
from mini_claude.conversation import TextBlock
from mini_claude.simulator import Fault, Reply, SimClock, SimConversation, Simulator, ToolCall
from mini_claude.simulator.types import TextPart, ToolResultPart, ToolUsePart
from tests.support.long_session import RunRecord, build_agent, run_turn

WINDOW = 20_000
NOTES = 9  # facts read with read_file from notes/
RECORDS = 3  # facts seen only in the output of a shell command
BATCHES = 8
CALLS_PER_BATCH = 5
REASONING = "I compare the step functions with the notes and plan the next change. " * 50
FILLER = "This paragraph records background on the subsystem, long enough to matter. " * 2


def fact(i: int) -> str:
    return f"FACT-{i:02d} the setting number {i} must be {i * 37 + 11}"


def make_sources(root: Path) -> list[tuple[int, str, ToolCall]]:
    """Notes and records, each with its fact near its end; and the work files."""
    (root / "notes").mkdir(parents=True)
    (root / "records").mkdir()
    (root / "work").mkdir()
    sources: list[tuple[int, str, ToolCall]] = []
    for i in range(1, NOTES + RECORDS + 1):
        body = "".join(f"{n:02d}. {FILLER}\n" for n in range(18)) + fact(i) + "\n"
        if i <= NOTES:
            path = f"notes/note-{i:02d}.md"
            sources.append((i, path, ToolCall("read_file", {"path": path})))
        else:
            path = f"records/r-{i:02d}.txt"
            sources.append((i, path, ToolCall("run_shell", {"command": f"cat {path}"})))
        (root / path).write_text(body)
    for k in range(4):
        text = "".join(f"def step_{k}_{n}(x):\n    return x + {n}  # {FILLER}\n"
                       for n in range(40))
        (root / "work" / f"w{k}.py").write_text(text)
    return sources


def poor_summary(conv: SimConversation) -> str:
    """What a weak model writes: the user's requests, nothing they led to."""
    requests = [
        part.text for m in conv.messages[:-1] if m.role == "user" and not m.tool_results
        for part in m.blocks if isinstance(part, TextPart) and not part.text.startswith("[")
    ]
    return "<summary>\n## User requests\n" + "".join(f"- {r}\n" for r in requests) + "</summary>"


def context_text(conv: SimConversation) -> str:
    parts: list[str] = []
    for message in conv.messages:
        for block in message.blocks:
            if isinstance(block, TextPart):
                parts.append(block.text)
            elif isinstance(block, ToolUsePart):
                parts.append(json.dumps(block.input))
            elif isinstance(block, ToolResultPart):
                parts.append(block.content)
    return "\n".join(parts)


@dataclass
class RecallPolicy:
    """Reads the sources, works in batches, then needs every fact back."""

    sources: list[tuple[int, str, ToolCall]]
    phase: str = "read"  # set by the test before each turn: read, batch N, recall
    handles_summary_requests: bool = True
    summaries: list[str] = field(default_factory=list)
    outcome: dict[int, str] = field(default_factory=dict)  # fact -> context|read_file|search|lost
    recovery_calls: int = 0
    _pending: int | None = None
    _read: int = 0
    _work: int = 0
    _batches: dict[str, int] = field(default_factory=dict)

    def respond(self, conv: SimConversation) -> Reply:
        if conv.is_summary_request:
            self.summaries.append(poor_summary(conv))
            return Reply(self.summaries[-1])
        if self.phase == "read":
            if self._read < len(self.sources):
                self._read += 1
                return Reply(f"Reading source {self._read}.", [self.sources[self._read - 1][2]])
            return Reply("I have read every source.")
        if self.phase.startswith("batch"):
            done = self._batches.get(self.phase, 0)
            if done < CALLS_PER_BATCH:
                self._batches[self.phase] = done + 1
                self._work += 1
                command = f"cat work/w{self._work % 4}.py"
                thinking = f"Work step {self._work}: " + REASONING  # text no tier clears
                return Reply(thinking, [ToolCall("run_shell", {"command": command})])
            return Reply("Batch finished.")
        return self._recall(conv)

    def _recall(self, conv: SimConversation) -> Reply:
        if self._pending is not None:
            results = conv.last_tool_results()
            got = "\n".join(r.content for r in results)
            if fact(self._pending) not in got:
                self.outcome[self._pending] = "lost"
            self._pending = None
        text = context_text(conv)
        for i, path, _ in self.sources:
            if i in self.outcome:
                continue
            if fact(i) in text:
                self.outcome[i] = "context"
                continue
            self._pending = i
            self.recovery_calls += 1
            if f'"{path}"' in text:  # a pointer in context: the ledger names the note
                self.outcome[i] = "read_file"
                return Reply(f"Re-reading {path}.", [ToolCall("read_file", {"path": path})])
            self.outcome[i] = "search"
            return Reply("Searching my history.",
                         [ToolCall("search_history", {"query": f"FACT-{i:02d}", "literal": True})])
        return Reply("All facts: " + "; ".join(fact(i) for i, _, _ in self.sources))


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_every_early_fact_is_recoverable_in_one_call_after_poor_summaries(
    provider: str, simulator: Simulator, tmp_path: Path, isolated_home: Path
) -> None:
    root = tmp_path / "project"
    sources = make_sources(root)
    policy = RecallPolicy(sources)
    simulator.policy = policy
    # summaries, not clearing, inside the turn: these tests are about what survives them;
    # notes updates are waited for, so which compaction they serve does not hang on the
    # machine's load
    _, agent = build_agent(simulator, provider, root, isolated_home, WINDOW, SimClock(),
                           summary_min_work=0, session_memory_background=False)
    record = RunRecord()

    async def drive() -> None:
        await run_turn(agent, "Read the sources one by one; their facts matter later.", record)
        for batch in range(BATCHES):
            policy.phase = f"batch {batch}"
            await run_turn(agent, f"Batch {batch}: keep working through the code.", record)
        policy.phase = "recall"
        await run_turn(agent, "Report every fact from the sources.", record)
        await agent.provider.close()

    asyncio.run(drive())
    compactions = record.of(ev.CompactionFinished)
    assert len(compactions) >= 5
    assert all("note-" not in s and "FACT-" not in s for s in policy.summaries)
    assert len(policy.outcome) == NOTES + RECORDS
    assert [i for i, how in policy.outcome.items() if how == "lost"] == []
    recovered = [i for i, how in policy.outcome.items() if how != "context"]
    assert len(recovered) >= 8  # the summaries really forgot them
    assert policy.recovery_calls == len(recovered)  # one call each
    # Notes through the ledger's path (the oldest may leave its bound as the recall's own
    # re-reads fill it, and come back through the history), the rest through the history.
    assert all(policy.outcome[i] == "search" for i in recovered if i > NOTES)
    noted = [i for i in recovered if i <= NOTES]
    assert sum(policy.outcome[i] == "read_file" for i in noted) >= len(noted) - 1
    boundary = agent.conversation.messages[0]
    ledger = next(b.text for b in boundary.blocks
                  if isinstance(b, TextBlock) and TITLE in b.text)
    assert FILES_HEADING in ledger and '"notes/note-01.md"' in ledger
    assert not [r for r in simulator.requests if r.status != 200]


@dataclass
class ReaderPolicy:
    """Reads the files it is given, one per request, with a paragraph of reasoning each."""

    files: list[str]
    handles_summary_requests: bool = True
    _next: int = 0
    _stop: int = 0

    def respond(self, conv: SimConversation) -> Reply:
        if conv.is_summary_request:
            return Reply(poor_summary(conv))
        if self._next < min(self._stop, len(self.files)):
            self._next += 1
            path = self.files[self._next - 1]
            return Reply(f"Reading {path}. " + REASONING, [ToolCall("read_file", {"path": path})])
        return Reply("Done reading.")

    def read_up_to(self, count: int) -> None:
        self._stop = count


def ledger_of(agent_messages: list[Any]) -> list[str]:
    return [b.text for b in agent_messages[0].blocks
            if isinstance(b, TextBlock) and b.text.startswith(ledger_header())]


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_the_ledger_is_bounded_merged_and_carried_through_a_resume(
    provider: str, simulator: Simulator, tmp_path: Path, isolated_home: Path
) -> None:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    files = [f"src/module_{i:02d}.py" for i in range(60)]
    for path in files:
        (root / path).write_text(f"# {path}\n" + "VALUE = 1\n" * 30)
    policy = ReaderPolicy(files)
    simulator.policy = policy
    # Notes updates are waited for, so where each compaction's ledger ends does not depend on
    # when a background update happens to land on a loaded machine.
    session, agent = build_agent(simulator, provider, root, isolated_home, WINDOW, SimClock(),
                                 summary_min_work=0, session_memory_background=False)
    bound = ledger_tokens(agent.settings)
    record = RunRecord()

    async def first_part() -> None:
        for turn in range(5):
            policy.read_up_to(10 * (turn + 1))
            await run_turn(agent, f"Read the next ten modules ({turn}).", record)
        async for event in agent.compact():
            record.events.append(event)
        await agent.provider.close()

    asyncio.run(first_part())
    assert len(record.of(ev.CompactionFinished)) >= 3
    [ledger] = ledger_of(agent.conversation.messages)  # one, never nested
    assert simulator.count_tokens(ledger) <= bound * 1.1
    assert ledger.splitlines()[1].startswith("Through tool call 50 ")
    rows = [line for line in ledger.splitlines() if line.startswith("- call ")]
    numbers = [int(line.split(" · ")[0].removeprefix("- call ")) for line in rows]
    assert numbers[0] == 50 and numbers == sorted(numbers, reverse=True)
    assert 10 < len(rows) < 50  # the bound cut the oldest, and kept a useful number
    assert '"src/module_49.py"' in ledger and '"src/module_00.py"' not in ledger

    # Resume the session from its transcript: the ledger is read back from the boundary.
    resumed = session.resume(session.session_id)
    policy.read_up_to(53)

    async def second_part() -> None:
        await run_turn(resumed, "Read three more.", record)
        async for event in resumed.compact():
            record.events.append(event)
        await resumed.provider.close()

    asyncio.run(second_part())
    [merged] = ledger_of(resumed.conversation.messages)
    assert merged.splitlines()[1].startswith("Through tool call 53 ")
    assert merged.count(FILES_HEADING) == 1
    assert '"src/module_52.py"' in merged and '"src/module_40.py"' in merged
    assert simulator.count_tokens(merged) <= bound * 1.1


@dataclass
class KindPolicy:
    """Turn one reads three notes; turn two does whatever brings on the compaction wanted."""

    kind: str
    handles_summary_requests: bool = True
    _step: int = 0

    def respond(self, conv: SimConversation) -> Reply:
        if conv.is_summary_request:
            return Reply(poor_summary(conv))
        self._step += 1
        if self._step <= 3:
            path = f"notes/note-{self._step:02d}.md"
            return Reply(f"Reading {path}.", [ToolCall("read_file", {"path": path})])
        if self._step == 4:  # the end of turn one: a history worth summarizing
            return Reply("Read. " + (REASONING * 9 if self.kind in ("auto", "idle") else ""))
        if self._step == 5 and self.kind == "tool":
            return Reply("Compacting first.", [ToolCall("compact", {})])
        return Reply("Done.")


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize("kind", ["auto", "idle", "tool", "prompt-too-long"])
def test_every_kind_of_compaction_carries_the_ledger(
    kind: str, provider: str, simulator: Simulator, tmp_path: Path, isolated_home: Path
) -> None:
    root = tmp_path / "project"
    make_sources(root)
    simulator.policy = KindPolicy(kind)
    clock = SimClock()
    # The auto summary comes at the threshold, not held back for notes on their way.
    threshold: dict[str, object] = {}
    if kind == "auto":
        threshold.update(autocompact_pct=0.5, session_memory_defer_margin_pct=1.0)
    if kind == "idle":
        threshold["session_memory"] = False  # an idle summary then needs no notes
    _, agent = build_agent(simulator, provider, root, isolated_home, WINDOW, clock, **threshold)
    record = RunRecord()

    async def drive() -> None:
        await run_turn(agent, "Read three notes.", record)
        if kind == "idle":
            clock.advance(agent.settings.microcompact_idle_seconds + 60)
        if kind == "prompt-too-long":
            simulator.inject(Fault("prompt_too_long"))
        await run_turn(agent, "Go on.", record)
        await agent.provider.close()

    asyncio.run(drive())
    assert [e.reason for e in record.of(ev.CompactionFinished)] == [kind]
    [ledger] = ledger_of(agent.conversation.messages)
    for i in (1, 2, 3):
        assert f'"notes/note-{i:02d}.md" · read_file' in ledger
    assert ledger.splitlines()[1].startswith(f"Through tool call {4 if kind == 'tool' else 3} ")
