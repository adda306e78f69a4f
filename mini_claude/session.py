"""Wires one session together: settings in, a ready Agent out. The CLI and the REPL call this."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mini_claude.agent import Agent
from mini_claude.context.store import DiskResultStore, cleanup_old_results
from mini_claude.conversation import Conversation
from mini_claude.hooks import HookRunner, HookSettings, load_hook_settings, project_hooks_status
from mini_claude.private_dirs import ensure_private_dir
from mini_claude.protocol import Provider
from mini_claude.secrets import api_keys
from mini_claude.session_lock import SessionBusy, SessionLock, lock_path
from mini_claude.session_state import read_saved_state
from mini_claude.settings import Settings
from mini_claude.skills import SkillCatalog, find_skills
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
from mini_claude.trust import ProjectTrust


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
    skills: SkillCatalog = field(init=False)
    hook_settings: HookSettings = field(init=False)

    def __post_init__(self) -> None:
        with contextlib.suppress(OSError):  # unwritable: the transcript reports it
            ensure_private_dir(self.settings.home)
        self.instructions = find_instructions(self.cwd, self.settings.home)
        self.skills = find_skills(self.cwd, self.settings.home)
        self.warnings.extend(self.skills.warnings)
        if not self.skills.skills:
            self.registry.remove("skill")  # nothing to load: no tool to offer
        self.system_prompt = build_system_prompt(
            self.cwd, self.instructions, skills=self.skills.prompt_section()
        )
        self.hook_settings = load_hook_settings(
            self.cwd, self.settings.home, self.settings.hook_timeout_seconds
        )
        self.warnings.extend(self.hook_settings.warnings)
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

    @property
    def secrets(self) -> tuple[str, ...]:
        return api_keys(self.settings)

    def _meta(self) -> dict[str, object]:
        settings = self.settings
        return {"cwd": str(self.cwd), "provider": settings.provider, "model": settings.model}

    def _build_agent(self, transcript: Transcript, conversation: Conversation) -> Agent:
        store = DiskResultStore(self.settings, self.session_id)
        context = ToolContext(
            root=self.cwd,
            settings=self.settings,
            approve=self.approver,
            session_id=self.session_id,
            env=child_environment(os.environ, self.settings),
            rules=self.rules,
            skills=self.skills,
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
            hooks=self._hook_runner(context.env, transcript),
        )

    # ---- hooks ------------------------------------------------------------------------

    def project_hooks_status(self) -> str:
        """"none", or the trust record's word ("approved", "denied", "unknown") for the
        project settings file whose hooks want to run."""
        return project_hooks_status(self.hook_settings, self.cwd, self.settings.home)

    def decide_project_hooks(self, approved: bool) -> None:
        """Remember the user's answer for this file's content; approved hooks run from now on."""
        project = self.hook_settings.project
        if project is None:
            return
        trust = ProjectTrust(self.settings.home)
        record = trust.approve if approved else trust.deny
        record(self.cwd, project.path, project.content)
        agent: Agent | None = getattr(self, "agent", None)
        if agent is not None:
            agent.hooks = self._hook_runner(agent.tool_context.env, agent.transcript)

    def _hook_runner(self, env: dict[str, str] | None, transcript: Transcript) -> HookRunner:
        """The user's hooks always; the project's only once its file was approved."""
        settings = self.hook_settings
        commands = list(settings.user.commands) if settings.user else []
        if settings.project is not None and self.project_hooks_status() == "approved":
            commands += settings.project.commands
        return HookRunner(
            commands,
            cwd=self.cwd,
            env=env,
            session_id=self.session_id,
            transcript_path=str(transcript.path),
        )

    def start_new(self) -> Agent:
        """A fresh conversation with its own transcript (also what /clear does)."""
        self.session_id = new_session_id()
        transcript = Transcript.create(
            self.settings.transcripts_dir, self.session_id, self._meta(), secrets=self.secrets
        )
        self._hold(transcript.path, transcript)
        self.agent = self._build_agent(transcript, Conversation())
        return self.agent

    def resume(self, session_id: str | None) -> Agent:
        """Continue the newest session of this folder, or the one named."""
        path = self._find_transcript(session_id)
        self._hold(path)  # before loading: the other process may still be writing
        loaded = load_session(path)
        self.warnings.extend(loaded.warnings)
        self.session_id = loaded.session_id
        transcript = Transcript(path, secrets=self.secrets)
        if self.lock is not None:
            transcript.on_close(self.lock.attach())
        if loaded.repair is not None:
            transcript.message(loaded.repair)
        transcript.event("resumed")
        self.agent = self._build_agent(transcript, loaded.conversation)
        saved = read_saved_state(path)
        context = self.agent.tool_context
        context.plan.replace(saved.todos)
        for name in saved.skills:
            if self.skills.get(name) is not None:
                context.loaded_skills.add(name)
        return self.agent

    def _hold(self, path: Path, transcript: Transcript | None = None) -> None:
        """This process alone writes the session from now on (the last one is let go).

        Closing the transcript lets the lock go too.
        """
        if self.lock is not None and self.lock.path == lock_path(path):
            return  # already ours (resuming the session in use)
        try:
            lock = SessionLock.acquire(path)
        except SessionBusy as exc:
            raise SessionError(str(exc)) from None
        self._release()
        self.lock = lock
        if self.lock is not None and transcript is not None:
            transcript.on_close(self.lock.attach())

    def _release(self) -> None:
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def _find_transcript(self, session_id: str | None) -> Path:
        directory = self.settings.transcripts_dir
        if session_id:
            path = directory / f"{session_id}.jsonl"
            if not path.is_file():
                matches = sorted(directory.glob(f"{session_id}*.jsonl"))
                if len(matches) != 1:
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
