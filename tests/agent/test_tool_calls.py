"""Running one reply's tool calls: concurrent calls run together and serial ones one at a
time, results keep the calls' order, every failure becomes an error result the model reads,
hooks see each call, and an interrupted batch still answers every call."""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_claude import events as ev
from mini_claude import tool_kinds as kinds
from mini_claude.agent.context_steps import ContextSteps
from mini_claude.agent.history import History
from mini_claude.agent.hooks import HookCommand, HookEvent, HookRunner
from mini_claude.agent.tool_calls import ToolCalls
from mini_claude.context.compact import SummaryContext
from mini_claude.context.store import DiskResultStore
from mini_claude.conversation import Conversation, Message, TextBlock, ToolResultBlock, ToolUseBlock
from mini_claude.permissions.asking import (
    Approver,
    PermissionDecision,
    PermissionRequest,
    allow_all,
)
from mini_claude.protocol import ToolOutput, ToolSpec
from mini_claude.tool_kinds import ToolTraits
from mini_claude.tools.base import NOTHING_TO_ASK, Prepared, ToolContext
from mini_claude.tools.registry import ToolRegistry
from mini_claude.transcript import Transcript
from tests.support.tools import ScriptedApprover, tool_context

WAIT_SECONDS = 10.0  # a bound for broken code, never reached when the code is right
FAKE_TOOLS = ("together", "alone", "fails", "asks", "hangs")


class Log:
    """What the fake tools saw: which ran, in what order, and how many at once."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.running = 0
        self.most_at_once = 0
        self.all_started = asyncio.Event()  # set once `expected` calls have started
        self.expected = 0

    def start(self, label: str) -> None:
        self.started.append(label)
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        if len(self.started) >= self.expected:
            self.all_started.set()

    def stop(self) -> None:
        self.running -= 1


def spec(name: str) -> ToolSpec:
    return ToolSpec(name, f"The {name} test tool.", {
        "type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]})


class FakeTool:
    """A tool that records its run; subclasses say how it behaves."""

    read_only = True
    traits = ToolTraits()

    def __init__(self, name: str, log: Log) -> None:
        self.spec = spec(name)
        self.log = log

    def permission(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        return NOTHING_TO_ASK

    async def run(self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared) -> ToolOutput:
        self.log.start(args["label"])
        try:
            return ToolOutput(await self.work(args["label"]))
        finally:
            self.log.stop()

    async def work(self, label: str) -> str:
        await asyncio.sleep(0.01)  # a moment in which another call could run beside it
        return f"done {label}"


class TogetherTool(FakeTool):
    """Concurrent: a call waits until every call of its batch has started, so the batch
    only finishes quickly when its calls really run at once. The first finishes last."""

    traits = ToolTraits(concurrent=True)

    async def work(self, label: str) -> str:
        try:
            await asyncio.wait_for(self.log.all_started.wait(), WAIT_SECONDS)
        except TimeoutError:
            return f"{label} ran alone"
        if label == "first":
            await asyncio.sleep(0.05)
        return f"done {label}"


class FailingTool(FakeTool):
    async def work(self, label: str) -> str:
        raise RuntimeError(f"disk on fire under {label}")


class AskingTool(FakeTool):
    """Asks before it runs."""

    read_only = False

    def permission(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        return Prepared(PermissionRequest("asks", f"asks {args['label']}", "asks"))


class HangingTool(FakeTool):
    """Runs until it is cancelled, then takes a moment to clean up (as a sub-agent closes
    its history)."""

    traits = ToolTraits(concurrent=True)

    async def work(self, label: str) -> str:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            await asyncio.sleep(0.1)
            raise
        return "never"


class Harness:
    """ToolCalls over the real registry, history and transcript, with the fake tools."""

    def __init__(self, root: Path, *, approve: Approver = allow_all,
                 hooks: list[HookCommand] | None = None) -> None:
        self.log = Log()
        self.registry = ToolRegistry([
            TogetherTool("together", self.log), FakeTool("alone", self.log),
            FailingTool("fails", self.log), AskingTool("asks", self.log),
            HangingTool("hangs", self.log),
        ])
        self.ctx = tool_context(root, approve=approve)
        store = DiskResultStore(self.ctx.settings, "s1")
        runner = HookRunner(hooks or [], cwd=root, env=None)
        self.steps = ContextSteps(store=store, tool_context=self.ctx, clock=lambda: 0.0,
                                  hooks=lambda: runner, summary_context=no_summaries)
        transcript = Transcript.create(root / "transcripts", "s1", {})
        self.history = History(transcript, Conversation(), store, self.ctx.settings)
        self.steps.attach(self.history, self.ctx.settings, fixed_chars=0)
        self.calls = ToolCalls(registry=self.registry, tool_context=self.ctx,
                               context=self.steps, hooks=lambda: runner)

    def reply(self, *calls: tuple[str, dict[str, Any]]) -> list[ToolUseBlock]:
        """The model's reply asking for these calls, appended to the history."""
        uses = [ToolUseBlock(f"call_{i}", name, args) for i, (name, args) in enumerate(calls)]
        self.history.append(Message("user", [TextBlock("go")]))
        self.history.append(Message("assistant", list(uses)))
        return uses

    async def run(self, uses: list[ToolUseBlock]) -> list[ev.Event]:
        return [event async for event in self.calls.run(uses)]

    def results(self) -> dict[str, ToolResultBlock]:
        """The last message's results, by call id."""
        last = self.history.conversation.messages[-1]
        return {b.tool_use_id: b for b in last.blocks if isinstance(b, ToolResultBlock)}


