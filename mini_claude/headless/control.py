"""The control protocol of ``--input-format stream-json``, as the Claude Agent SDK speaks it.

Both sides send ``control_request`` lines (``{"type": "control_request",
"request_id", "request": {"subtype", ...}}``) and answer with ``control_response``
lines (``{"response": {"subtype": "success" | "error", "request_id", "response" |
"error"}}``). The program asks us to ``initialize``, ``interrupt``,
``set_permission_mode``, ``set_model`` and for ``mcp_status``; we ask it
``can_use_tool`` (at the permission gate's question), ``hook_callback`` (for the
hooks it registered) and ``mcp_message`` (for the MCP servers it hosts). A request
we do not support is answered with an error at once, never left waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from mini_claude.agent.current_call import CURRENT_CALL
from mini_claude.agent.hooks import HOOK_EVENTS, HookCommand, HookRun
from mini_claude.headless.claude_names import claude_input, claude_tool_name, our_input
from mini_claude.permissions.asking import PermissionDecision, PermissionRequest
from mini_claude.session.settings_files import SettingsFile, with_our_tool_names

Line = dict[str, Any]
Write = Callable[[Line], None]
DEFAULT_HOOK_TIMEOUT = 60.0
SDK_HOOKS_SOURCE = Path("(controlling program)")


class ControlError(Exception):
    """The other side answered a request with an error (its text is the message)."""


def success(request_id: str, response: Line | None = None) -> Line:
    body: Line = {"subtype": "success", "request_id": request_id}
    if response is not None:
        body["response"] = response
    return {"type": "control_response", "response": body}


def failure(request_id: str, error: str) -> Line:
    return {"type": "control_response",
            "response": {"subtype": "error", "request_id": request_id, "error": error}}


class ControlChannel:
    """Our requests to the controlling program, each waiting for its answer."""

    def __init__(self, write: Write) -> None:
        self.write = write
        self._pending: dict[str, asyncio.Future[Line]] = {}
        self._ids = itertools.count(1)
        self.closed = False

    async def request(self, body: Line) -> Line:
        """Send ``body`` and wait for the answer; ControlError when it is an error or the
        channel closes first."""
        if self.closed:
            raise ControlError("the controlling program's input is closed")
        request_id = f"mc_req_{next(self._ids)}_{os.urandom(4).hex()}"
        future: asyncio.Future[Line] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self.write({"type": "control_request", "request_id": request_id, "request": body})
        try:
            return await future
        except asyncio.CancelledError:
            self.write({"type": "control_cancel_request", "request_id": request_id})
            raise
        finally:
            self._pending.pop(request_id, None)

    def answer(self, line: Line) -> None:
        """A ``control_response`` line from the program."""
        response = line.get("response")
        if not isinstance(response, dict):
            return
        future = self._pending.get(str(response.get("request_id")))
        if future is None or future.done():
            return
        if response.get("subtype") == "error":
            future.set_exception(ControlError(str(response.get("error") or "error")))
        else:
            body = response.get("response")
            future.set_result(body if isinstance(body, dict) else {})

    def close(self) -> None:
        """Input ended: nothing can be answered any more."""
        self.closed = True
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ControlError("the controlling program's input closed"))


# ---- can_use_tool ---------------------------------------------------------------------


class ControlApprover:
    """The permission gate's approver: its question goes to the program's ``can_use_tool``."""

    def __init__(self, channel: ControlChannel, interrupt: Callable[[], None]) -> None:
        self.channel = channel
        self.interrupt = interrupt

    async def __call__(self, request: PermissionRequest) -> PermissionDecision:
        call = CURRENT_CALL.get()
        tool_input = dict(call.input) if call is not None else {}
        body: Line = {
            "subtype": "can_use_tool",
            "tool_name": claude_tool_name(request.tool_name),
            "input": claude_input(request.tool_name, tool_input),
            "permission_suggestions": [],
            "tool_use_id": call.id if call is not None else None,
            "description": request.summary,
        }
        try:
            answer = await self.channel.request(body)
        except ControlError as exc:
            return PermissionDecision(False, reason=f"the permission callback failed: {exc}")
        return self._decision(request.tool_name, tool_input, answer)

    def _decision(self, name: str, tool_input: Line, answer: Line) -> PermissionDecision:
        if answer.get("behavior") == "allow":
            updated = answer.get("updatedInput")
            if isinstance(updated, dict) and our_input(name, updated) != tool_input:
                return PermissionDecision(
                    False, reason="the permission callback changed the call's input, which "
                    "mini-claude does not support; call again with the input wanted")
            return PermissionDecision(True)
        if answer.get("interrupt"):
            self.interrupt()
        message = answer.get("message")
        return PermissionDecision(False, reason=str(message) if message else None)


# ---- hooks ----------------------------------------------------------------------------


def hook_layer(channel: ControlChannel, config: object) -> SettingsFile | None:
    """The hooks the program registered in ``initialize``, as one settings layer whose
    hooks answer through the channel (run by the same hook runner as command hooks)."""
    if not isinstance(config, dict):
        return None
    commands: list[HookCommand] = []
    answer = _hook_answerer(channel)
    for event, matchers in config.items():
        if event not in HOOK_EVENTS or not isinstance(matchers, list):
            continue
        for matcher in matchers:
            if not isinstance(matcher, dict):
                continue
            pattern = matcher.get("matcher") or ""
            timeout = matcher.get("timeout")
            seconds = float(timeout) if isinstance(timeout, int | float) and timeout > 0 else (
                DEFAULT_HOOK_TIMEOUT)
            for callback_id in matcher.get("hookCallbackIds") or []:
                hook = HookCommand(event, str(pattern), str(callback_id), seconds,
                                   SDK_HOOKS_SOURCE, answer=answer)
                commands.append(with_our_tool_names(hook))
    if not commands:
        return None
    return SettingsFile(SDK_HOOKS_SOURCE, "user", b"", hooks=commands)


def _hook_answerer(
    channel: ControlChannel,
) -> Callable[[HookCommand, dict[str, Any]], Awaitable[HookRun]]:
    async def answer(hook: HookCommand, payload: dict[str, Any]) -> HookRun:
        payload = _claude_payload(payload)
        call = CURRENT_CALL.get()
        body = {"subtype": "hook_callback", "callback_id": hook.command, "input": payload,
                "tool_use_id": call.id if call is not None else None}
        try:
            async with asyncio.timeout(hook.timeout):
                output = await channel.request(body)
        except TimeoutError:
            return HookRun(hook, None, "", "", timed_out=True)
        except ControlError as exc:
            return HookRun(hook, None, "", "", error=f"failed: {exc}")
        import json

        return HookRun(hook, 0, json.dumps(output), "")

    return answer


def _claude_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """A hook's input as Claude Code writes it (its tool names and input keys)."""
    name = payload.get("tool_name")
    if not isinstance(name, str):
        return payload
    shown = dict(payload)
    shown["tool_name"] = claude_tool_name(name)
    tool_input = payload.get("tool_input")
    if isinstance(tool_input, dict):
        shown["tool_input"] = claude_input(name, tool_input)
    return shown


