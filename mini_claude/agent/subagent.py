"""Sub-agents: the runner behind the task tool.

A sub-agent is a whole Agent of its own: its own conversation, pipeline, compaction
(on its own window) and transcript, under the session's transcript folder; it shares
the session's provider, its permission rules, its hooks and the user's answers. Only its final
text goes back, as the task tool's result. Its calls, tokens and dollars count in the
session's totals as they happen, and its progress reaches the status bar.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Literal, Protocol

from mini_claude import events as ev
from mini_claude.agent.hooks import HookRunner
from mini_claude.agent.lifecycle import LifecycleHooks
from mini_claude.agent.loop import Agent
from mini_claude.context.store import DiskResultStore
from mini_claude.conversation import Conversation
from mini_claude.models import resolve_model
from mini_claude.permissions.asking import Approver, PermissionDecision, PermissionRequest
from mini_claude.pricing import CostTracker
from mini_claude.project.agent_types import DEFAULT_TYPE, AgentCatalog, AgentType, load_catalog
from mini_claude.project.instructions import ProjectInstructions, build_system_prompt
from mini_claude.protocol import Provider, ToolOutput, Usage
from mini_claude.secrets import api_keys
from mini_claude.settings import Settings
from mini_claude.tools.base import Tool, ToolContext
from mini_claude.tools.builtin.task import TOOL_NAME, TaskRequest, TaskTool
from mini_claude.tools.common import error_output
from mini_claude.tools.permission_gate import EXIT_PLAN_TOOL
from mini_claude.tools.registry import ToolRegistry
from mini_claude.transcript import Transcript

NO_ANSWER = "(the sub-agent finished without a final answer)"
TaskState = Literal["running", "done", "failed", "interrupted"]


class ParentSession(Protocol):
    """What a runner reads from the session, at the moment a task starts."""

    settings: Settings
    cwd: Path
    provider: Provider
    instructions: ProjectInstructions
    registry: ToolRegistry
    session_id: str
    agent: Agent

    @property
    def clock(self) -> Callable[[], float]: ...


class RollupCosts(CostTracker):
    """A sub-agent's tracker: every call is booked on the parent's tracker too."""

    def __init__(self, parent: CostTracker) -> None:
        super().__init__()
        self.parent = parent

    def add(self, model: str, usage: Usage, *, summary: bool = False, ping: bool = False) -> float:
        cost = self.parent.add(model, usage, summary=summary, ping=ping)
        self.parent.subagents.count(usage, cost)
        return super().add(model, usage, summary=summary, ping=ping)


def task_transcripts_dir(settings: Settings, parent_id: str) -> Path:
    """``transcripts/<session id>/``: the sub-agents of one session, beside its own file."""
    return settings.transcripts_dir / parent_id


def child_tools(registry: ToolRegistry, agent_type: AgentType) -> ToolRegistry:
    """The type's tools, as the session has them; never a task inside a task."""
    names = agent_type.tools if agent_type.tools is not None else tuple(registry.names())
    tools: list[Tool] = []
    for name in names:
        tool = registry.get(name)
        if tool is not None and name not in (TOOL_NAME, EXIT_PLAN_TOOL):
            tools.append(tool)
    return ToolRegistry(tools)


def child_hooks(parent: HookRunner, task_id: str, transcript: Transcript) -> HookRunner:
    """The parent's hooks, as they stand when the task starts, naming the child's session.

    A child is held to every guard of its parent: the user's PreToolUse hooks (and an
    approved project's) see and can block each of its calls too.
    """
    return HookRunner(
        list(parent.commands),
        cwd=parent.cwd,
        env=parent.env,
        session_id=task_id,
        transcript_path=str(transcript.path),
    )


