"""The Agent Client Protocol's agent side: editor sessions over mini-claude sessions.

Each ``session/new`` opens a session as print mode does (same settings, rules, hooks,
MCP servers and transcript) in the folder the editor names; each ``session/prompt`` runs
one turn whose events become ``session/update`` notifications; the permission gate's
questions become ``session/request_permission``; ``session/cancel`` stops the turn as
Esc does. ``session/load`` resumes a transcript and replays it to the editor.

Files are read and written on disk by the tools themselves, not through the client's
``fs/*`` methods, even when the client offers them: the tools' guards (the project
boundary, special files and hard links, the stale-write check, checkpoints for
/rewind, atomic writes) work on the disk, and an editor sees each change in the tool
call's diff and reloads the file from disk as it does for any other program.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    CurrentModeUpdate,
    EmbeddedResourceContentBlock,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    RequestPermissionResponse,
    ResourceContentBlock,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
    TextContentBlock,
    TextResourceContents,
    ToolCallUpdate,
)

from mini_claude import __version__
from mini_claude import events as ev
from mini_claude.acp import updates
from mini_claude.acp.questions import EditorApprover, OpenCalls
from mini_claude.conversation import Message, TextBlock, ToolResultBlock, ToolUseBlock
from mini_claude.permissions.mode_table import MODES, parse_mode

if TYPE_CHECKING:
    from acp.interfaces import Client

    from mini_claude.session.wiring import Session

STOP_REPEAT_SECONDS = 1.0  # a cancellation swallowed mid-spawn is repeated, as in the REPL
Block = Any  # one of the prompt's content blocks


@dataclass
class EditorSession:
    """One editor session: the mini-claude session, its open calls, its running turn."""

    session: Session
    calls: OpenCalls
    turn: asyncio.Task[None] | None = None
    outcome: list[ev.Event] = field(default_factory=list)  # how the last turn ended

    def stop_turn(self) -> None:
        """Cancel the turn, and again while it still runs (a swallowed cancellation)."""
        turn = self.turn
        if turn is not None and not turn.done():
            turn.cancel()
            asyncio.get_running_loop().call_later(STOP_REPEAT_SECONDS, self.stop_turn)


class EditorAgent:
    """What an ACP client talks to over stdio (``mini-claude --acp``)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.max_turns: int | None = getattr(args, "max_turns", None)  # per prompt
        self.client: Client | None = None
        self.sessions: dict[str, EditorSession] = {}

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    # ---- the protocol's methods ------------------------------------------------------------

    async def initialize(self, protocol_version: int, **_: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
            ),
            agent_info=Implementation(name="mini-claude", title="mini-claude",
                                      version=__version__),
        )

    async def new_session(self, cwd: str, **_: Any) -> NewSessionResponse:
        editor = await self._open(cwd, None)
        return NewSessionResponse(session_id=editor.session.session_id,
                                  modes=self._modes(editor))

    async def load_session(self, cwd: str, session_id: str, **_: Any) -> LoadSessionResponse:
        if session_id in self.sessions:
            raise RequestError.invalid_params({"details": f"session {session_id} is open"})
        editor = await self._open(cwd, session_id)
        for update in history_updates(editor.session.agent.conversation.messages,
                                      editor.session.cwd):
            await self._send(editor, update)
        return LoadSessionResponse(modes=self._modes(editor))

    async def set_session_mode(self, session_id: str, mode_id: str,
                               **_: Any) -> SetSessionModeResponse:
        editor = self._find(session_id)
        try:
            mode = parse_mode(mode_id)
        except ValueError as exc:
            raise RequestError.invalid_params({"details": str(exc)}) from None
        editor.session.permission_setup.permissions.set_mode(mode)
        return SetSessionModeResponse()

    async def prompt(self, session_id: str, prompt: list[Block], **_: Any) -> PromptResponse:
        editor = self._find(session_id)
        if editor.turn is not None and not editor.turn.done():
            raise RequestError.invalid_request({"details": "a turn is already running"})
        text = prompt_text(prompt, editor.session.cwd)
        if not text.strip():
            raise RequestError.invalid_params({"details": "the prompt is empty"})
        editor.outcome = []
        editor.turn = asyncio.create_task(self._run_turn(editor, text))
        try:
            await asyncio.shield(editor.turn)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                editor.stop_turn()  # the connection is closing: the turn goes with it
                raise
            return PromptResponse(stop_reason="cancelled")
        return PromptResponse(stop_reason=stop_reason(editor.outcome))

    async def cancel(self, session_id: str, **_: Any) -> None:
        editor = self.sessions.get(session_id)
        if editor is not None:
            editor.stop_turn()

    # ---- sessions ------------------------------------------------------------------------

    async def _open(self, cwd: str, session_id: str | None) -> EditorSession:
        from mini_claude.headless.options import HeadlessOptions
        from mini_claude.headless.printmode import start_mcp_servers
        from mini_claude.permissions.mode_table import mode_from_flags
        from mini_claude.permissions.rules import RuleError
        from mini_claude.protocol import ProviderError
        from mini_claude.session.wiring import Session, SessionError
        from mini_claude.settings_loading import UsageError, load_settings

        folder = Path(cwd)
        if not folder.is_absolute() or not folder.is_dir():
            raise RequestError.invalid_params({"details": f"{cwd} is not a folder"})
        options = HeadlessOptions.from_args(self.args)
        try:
            settings = load_settings(self.args, folder)
            allow, deny = options.flag_rules(folder)
            extra_prompt = options.read_system_prompt(folder)
        except (UsageError, RuleError) as exc:
            raise RequestError.invalid_params({"details": str(exc)}) from None
        except OSError as exc:
            raise RequestError.invalid_params(
                {"details": f"cannot read --system-prompt-file: {exc}"}) from None
        calls = OpenCalls()
        holder: list[EditorSession] = []
        approver = EditorApprover("", self._ask, lambda u: self._send(holder[0], u), calls,
                                  lambda: holder[0].stop_turn())
        try:
            session = Session.open(settings, folder, approver, flag_allow=allow, flag_deny=deny,
                                   mode_flag=mode_from_flags(self.args),
                                   system_prompt_parts=extra_prompt)
        except ProviderError as exc:
            raise RequestError.invalid_params({"details": exc.message}) from None
        try:
            if session_id:
                session.resume(session_id)
            else:
                session.start_new()
        except SessionError as exc:
            await session.provider.close()
            raise RequestError.invalid_params({"details": str(exc)}) from None
        approver.session_id = session.session_id
        editor = EditorSession(session, calls)
        holder.append(editor)
        self.sessions[session.session_id] = editor
        for warning in session.warnings:
            print(f"mini-claude: warning: {warning}", file=sys.stderr)
        session.permission_setup.permissions.on_change.append(
            lambda: self._mode_changed(editor))
        await start_mcp_servers(session, bool(getattr(self.args, "trust_project_mcp", False)),
                                sys.stderr)
        return editor

    def _modes(self, editor: EditorSession) -> SessionModeState:
        permissions = editor.session.permission_setup.permissions
        shown = [row for row in MODES.values()
                 if not row.asks_nothing or not permissions.bypass_disabled]
        return SessionModeState(
            current_mode_id=permissions.mode,
            available_modes=[SessionMode(id=row.name, name=row.title) for row in shown],
        )

    def _mode_changed(self, editor: EditorSession) -> None:
        """An approved plan (or the editor) changed the mode: the editor's picker follows."""
        mode = editor.session.permission_setup.permissions.mode
        update = CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode)
        task = asyncio.get_running_loop().create_task(self._send(editor, update))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())

    def _find(self, session_id: str) -> EditorSession:
        editor = self.sessions.get(session_id)
        if editor is None:
            raise RequestError.invalid_params({"details": f"no session {session_id}"})
        return editor

    async def _send(self, editor: EditorSession, update: Any) -> None:
        if self.client is not None:
            await self.client.session_update(session_id=editor.session.session_id,
                                             update=update)

    async def _ask(self, *, session_id: str, tool_call: ToolCallUpdate,
                   options: list[PermissionOption]) -> RequestPermissionResponse:
        if self.client is None:
            raise RequestError.internal_error({"details": "no client connected"})
        return await self.client.request_permission(session_id=session_id,
                                                    tool_call=tool_call, options=options)

    async def _run_turn(self, editor: EditorSession, text: str) -> None:
        from mini_claude.session.custom_commands import prompt_events

        session = editor.session
        async for event in prompt_events(session, text, self.max_turns):
            if isinstance(event, ev.ToolStarted):
                editor.calls.started(event.id, event.name)
            elif isinstance(event, ev.ToolFinished):
                editor.calls.finished(event.id)
            elif isinstance(event, ev.TurnError | ev.TurnLimitReached | ev.TurnFinished):
                editor.outcome.append(event)
            update = updates.update_for(event, session.cwd)
            if update is not None:
                await self._send(editor, update)
        errors = [e for e in editor.outcome if isinstance(e, ev.TurnError)]
        if errors and errors[-1].kind == "interrupted":
            raise asyncio.CancelledError
        if errors:
            raise RequestError(-32603, errors[-1].message)

    async def close(self) -> None:
        """The editor went away: every turn stopped, every session ended as print mode's."""
        from mini_claude.agent.lifecycle import end_session

        for editor in self.sessions.values():
            editor.stop_turn()
            if editor.turn is not None:
                await asyncio.gather(editor.turn, return_exceptions=True)
            session = editor.session
            agent = session.agent
            with contextlib.suppress(Exception):
                for warning in await end_session(agent.hooks, "other"):
                    print(f"mini-claude: warning: {warning}", file=sys.stderr)
            await session.aclose()
        self.sessions.clear()