# ---- SDK-hosted MCP servers -----------------------------------------------------------


def mcp_transport(channel: ControlChannel) -> Callable[[str], Any]:
    """The MCP client transport of a server the program hosts: JSON-RPC messages travel
    as ``mcp_message`` control requests, and the answers come back to the client."""

    def for_server(server_name: str) -> Any:
        return _tunnel(channel, server_name)

    return for_server


@contextlib.asynccontextmanager
async def _tunnel(channel: ControlChannel, server_name: str) -> AsyncIterator[Any]:
    import anyio
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    to_client_send, to_client = anyio.create_memory_object_stream[Any](16)
    from_client, from_client_receive = anyio.create_memory_object_stream[Any](16)

    async def carry(message: Any) -> None:
        data = message.message.model_dump(by_alias=True, mode="json", exclude_unset=True)
        try:
            answer = await channel.request(
                {"subtype": "mcp_message", "server_name": server_name, "message": data})
        except ControlError as exc:
            if "id" in data:
                await to_client_send.send(exc)
            return
        reply = answer.get("mcp_response")
        if "id" in data and isinstance(reply, dict) and "id" in reply:
            await to_client_send.send(SessionMessage(jsonrpc_message_adapter.validate_python(
                reply)))

    async def pump() -> None:
        async with from_client_receive:
            async for message in from_client_receive:
                await carry(message)

    async with anyio.create_task_group() as group:
        group.start_soon(pump)
        try:
            yield to_client, from_client
        finally:
            group.cancel_scope.cancel()
            await to_client_send.aclose()
