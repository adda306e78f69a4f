"""The scripted model speaking a real CLI's tools: the part every real-product row shares.

A real CLI names its tools its own way and words its notices its own way; the
benchmark's scripted model (:class:`ScriptPolicy`) knows only ours. A subclass says
how one of our calls is made in the CLI's tools, how the CLI's results read in
our words, and how its compaction request is recognised and answered; this class
keeps the map between the two and the simulated clock.
"""

from __future__ import annotations

import shutil
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from mini_claude.bench.runner import MODEL_SECONDS, TOOL_SECONDS
from mini_claude.scenario.policy import ScriptPolicy
from mini_claude.scenario.script import Call, Script
from mini_claude.simulator import SimClock
from mini_claude.simulator.summary import REALISTIC, SummaryStyle
from mini_claude.simulator.types import (
    Reply,
    SimConversation,
    SimMessage,
    ToolCall,
    ToolResultPart,
    ToolUsePart,
)


class TranslatingPolicy:
    """The scripted model behind a real CLI; it also writes the CLI's summaries.

    Each request advances the simulated clock by a model reply and by the tool calls it
    answers, as the benchmark's own runner does from the agent's events.
    """

    handles_summary_requests = True
    OWN_REQUEST_REPLY = "OK"  # for a request of the CLI's own (a title), not the session's turn

    def __init__(self, script: Script, project: Path, clock: SimClock, counter: Any,
                 style: SummaryStyle = REALISTIC) -> None:
        self.inner = ScriptPolicy(script, seed=len(script.turns))
        self.project = project
        self.clock = clock
        self.counter = counter
        self.style = style
        self.ours: dict[str, Call] = {}  # tool id -> our call it stands for
        self.tool_calls = 0
        self._lock = threading.Lock()

    def begin_turn(self, index: int) -> None:
        self.inner.begin_turn(index)

    def is_summary_request(self, conv: SimConversation) -> bool:
        raise NotImplementedError

    def summary_reply(self, conv: SimConversation) -> Reply:
        raise NotImplementedError

    def to_theirs(self, call: Call) -> ToolCall:
        """Our call as the CLI's model would make it."""
        raise NotImplementedError

    def result_in_our_words(self, content: str, call: Call) -> str:
        return content

    def made(self, theirs: ToolCall, ours: Call) -> None:
        """A call just made in the CLI's tools (a subclass may remember it)."""

    def respond(self, conv: SimConversation) -> Reply:
        with self._lock:
            self.clock.advance(MODEL_SECONDS + TOOL_SECONDS * len(conv.last_tool_results()))
            if self.is_summary_request(conv):
                return self.summary_reply(conv)
            if not conv.tool_names:
                return Reply(self.OWN_REQUEST_REPLY)
            reply = self.inner.respond(self.in_our_words(conv))
            calls = []
            for call in reply.tool_calls:
                ours = Call(call.name, call.input)
                theirs = self.to_theirs(ours)
                self.ours[call.id or ""] = ours
                self.made(theirs, ours)
                calls.append(replace(theirs, id=call.id))
            self.tool_calls += len(calls)
            return Reply(reply.text, calls)

    def in_our_words(self, conv: SimConversation) -> SimConversation:
        messages = []
        for message in conv.messages:
            blocks: list[Any] = []
            for block in message.blocks:
                if isinstance(block, ToolUsePart) and block.id in self.ours:
                    call = self.ours[block.id]
                    blocks.append(ToolUsePart(block.id, call.name, dict(call.input)))
                elif isinstance(block, ToolResultPart) and block.tool_use_id in self.ours:
                    text = self.result_in_our_words(block.content, self.ours[block.tool_use_id])
                    blocks.append(ToolResultPart(block.tool_use_id, text, block.is_error))
                else:
                    blocks.append(block)
            messages.append(SimMessage(message.role, blocks))
        return replace(conv, messages=messages)


def fresh_workdir(workdir: Path, template: Path) -> tuple[Path, Path]:
    """A copy of the project and an empty home folder for one CLI run (nothing of a last run)."""
    project = workdir / "project"
    home = workdir / "home"
    if workdir.exists():
        shutil.rmtree(workdir)
    shutil.copytree(template, project)
    home.mkdir(parents=True)
    return project, home
