"""Wires one session together: settings in, a ready Agent out. The CLI and the REPL call this."""

from __future__ import annotations

import contextlib
import glob
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mini_claude.context.store import DiskResultStore, cleanup_old_results
from mini_claude.conversation import Conversation
from mini_claude.mcp.manager import McpManager
from mini_claude.private_dirs import ensure_private_dir
from mini_claude.protocol import Provider
from mini_claude.secrets import api_keys
from mini_claude.session_lock import SessionBusy, SessionLock, lock_path
from mini_claude.settings import Settings
from mini_claude.system_prompt import ProjectInstructions, build_system_prompt, find_instructions
from mini_claude.tools.base import Approver, ToolContext
from mini_claude.tools.permission_rules import PermissionRules, load_rules
from mini_claude.tools.registry import ToolRegistry, default_registry
from mini_claude.tools.run_shell import child_environment
from mini_claude.transcript import (
    Transcript,
    list_sessions,
    load_session,
    new_session_id,
)

if TYPE_CHECKING:  # the agent chain is imported when the first agent is built
    from mini_claude.agent import Agent


class SessionError(Exception):
    """A session cannot start (no transcript to resume, unreadable file); one line for the user."""


@dataclass
class Session:
    settings: Settings
    cwd: Path
    provider: Provider
    approver: Approver
    clock: Callable[[], float] = time.monotonic
    registry: ToolRegistry = field(default_factory=default_registry)
    instructions: ProjectInstructions = field(init=False)
    system_prompt: str = field(init=False)
    session_id: str = field(init=False, default="")
    agent: Agent = field(init=False)
    warnings: list[str] = field(default_factory=list)
    lock: SessionLock | None = field(init=False, default=None)
    rules: PermissionRules | None = None  # None: the rules of the settings files
    mcp: McpManager = field(init=False)
    # Stamps saved results' file names; a benchmark passes its simulated clock for the same bytes.
    wall_clock: Callable[[], float] = time.time

    def __post_init__(self) -> None:
        with contextlib.suppress(OSError):  # unwritable: the transcript reports it
            ensure_private_dir(self.settings.home)
        self.instructions = find_instructions(self.cwd, self.settings.home)
        self.system_prompt = build_system_prompt(self.cwd, self.instructions)
        if self.rules is None:
            loaded = load_rules(
                allowed=(),
                disallowed=(),
                cwd=self.cwd,
                home=self.settings.home,
                known_tools=self.registry.names(),
            )
            self.rules = loaded.rules
            self.warnings.extend(loaded.warnings)
        # Reads the server lists only; servers start when the UI calls ``mcp.start()``.
        self.mcp = McpManager(self.settings, self.cwd, self.registry)
        self.mcp.on_tools_changed.append(self._tools_changed)
        self.warnings.extend(self.mcp.notices)
        self.mcp.notices.clear()

    def _tools_changed(self) -> None:
        """An MCP server's tools arrived: the running conversation sees them from now on."""
        agent: Agent | None = getattr(self, "agent", None)
        if agent is not None:
            agent.refresh_tools()

    @property
    def secrets(self) -> tuple[str, ...]:
        return api_keys(self.settings)

    def _meta(self) -> dict[str, object]:
        settings = self.settings
        return {"cwd": str(self.cwd), "provider": settings.provider, "model": settings.model}

    def _build_agent(self, transcript: Transcript, conversation: Conversation) -> Agent:
        from mini_claude.agent import Agent

        store = DiskResultStore(self.settings, self.session_id, self.wall_clock)
        context = ToolContext(
            root=self.cwd,
            settings=self.settings,
            approve=self.approver,
            session_id=self.session_id,
            env=child_environment(os.environ, self.settings),
            rules=self.rules,
        )
        return Agent(
            settings=self.settings,
            provider=self.provider,
            registry=self.registry,
            tool_context=context,
            system_prompt=self.system_prompt,
            transcript=transcript,
            store=store,
            clock=self.clock,
            conversation=conversation,
        )

    def start_new(self, session_id: str | None = None) -> Agent:
        """A fresh conversation with its own transcript (also what /clear does)."""
        self.session_id = session_id or new_session_id()
        transcript = Transcript.create(
            self.settings.transcripts_dir, self.session_id, self._meta(), secrets=self.secrets
        )
        self._adopt(self._lock_for(transcript.path), transcript)
        self.agent = self._build_agent(transcript, Conversation())
        return self.agent

    def resume(self, session_id: str | None) -> Agent:
        """Continue the newest session of this folder, or the one named."""
        path = self._find_transcript(session_id)
        lock = self._lock_for(path)  # before loading: the other process may still be writing
        try:
            loaded = load_session(path)
        except BaseException:
            if lock is not None and lock is not self.lock:
                lock.release()  # the session in use (if any) stays as it was
            raise
        self.warnings.extend(loaded.warnings)
        self.session_id = loaded.session_id
        transcript = Transcript(path, secrets=self.secrets)
        self._adopt(lock, transcript)
        if loaded.repair is not None:
            transcript.message(loaded.repair)
        transcript.event("resumed")
        self.agent = self._build_agent(transcript, loaded.conversation)
        self.agent.costs.replay(loaded.usage, str(loaded.meta.get("model") or self.settings.model))
        return self.agent

    def _lock_for(self, path: Path) -> SessionLock | None:
        """The lock of the session at ``path``: ours already, or taken now (or SessionError)."""
        if self.lock is not None and self.lock.path == lock_path(path):
            return self.lock  # resuming the session in use
        try:
            return SessionLock.acquire(path)
        except SessionBusy as exc:
            raise SessionError(str(exc)) from None

    def _adopt(self, lock: SessionLock | None, transcript: Transcript) -> None:
        """This process alone writes the session from now on; the previous one is let go.

        Closing the transcript lets the lock go too.
        """
        if lock is not self.lock:
            self._release()
            self.lock = lock
        if lock is not None:
            transcript.on_close(lock.attach())

    def _release(self) -> None:
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def _find_transcript(self, session_id: str | None) -> Path:
        directory = self.settings.transcripts_dir
        if session_id:
            if "/" in session_id or session_id.startswith("."):
                raise SessionError(f"{session_id!r} is not a session id")
            path = directory / f"{session_id}.jsonl"
            if not path.is_file():
                matches = sorted(directory.glob(f"{glob.escape(session_id)}*.jsonl"))
                if len(matches) > 1:
                    names = ", ".join(m.stem for m in matches[:5])
                    more = f" and {len(matches) - 5} more" if len(matches) > 5 else ""
                    raise SessionError(
                        f"{session_id!r} matches {len(matches)} sessions ({names}{more}); "
                        "give more of the id"
                    )
                if not matches:
                    raise SessionError(f"no session {session_id!r} under {directory}")
                path = matches[0]
            return path
        sessions = list_sessions(directory, self.cwd)
        if not sessions:
            raise SessionError(f"no earlier session in {self.cwd} to continue")
        return sessions[0].path

    def switch_model(self, model: str) -> None:
        """`/model NAME`: later requests use the new model; the window follows it."""
        self.settings = self.settings.with_overrides(model=model)
        self.agent.reconfigure(self.settings)


def startup_housekeeping(settings: Settings) -> int:
    """Remove persisted results past their retention period; never fails the start."""
    try:
        return cleanup_old_results(settings, time.time())
    except OSError:
        return 0