def no_summaries() -> SummaryContext:
    raise AssertionError("running tools never asks for a summary")


def order(events: list[ev.Event]) -> list[tuple[str, str]]:
    return [(type(e).__name__, e.id) for e in events
            if isinstance(e, ev.ToolStarted | ev.ToolFinished)]


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    yield Harness(tmp_path)
    for name in FAKE_TOOLS:
        kinds.forget(name)


def test_neighbouring_concurrent_calls_run_together_and_keep_their_order(
    harness: Harness,
) -> None:
    harness.log.expected = 2
    uses = harness.reply(("together", {"label": "first"}), ("together", {"label": "second"}))
    events = asyncio.run(harness.run(uses))
    assert harness.log.most_at_once == 2
    results = harness.results()
    assert [results[u.id].content for u in uses] == ["done first", "done second"]
    finished = [e.id for e in events if isinstance(e, ev.ToolFinished)]
    assert finished == ["call_0", "call_1"]  # in call order, though the second ended first
    assert order(events)[:2] == [("ToolStarted", "call_0"), ("ToolStarted", "call_1")]


def test_serial_calls_run_one_at_a_time_each_started_then_finished(harness: Harness) -> None:
    uses = harness.reply(("alone", {"label": "a"}), ("alone", {"label": "b"}),
                         ("alone", {"label": "c"}))
    events = asyncio.run(harness.run(uses))
    assert harness.log.most_at_once == 1
    assert harness.log.started == ["a", "b", "c"]
    assert order(events) == [
        ("ToolStarted", "call_0"), ("ToolFinished", "call_0"),
        ("ToolStarted", "call_1"), ("ToolFinished", "call_1"),
        ("ToolStarted", "call_2"), ("ToolFinished", "call_2"),
    ]


def test_only_neighbouring_concurrent_calls_form_a_batch(harness: Harness) -> None:
    uses = harness.reply(("together", {"label": "1"}), ("together", {"label": "2"}),
                         ("alone", {"label": "3"}), ("together", {"label": "4"}))
    assert [[u.id for u in batch] for batch in harness.calls.batches(uses)] == [
        ["call_0", "call_1"], ["call_2"], ["call_3"]]