def stop_reason(outcome: list[ev.Event]) -> Any:
    if any(isinstance(e, ev.TurnLimitReached) for e in outcome):
        return "max_turn_requests"
    return "end_turn"


def prompt_text(blocks: list[Block], root: Path) -> str:
    """The prompt as our text: a linked file is an ``@path`` mention (attached as in the
    REPL), an embedded one its text under its name."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"@{mention(block.uri, root)}")
        elif isinstance(block, EmbeddedResourceContentBlock) and isinstance(
            block.resource, TextResourceContents
        ):
            name = mention(block.resource.uri, root)
            parts.append(f"{name}:\n```\n{block.resource.text}\n```")
    return "\n".join(parts)


def mention(uri: str, root: Path) -> str:
    """``file:///project/src/a.py`` -> ``src/a.py`` (as typed after @)."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(uri)
    if parts.scheme != "file":
        return uri
    path = Path(unquote(parts.path))
    with contextlib.suppress(ValueError):
        return str(path.relative_to(root))
    return str(path)


def history_updates(messages: list[Message], root: Path) -> list[updates.Update]:
    """A resumed conversation as the updates that would have shown it."""
    shown: list[updates.Update] = []
    for message in messages:
        for block in message.blocks:
            if isinstance(block, TextBlock) and block.text:
                chunk = updates.user_chunk if message.role == "user" else updates.message_chunk
                shown.append(chunk(block.text))
            elif isinstance(block, ToolUseBlock):
                start = updates.tool_started(ev.ToolStarted(block.id, block.name, block.input),
                                             root)
                shown.append(start)
            elif isinstance(block, ToolResultBlock):
                shown.append(updates.tool_finished(ev.ToolFinished(block.tool_use_id,
                                                                   block.tool_name, block)))
    return shown
