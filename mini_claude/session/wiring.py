"""Wires one session together: settings in, a ready Agent out. The CLI and the REPL call this."""

from __future__ import annotations

import contextlib
import glob
import os
import time
from collections.abc import AsyncIterator, Callable, Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mini_claude.agent.hooks import HookRunner
from mini_claude.agent.lifecycle import LifecycleHooks
from mini_claude.agent.subagent import add_task_tool, task_transcripts_dir
from mini_claude.checkpoints.recorder import Checkpointer
from mini_claude.checkpoints.restore import recover
from mini_claude.checkpoints.store import CheckpointStore, project_folder
from mini_claude.context.store import DiskResultStore, cleanup_old_results
from mini_claude.context.window import WindowWatch, adopt_rejected_window, keep_learnt_window
from mini_claude.conversation import Conversation
from mini_claude.mcp.manager import McpManager
from mini_claude.model_facts import ModelLookup
from mini_claude.models import resolve_model
from mini_claude.permissions.asking import Approver
from mini_claude.permissions.mode_table import PermissionMode
from mini_claude.permissions.rules import Rule
from mini_claude.private_dirs import ensure_private_dir
from mini_claude.project.agent_types import AgentType
from mini_claude.project.commands import CommandCatalog, find_commands
from mini_claude.project.instructions import (
    ProjectInstructions,
    approve_imports,
    build_system_prompt,
    find_instructions,
)
from mini_claude.project.rules import PathRules
from mini_claude.project.skills import SkillCatalog, find_skills
from mini_claude.protocol import PromptTooLong, Provider
from mini_claude.providers import PLACEHOLDER_KEY, create_provider
from mini_claude.providers.fallback import ModelFallback
from mini_claude.secrets import api_keys
from mini_claude.session.lock import SessionBusy, SessionLock, lock_path, sweep_stale_locks
from mini_claude.session.mentions import PreparedMessage, prepare
from mini_claude.session.permission_setup import PermissionSetup
from mini_claude.session.settings_files import SettingsFile
from mini_claude.session.state import read_saved_state
from mini_claude.session.user_shell import PendingContext, run_user_shell
from mini_claude.settings import Settings
from mini_claude.tools.background import BackgroundShells
from mini_claude.tools.base import ToolContext
from mini_claude.tools.builtin.run_shell import child_environment
from mini_claude.tools.builtin.task import TOOL_NAME as TASK_TOOL
from mini_claude.tools.registry import ToolRegistry, default_registry
from mini_claude.transcript import (
    LoadedSession,
    Transcript,
    fork_transcript,
    list_sessions,
    load_session,
    new_session_id,
)

DEFAULT_THINKING_TOKENS = 8_000