def test_a_failing_tool_an_unknown_tool_and_bad_arguments_become_error_results(
    harness: Harness,
) -> None:
    uses = harness.reply(("fails", {"label": "x"}), ("no_such_tool", {}),
                         ("alone", {"wrong": 1}), ("alone", {"label": "after"}))
    events = asyncio.run(harness.run(uses))
    results = harness.results()
    failed, unknown, bad, fine = (results[u.id] for u in uses)
    assert failed.is_error and "disk on fire under x" in failed.content
    assert unknown.is_error and "Unknown tool 'no_such_tool'" in unknown.content
    assert bad.is_error and "Invalid arguments for alone" in bad.content
    assert not fine.is_error and fine.content == "done after"  # the calls after still run
    assert harness.log.started == ["x", "after"]
    finished = [e for e in events if isinstance(e, ev.ToolFinished)]
    assert [e.result.is_error for e in finished] == [True, True, True, False]


def test_a_denied_call_is_an_error_result_and_never_runs(tmp_path: Path) -> None:
    approver = ScriptedApprover(PermissionDecision(False, reason="not today"))
    harness = Harness(tmp_path, approve=approver)
    try:
        uses = harness.reply(("asks", {"label": "x"}), ("alone", {"label": "y"}))
        asyncio.run(harness.run(uses))
    finally:
        for name in FAKE_TOOLS:
            kinds.forget(name)
    denied = harness.results()["call_0"]
    assert denied.is_error and "not today" in denied.content
    assert [r.tool_name for r in approver.requests] == ["asks"]
    assert harness.log.started == ["y"]


@pytest.mark.parametrize("calls", [
    [("alone", {"label": "a"}), ("hangs", {"label": "b"}), ("alone", {"label": "c"})],
    [("hangs", {"label": "a"}), ("hangs", {"label": "b"}), ("alone", {"label": "c"})],
], ids=["serial", "in-a-batch"])
def test_an_interrupted_step_still_answers_every_call(
    harness: Harness, calls: list[tuple[str, dict[str, Any]]]
) -> None:
    harness.log.expected = 2  # both hanging calls of a batch, or the first and the hanging one
    uses = harness.reply(*calls)

    async def interrupt() -> None:
        task = asyncio.ensure_future(harness.run(uses))
        await asyncio.wait_for(harness.log.all_started.wait(), WAIT_SECONDS)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert harness.log.running == 0  # the hanging calls finished cleaning up first

    asyncio.run(interrupt())
    results = harness.results()
    assert set(results) == {u.id for u in uses}
    assert "c" not in harness.log.started  # the call after the interruption never ran


def hook(event: HookEvent, answer: str, root: Path) -> HookCommand:
    """A hook command that prints ``answer``."""
    return HookCommand(event, "", f"printf '%s' {shlex.quote(answer)}", 10.0,
                       root / "settings.json")


def test_a_pre_tool_use_hook_blocks_the_call_and_a_post_tool_use_hook_adds_feedback(
    tmp_path: Path,
) -> None:
    block = hook("PreToolUse", '{"decision": "block", "reason": "frozen"}', tmp_path)
    harness = Harness(tmp_path, hooks=[block])
    try:
        uses = harness.reply(("alone", {"label": "x"}))
        asyncio.run(harness.run(uses))
        blocked = harness.results()["call_0"]
        assert blocked.is_error and "Blocked by a PreToolUse hook: frozen" in blocked.content
        assert harness.log.started == []

        after = hook("PostToolUse", '{"decision": "block", "reason": "lint it"}', tmp_path)
        (tmp_path / "second").mkdir()
        harness = Harness(tmp_path / "second", hooks=[after])
        uses = harness.reply(("alone", {"label": "y"}))
        asyncio.run(harness.run(uses))
    finally:
        for name in FAKE_TOOLS:
            kinds.forget(name)
    result = harness.results()["call_0"]
    assert result.content == "done y\n\n[PostToolUse hook]: lint it"
    assert harness.log.started == ["y"]