class SubagentRunner:
    """Runs one task call to the end; several may run at once."""

    def __init__(self, session: ParentSession, catalog: AgentCatalog) -> None:
        self.session = session
        self.catalog = catalog
        self._questions = asyncio.Lock()  # one permission question on screen at a time

    async def __call__(self, request: TaskRequest, ctx: ToolContext) -> ToolOutput:
        agent_type = self.catalog.get(request.agent_type)
        if agent_type is None:
            known = ", ".join(self.catalog.names())
            return error_output(f"unknown agent_type {request.agent_type!r}; known types: {known}")
        parent = self.session.agent
        child = self._child(request, agent_type, ctx)
        run = _Run(request, child, parent)
        parent.transcript.event(
            "task_started",
            task_id=run.task_id,
            transcript=str(child.transcript.path),
            description=request.description,
            agent_type=agent_type.name,
            model=child.settings.model,
        )
        try:
            return await run.to_end()
        finally:
            await child.close()  # a notes update still on its way would find no one
            parent.costs.api_seconds += child.costs.api_seconds
            child.transcript.event("task_end", state=run.state, calls=run.calls)
            parent.transcript.event(
                "task_finished",
                task_id=run.task_id,
                state=run.state,
                calls=run.calls,
                requests=child.costs.requests,
                usage=asdict(child.costs.usage),
                cost_usd=child.costs.dollars,
            )
            child.transcript.close()

    def _child(self, request: TaskRequest, agent_type: AgentType, ctx: ToolContext) -> Agent:
        session = self.session
        settings = session.settings
        typed = agent_type.model and resolve_model(agent_type.model, settings.provider, os.environ)
        model = (typed.model if typed else None) or settings.task_model or settings.model
        child_settings = settings.with_overrides(
            model=model, plan_model=typed.plan_model if typed else settings.plan_model
        )
        task_id = f"{session.session_id}-task-{uuid.uuid4().hex[:6]}"
        transcript = Transcript.create(
            task_transcripts_dir(settings, session.session_id),
            task_id,
            {
                "cwd": str(session.cwd),
                "provider": settings.provider,
                "model": model,
                "parent": session.session_id,
                "agent_type": agent_type.name,
                "description": request.description,
            },
            secrets=api_keys(settings),
        )
        context = ToolContext(
            root=ctx.root,
            settings=child_settings,
            approve=self._one_question_at_a_time(ctx, request.description),
            session_id=task_id,
            allowed_subjects=ctx.allowed_subjects,  # "don't ask again" holds for both
            env=ctx.env,
            rules=ctx.rules,
            denials=ctx.denials,
            shells=ctx.shells,  # the session's: listed in /shells, stopped when it ends
            checkpoints=ctx.checkpoints,  # the parent's: its user message caused the edit
        )
        child = Agent(
            settings=child_settings,
            provider=session.provider,
            registry=child_tools(session.registry, agent_type),
            tool_context=context,
            system_prompt=build_system_prompt(
                session.cwd, session.instructions, base=agent_type.prompt
            ),
            transcript=transcript,
            store=DiskResultStore(child_settings, task_id),
            clock=session.clock,
            conversation=Conversation(),
            hooks=child_hooks(session.agent.hooks, task_id, transcript),
            lifecycle=LifecycleHooks("SubagentStop", settings.stop_hook_limit),
        )
        child.costs = RollupCosts(session.agent.costs)
        child.steps.end_with_turn(None)  # its one turn is its run: no notes nobody would read
        return child

    def _one_question_at_a_time(self, ctx: ToolContext, description: str) -> Approver:
        """The parent's approver, asked by one sub-agent at a time, saying which one asks."""
        approve = ctx.approve

        async def ask(request: PermissionRequest) -> PermissionDecision:
            async with self._questions:
                if request.subject in ctx.allowed_subjects:
                    return PermissionDecision(True)  # allowed meanwhile, for another task
                labelled = replace(request, summary=f"[task: {description}] {request.summary}")
                return await approve(labelled)

        return ask


class _Run:
    """One sub-agent's turn, followed for the status bar and the result."""

    def __init__(self, request: TaskRequest, child: Agent, parent: Agent) -> None:
        self.request = request
        self.child = child
        self.parent = parent
        self.task_id = child.tool_context.session_id
        self.calls = 0
        self.state: TaskState = "running"

    async def to_end(self) -> ToolOutput:
        self._publish()
        final: str | None = None
        error: str | None = None
        try:
            async for event in self.child.turn(self.request.prompt):
                if isinstance(event, ev.ToolStarted):
                    self.calls += 1
                    self._publish()
                elif isinstance(event, ev.UsageReported):
                    self._publish()
                elif isinstance(event, ev.TurnFinished):
                    final = event.final_text
                elif isinstance(event, ev.TurnError):
                    error = event.message
                elif isinstance(event, ev.TurnLimitReached):
                    error = f"stopped after {event.requests} model calls"
        except asyncio.CancelledError:
            self.state = "interrupted"
            self._publish()
            raise
        self.state = "done" if error is None else "failed"
        self._publish()
        if error is not None:
            return error_output(f"the sub-agent stopped: {error}")
        return ToolOutput(final.strip() if final and final.strip() else NO_ANSWER)

    def _publish(self) -> None:
        costs = self.child.costs
        self.parent.publish(
            ev.TaskProgress(
                self.task_id,
                self.request.description,
                self.request.agent_type,
                self.calls,
                costs.usage.prompt_tokens + costs.usage.output_tokens,
                costs.dollars,
                self.state,
            )
        )


def add_task_tool(session: ParentSession) -> list[str]:
    """Give the session a task tool listing the agent types; returns the loading warnings."""
    catalog = load_catalog(session.cwd, session.settings.home)
    catalog.types.update(getattr(session, "extra_agents", {}))  # --agents, the SDK's
    types = [(t.name, t.description) for t in catalog.types.values()]
    tool = TaskTool(types, SubagentRunner(session, catalog), DEFAULT_TYPE)
    registry = session.registry
    tools = [t for name in registry.names() if (t := registry.get(name)) is not None]
    session.registry = ToolRegistry([*tools, tool])
    return catalog.warnings
