"""The permission gate's questions put to the editor (``session/request_permission``)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from acp.schema import (
    AllowedOutcome,
    ContentToolCallContent,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallStart,
    ToolCallUpdate,
)

from mini_claude.acp.updates import Update, running, text, tool_kind
from mini_claude.permissions.asking import PermissionDecision, PermissionRequest
from mini_claude.permissions.mode_table import ACCEPT_EDITS_MODE, DEFAULT_MODE, PermissionMode
from mini_claude.tools.permission_gate import EXIT_PLAN_TOOL

ALLOW, ALLOW_ALWAYS, REJECT = "allow", "allow_always", "reject"
PLAN_ACCEPT_EDITS, PLAN_DEFAULT, PLAN_KEEP = "plan_accept_edits", "plan_default", "plan_keep"
PLAN_MODES: dict[str, PermissionMode] = {PLAN_ACCEPT_EDITS: ACCEPT_EDITS_MODE,
                                         PLAN_DEFAULT: DEFAULT_MODE}
DETAIL_CHARS = 20_000


class Asker(Protocol):
    """The client side the questions go to (the connection's method)."""

    async def __call__(self, *, session_id: str, tool_call: ToolCallUpdate,
                       options: list[PermissionOption]) -> RequestPermissionResponse: ...


class OpenCalls:
    """Tool calls started and not yet finished, so a question names the call it is about."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}
        self._asked = itertools.count(1)

    def started(self, tool_call_id: str, name: str) -> None:
        self._names[tool_call_id] = name

    def finished(self, tool_call_id: str) -> None:
        self._names.pop(tool_call_id, None)

    def asking(self, tool_name: str) -> str | None:
        """The oldest open call of this tool: calls run in order, so it is the one asking."""
        return next((i for i, name in self._names.items() if name == tool_name), None)

    def new_id(self) -> str:
        """For a question no call of ours started (a sub-agent's call)."""
        return f"question-{next(self._asked)}"


def options_for(request: PermissionRequest) -> list[PermissionOption]:
    """The REPL's answers, in the protocol's kinds."""
    if request.tool_name == EXIT_PLAN_TOOL:
        from mini_claude.ui.permissions import PLAN_ANSWERS

        ids = (PLAN_ACCEPT_EDITS, PLAN_DEFAULT, PLAN_KEEP)
        kinds: tuple[Any, ...] = ("allow_always", "allow_once", "reject_once")
        return [PermissionOption(option_id=option_id, name=name, kind=kind)
                for option_id, name, kind in zip(ids, PLAN_ANSWERS, kinds, strict=True)]
    from mini_claude.ui.permissions import answer_labels

    yes, always, no = answer_labels(request)
    return [
        PermissionOption(option_id=ALLOW, name=yes, kind="allow_once"),
        PermissionOption(option_id=ALLOW_ALWAYS, name=always, kind="allow_always"),
        PermissionOption(option_id=REJECT, name=no.split(",")[0], kind="reject_once"),
    ]


def decision_for(request: PermissionRequest, option_id: str) -> PermissionDecision:
    if request.tool_name == EXIT_PLAN_TOOL:
        mode = PLAN_MODES.get(option_id)
        if mode is None:
            return PermissionDecision(False, reason="the user wants to keep planning")
        return PermissionDecision(True, mode=mode)
    if option_id == ALLOW:
        return PermissionDecision(True)
    if option_id == ALLOW_ALWAYS:
        return PermissionDecision(True, remember=True)
    return PermissionDecision(False, reason="the user said no in the editor")


class EditorApprover:
    """The approver of an editor's session: each question goes to the client, which shows
    it on the tool call; "cancelled" (the user stopped the turn) stops the turn, as Esc does."""

    def __init__(self, session_id: str, ask: Asker, send: Callable[[Update], Awaitable[None]],
                 calls: OpenCalls, stop_turn: Callable[[], None]) -> None:
        self.session_id = session_id
        self.ask = ask
        self.send = send
        self.calls = calls
        self.stop_turn = stop_turn

    async def __call__(self, request: PermissionRequest) -> PermissionDecision:
        tool_call_id = self.calls.asking(request.tool_name)
        if tool_call_id is None:  # a sub-agent's call: the editor has not seen it yet
            tool_call_id = self.calls.new_id()
            await self.send(ToolCallStart(session_update="tool_call", tool_call_id=tool_call_id,
                                          title=request.summary, kind=tool_kind(request.tool_name),
                                          status="pending"))
        detail = (request.detail or "")[:DETAIL_CHARS]
        tool_call = ToolCallUpdate(
            tool_call_id=tool_call_id,
            title=request.summary,
            kind=tool_kind(request.tool_name),
            status="pending",
            content=[ContentToolCallContent(type="content", content=text(detail))]
            if detail else None,
        )
        response = await self.ask(session_id=self.session_id, tool_call=tool_call,
                                  options=options_for(request))
        outcome = response.outcome
        if not isinstance(outcome, AllowedOutcome):
            self.stop_turn()
            raise asyncio.CancelledError
        decision = decision_for(request, outcome.option_id)
        if decision.allowed:
            await self.send(running(tool_call_id))
        return decision