if TYPE_CHECKING:  # the agent chain is imported when the first agent is built
    from mini_claude import events as ev
    from mini_claude.agent.loop import Agent


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
    model_lookup: ModelLookup | None = field(init=False, default=None)
    # The transcript as written, when this conversation was resumed (for its recap).
    resumed: LoadedSession | None = field(init=False, default=None)
    _last_thinking: int = field(init=False, default=0)
    _fallback_pending: str | None = field(init=False, default=None)
    lock: SessionLock | None = field(init=False, default=None)
    # --allowed-tools / --disallowed-tools (REPL and print mode), and --permission-mode (or --yes)
    flag_allow: list[Rule] = field(default_factory=list)
    flag_deny: list[Rule] = field(default_factory=list)
    mode_flag: PermissionMode | None = None
    # Settings from the command line or the controlling program (--settings, --add-dir,
    # its hooks), ranked above every file; sub-agent types from --agents.
    extra_settings: list[SettingsFile] = field(default_factory=list)
    extra_agents: dict[str, AgentType] = field(default_factory=dict)
    # --system-prompt(-file) ("base") and --append-system-prompt ("append"), kept across
    # every rebuild of the system prompt.
    system_prompt_parts: dict[str, str] = field(default_factory=dict)
    mcp: McpManager = field(init=False)
    # Stamps saved results' file names; a benchmark passes its simulated clock for the same bytes.
    wall_clock: Callable[[], float] = time.time
    skills: SkillCatalog = field(init=False)
    permission_setup: PermissionSetup = field(init=False)
    _recorded_plan: str | None = field(init=False, default=None)
    commands: CommandCatalog = field(init=False)
    # Background shells outlive /clear and a model switch; they end with the session.
    shells: BackgroundShells = field(default_factory=BackgroundShells)
    checkpoints: CheckpointStore = field(init=False)
    checkpointer: Checkpointer = field(init=False)
    # `!command` output and `#` notes, sent before the user's next message.
    pending: PendingContext = field(default_factory=PendingContext)

    @classmethod
    def open(cls, settings: Settings, cwd: Path, approver: Approver, *,
             provider: Provider | None = None, **options: Any) -> Session:
        """Every front end's way in: the provider built from the settings unless one is
        given (a benchmark's wrapped one); ProviderError when it cannot be. ``options`` are
        the session's other fields (flags, extra settings, clocks)."""
        return cls(settings, cwd, provider or create_provider(settings), approver, **options)

    async def prepare(self, text: str, *,
                      withheld: Collection[Path] = ()) -> PreparedMessage:
        """A message as the model gets it, the same in every front end and for a custom
        command: its ``@path`` files attached and its images read (nothing under
        ``withheld``, held for the user's approval), and the output of the user's own
        ``!commands`` and ``#`` notes put before it (mentions are read from ``text`` alone)."""
        prepared = await prepare(self.agent, text, withheld=withheld)
        return replace(prepared, text=self.pending.with_message(prepared.text))

    def run_user_shell(self, command: str) -> AsyncIterator[ev.Event]:
        """``!command``: run as the user's own; its output waits for the next message."""
        return run_user_shell(self.agent, command, self.pending)

    async def aclose(self) -> None:
        """End the session, in one order for every front end.

        The agent first (no notes request is left to write to the transcript or use the
        provider), then the MCP servers and the background shells (their last output and
        checkpoints may still be recorded), the checkpointer (its listing of the project kept
        for the next run), then the provider's connections; the transcript last, and the
        session lock with it, so no other process takes the session over while anything could
        still write to it."""
        agent: Agent | None = getattr(self, "agent", None)
        try:
            if agent is not None:
                await agent.close()
            await self.mcp.close()
            self.shells.stop_all()  # no thread: the loop may be shutting down after a signal
            checkpointer: Checkpointer | None = getattr(self, "checkpointer", None)
            if checkpointer is not None:
                checkpointer.close()
            await self.provider.close()
        finally:
            if agent is not None:
                agent.transcript.close()  # lets the lock go with its last transcript

    def __post_init__(self) -> None:
        with contextlib.suppress(OSError):  # unwritable: the transcript reports it
            ensure_private_dir(self.settings.home)
        self.checkpoints = CheckpointStore(project_folder(self.settings.checkpoints_dir, self.cwd))
        self._recover_rewind()
        self.instructions = find_instructions(self.cwd, self.settings.home)
        self.warnings.extend(self.instructions.warnings)
        self.skills = find_skills(self.cwd, self.settings.home)
        self.warnings.extend(self.skills.warnings)
        self.commands = find_commands(self.cwd, self.settings.home)
        self.warnings.extend(self.commands.warnings)
        if not self.skills.skills:
            self.registry.remove("skill")  # nothing to load: no tool to offer
        self.system_prompt = build_system_prompt(
            self.cwd, self.instructions, skills=self.skills.prompt_section(),
            **self.system_prompt_parts,
        )
        if self.settings.task_tool and self.registry.get(TASK_TOOL) is None:
            self.warnings.extend(add_task_tool(self))
        self.permission_setup = PermissionSetup.load(
            self.settings, self.cwd, self.flag_allow, self.flag_deny, self.mode_flag,
            known_tools=self.registry.names(), extra=self.extra_settings,
        )
        self.warnings.extend(self.permission_setup.warnings)
        self.permission_setup.permissions.on_change.append(self._record_plan_approval)
        # Reads the server lists only; servers start when the UI calls ``mcp.start()``.
        self.mcp = McpManager(self.settings, self.cwd, self.registry)
        self.mcp.on_tools_changed.append(self._tools_changed)
        self.warnings.extend(self.mcp.notices)
        self.mcp.notices.clear()

    def _recover_rewind(self) -> None:
        """A rewind killed half-way is finished or undone before anything else happens."""
        try:
            done = recover(self.checkpoints, self.cwd)
        except OSError as exc:
            done = f"an interrupted rewind could not be finished: {exc.strerror or exc}"
        if done is not None:
            self.warnings.append(done)

    def _checkpointer_for(self, transcript: Transcript) -> Checkpointer:
        replaced: Checkpointer | None = getattr(self, "checkpointer", None)
        if replaced is not None:
            replaced.close()  # its watch on the project's folders goes with it
        self.checkpointer = Checkpointer(
            self.checkpoints, self.session_id, transcript.write,
            max_file_bytes=self.settings.checkpoint_max_file_bytes,
            max_store_bytes=self.settings.checkpoint_store_max_bytes,
            root=self.cwd if self.settings.checkpoint_commands else None,
        )
        return self.checkpointer

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

    def _build_agent(self, transcript: Transcript, conversation: Conversation,
                     source: str = "startup") -> Agent:
        from mini_claude.agent.loop import Agent

        self._look_up_model()
        store = DiskResultStore(self.settings, self.session_id, self.wall_clock)
        context = ToolContext(
            root=self.cwd,
            settings=self.settings,
            approve=self.approver,
            session_id=self.session_id,
            env=self.permission_setup.command_environment(
                child_environment(os.environ, self.settings)
            ),
            transcript_path=transcript.path,
            results_folder=store.folder,
            rules=self.permission_setup.permissions,
            skills=self.skills,
            shells=self.shells,
            checkpoints=self._checkpointer_for(transcript),
        )
        provider: Provider = WindowWatch(self.provider, self._window_refused)
        if self.settings.fallback_model:
            provider = ModelFallback(provider, self.settings.fallback_model, self._fell_back)
        agent = Agent(
            settings=self.settings,
            provider=provider,
            registry=self.registry,
            tool_context=context,
            system_prompt=self.system_prompt,
            transcript=transcript,
            store=store,
            clock=self.clock,
            conversation=conversation,
            hooks=self._hook_runner(context.env, transcript),
            path_rules=PathRules(self.instructions.path_rules, self.cwd),
            lifecycle=LifecycleHooks(continue_limit=self.settings.stop_hook_limit),
        )
        agent.lifecycle.session_source = source  # SessionStart runs before the first message
        agent.settings_update = self._reported_settings
        return agent

    # ---- imports held for approval ------------------------------------------------------

    def decide_imports(self, approved: bool) -> None:
        """Remember the answer about the project's imports from outside it; approved ones
        go into the instructions now (before the first request, so no cache is lost)."""
        approve_imports(self.settings.home, self.cwd, self.instructions.held, approved)
        if not approved:
            return
        self.instructions = find_instructions(self.cwd, self.settings.home)
        self.system_prompt = build_system_prompt(
            self.cwd, self.instructions, skills=self.skills.prompt_section(),
            **self.system_prompt_parts,
        )
        agent: Agent | None = getattr(self, "agent", None)
        if agent is not None and not agent.conversation.messages:
            agent.reconfigure(system_prompt=self.system_prompt)

    # ---- project settings and hooks --------------------------------------------------------

    def project_hooks_status(self) -> str:
        """"none", or the trust record's word ("approved", "denied", "unknown") for the
        project settings files that want to grant something (hooks, rules, env, a mode)."""
        return self.permission_setup.trust_status()

    def decide_project_hooks(self, approved: bool) -> None:
        """Remember the user's answer for these files' content; approved grants count now."""
        self.permission_setup.decide(approved)
        agent: Agent | None = getattr(self, "agent", None)
        if agent is not None:
            env = self.permission_setup.command_environment(
                child_environment(os.environ, self.settings)
            )
            agent.reconfigure(hooks=self._hook_runner(env, agent.transcript), command_env=env)

    def _record_plan_approval(self) -> None:
        """An approved plan goes into the transcript, so a resumed session keeps it."""
        permissions = self.permission_setup.permissions
        agent: Agent | None = getattr(self, "agent", None)
        plan = permissions.approved_plan
        if agent is None or plan is None or plan == self._recorded_plan:
            return
        self._recorded_plan = plan
        agent.transcript.event("plan_approved", plan=plan, mode=permissions.mode)

    def _hook_runner(self, env: dict[str, str] | None, transcript: Transcript) -> HookRunner:
        """The user's hooks always; the project's only once its files were approved."""
        return HookRunner(
            self.permission_setup.hooks(),
            cwd=self.cwd,
            env=env,
            session_id=self.session_id,
            transcript_path=str(transcript.path),
        )

    def start_new(self, session_id: str | None = None) -> Agent:
        """A fresh conversation with its own transcript (also what /clear does)."""
        source = "clear" if self.session_id else "startup"
        self.session_id = session_id or new_session_id()
        self.permission_setup.permissions.approved_plan = None  # a plan belongs to its talk
        transcript = Transcript.create(
            self.settings.transcripts_dir, self.session_id, self._meta(), secrets=self.secrets
        )
        self._adopt(self._lock_for(transcript.path), transcript)
        self.resumed = None
        self.agent = self._build_agent(transcript, Conversation(), source)
        return self.agent

    def resume(self, session_id: str | None, *, fork: bool = False) -> Agent:
        """Continue the newest session of this folder, or the one named.

        With ``fork`` a new session starts from a copy of that one's history; the
        original is only read.
        """
        path = self._find_transcript(session_id)
        if fork:
            path = self._fork(path)
        lock = self._lock_for(path)  # before loading: the other process may still be writing
        try:
            loaded = load_session(path)
        except BaseException:
            if lock is not None and lock is not self.lock:
                lock.release()  # the session in use (if any) stays as it was
            raise
        self.warnings.extend(loaded.warnings)
        self.resumed = loaded
        self.session_id = loaded.session_id
        transcript = Transcript(path, secrets=self.secrets)
        self._adopt(lock, transcript)
        if loaded.repair is not None:
            transcript.message(loaded.repair)
        transcript.event("resumed")
        self.agent = self._build_agent(transcript, loaded.conversation, "resume")
        saved = read_saved_state(path)
        context = self.agent.tool_context
        context.plan.replace(saved.todos)
        for name in saved.skills:
            if self.skills.get(name) is not None:
                context.loaded_skills.add(name)
        if saved.approved_plan is not None:  # the mode itself comes from this start's settings
            self.permission_setup.permissions.approved_plan = saved.approved_plan
            self._recorded_plan = saved.approved_plan
        if saved.notes is not None:
            self.agent.steps.restore_notes(saved.notes.text, saved.notes.covered,
                                             saved.notes.history_tokens)
        self.agent.costs.replay(loaded.usage, str(loaded.meta.get("model") or self.settings.model))
        last = loaded.last_prompt
        if last is not None:
            self.agent.steps.resume_meter(last)
        return self.agent

    def _fork(self, origin: Path) -> Path:
        forked_id = new_session_id()
        try:
            path = fork_transcript(origin, self.settings.transcripts_dir, forked_id)
        except OSError as exc:
            raise SessionError(f"cannot fork {origin.stem}: {exc.strerror or exc}") from None
        with contextlib.suppress(OSError):  # its checkpoints are the fork's too
            self.checkpoints.copy_refs(origin.stem, forked_id)
        return path

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
                if not matches:  # a sub-agent's transcript, in its session's folder
                    parent = session_id.split("-task-")[0]
                    folder = task_transcripts_dir(self.settings, parent)
                    matches = sorted(folder.glob(f"{glob.escape(session_id)}*.jsonl"))
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
        self._use_model(model)
        self.agent.reconfigure(self.settings)

    def _use_model(self, model: str) -> None:
        chosen = resolve_model(model, self.settings.provider, os.environ)
        self.settings = self.settings.with_model(chosen.model, chosen.plan_model)
        self._look_up_model()

    def _fell_back(self, given_up: str, fallback: str) -> None:
        """The provider went on with the fallback model; from the next turn the session's
        settings (window, prices, status line) follow it."""
        self.agent.transcript.event("model_fallback", model=given_up, fallback=fallback)
        self._fallback_pending = fallback

    def toggle_thinking(self, tokens: int | None = None) -> int:
        """`/think [tokens]`: extended thinking on (with this budget) or off; returns the
        budget now in force (0 = off). Takes effect from the next request."""
        current = self.settings.thinking_tokens
        if tokens is None:
            tokens = 0 if current else (self._last_thinking or DEFAULT_THINKING_TOKENS)
        if current:
            self._last_thinking = current
        self.settings = keep_learnt_window(
            self.settings.with_overrides(thinking_tokens=tokens), self.agent.settings
        )
        self.agent.reconfigure(self.settings)
        return tokens

    def _look_up_model(self) -> None:
        """Ask the provider about the model (the table answers meanwhile); never waits for it."""
        settings = self.settings
        key = settings.api_key or (PLACEHOLDER_KEY if settings.base_url else None)
        if key is None:
            self.model_lookup = None
            return
        if self.model_lookup is None or self.model_lookup.model != settings.model:
            self.model_lookup = ModelLookup(settings, key).start()
        self.settings = self._with_facts(self.settings)

    def _window_refused(self, model: str, error: PromptTooLong) -> None:
        """A server refused one of the agent's prompts with its maximum: that is the window
        of this model from now on (a summary model's refusal says nothing about it)."""
        agent: Agent | None = getattr(self, "agent", None)
        if agent is None or model != agent.settings.model:
            return
        if adopt_rejected_window(agent, error):
            self.settings = keep_learnt_window(self.settings, agent.settings)

    def _reported_settings(self) -> Settings | None:
        """The settings the agent's next request needs when they changed, else None: the
        window the Models API reported, or one a server enforced. The agent's own settings
        are the base, so a command's model or plan model for one turn stays; the facts
        apply only to the model they describe."""
        agent: Agent | None = getattr(self, "agent", None)
        if self._fallback_pending is not None:  # the provider went on with the fallback
            self._use_model(self._fallback_pending)
            self._fallback_pending = None
            return self.settings
        if agent is not None:
            self.settings = keep_learnt_window(self.settings, agent.settings)
        self.settings = self._with_facts(self.settings)
        if agent is None:
            return None
        updated = self._with_facts(agent.settings)
        return updated if updated is not agent.settings else None

    def _with_facts(self, settings: Settings) -> Settings:
        """``settings`` with the lookup's window for their model; a window a server enforced
        is only ever lowered."""
        facts = self.model_lookup.facts if self.model_lookup is not None else None
        if facts is None or facts.window is None or facts.model != settings.model:
            return settings
        if facts.rejected:
            if settings.rejected_window is not None and settings.rejected_window <= facts.window:
                return settings
            return settings.with_overrides(
                rejected_window=facts.window, window_rejected_by=facts.source
            )
        if settings.reported_window == facts.window:
            return settings
        thinking = (
            "adaptive" if facts.thinking_adaptive
            else "enabled" if facts.thinking_enabled else None
        )
        return settings.with_overrides(
            reported_window=facts.window, window_reported_by=facts.source,
            reported_thinking=thinking,
        )


def startup_housekeeping(settings: Settings) -> int:
    """Remove persisted results past their retention period and the lock files of killed
    sessions; never fails the start."""
    sweep_stale_locks(settings.transcripts_dir)
    try:
        return cleanup_old_results(settings, time.time())
    except OSError:
        return 0
