"""The plan, the loaded skills, the background shells and the path rules shown so far as
re-attachment sources: all outlive every summary.

Each renders from the session's own state, never from what an earlier
boundary said, so the blocks are replaced at each compaction, not nested.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from mini_claude.context.reattach import Reattachment
from mini_claude.conversation import Message
from mini_claude.plan import Plan
from mini_claude.project.rules import PathRules
from mini_claude.project.skills import LoadedSkills, SkillCatalog, within_budget

PLAN_TITLE = "your todo list, as you last wrote it with todo_write"
SHELLS_TITLE = "background shells you started with run_shell"
APPROVED_PLAN_TITLE = "the plan the user approved (exit_plan_mode); carry it out"


class PlanSource:
    """The todo list, verbatim, while it has items."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan

    def reattachments(self, history: Sequence[Message]) -> list[Reattachment]:
        if not self.plan.items:
            return []
        return [Reattachment("plan", PLAN_TITLE, self.plan.checklist())]


class ApprovedPlanSource:
    """The plan the user approved when leaving plan mode, verbatim, once there is one."""

    def __init__(self, plan_text: Callable[[], str | None]) -> None:
        self.plan_text = plan_text

    def reattachments(self, history: Sequence[Message]) -> list[Reattachment]:
        text = self.plan_text()
        if not text:
            return []
        return [Reattachment("approved-plan", APPROVED_PLAN_TITLE, text)]


class SkillSource:
    """The skills the model loaded, newest first, whole, within a size bound."""

    def __init__(self, catalog: SkillCatalog, loaded: LoadedSkills, max_chars: int) -> None:
        self.catalog = catalog
        self.loaded = loaded
        self.max_chars = max_chars

    def reattachments(self, history: Sequence[Message]) -> list[Reattachment]:
        skills = [s for n in self.loaded.newest_first() if (s := self.catalog.get(n))]
        kept, left_out = within_budget(skills, self.max_chars)
        blocks = [
            Reattachment(f"skill:{s.name}", f"skill {s.name!r}, which you loaded", s.body)
            for s in kept
        ]
        if left_out:
            names = ", ".join(repr(s.name) for s in left_out)
            blocks.append(
                Reattachment(
                    "skills-left-out",
                    "skills not re-attached",
                    f"Also loaded earlier, left out for room: {names}. Load them again with "
                    "the skill tool if you still need them.",
                )
            )
        return blocks


class _Shell(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def command(self) -> str: ...
    @property
    def log_path(self) -> Path: ...
    @property
    def running(self) -> bool: ...
    def state(self) -> str: ...


class _ShellRoster(Protocol):
    def all(self) -> Sequence[_Shell]: ...


class ShellSource:
    """The background shells still running: after a summary the model still knows their
    ids, commands and logs."""

    def __init__(self, shells: _ShellRoster) -> None:
        self.shells = shells

    def reattachments(self, history: Sequence[Message]) -> list[Reattachment]:
        lines = [
            f"- {shell.id}: {shell.state()} · {shell.command} · log: {shell.log_path}"
            for shell in self.shells.all()
            if shell.running
        ]
        if not lines:
            return []
        body = "\n".join(
            [*lines, "Read new output with shell_output(shell_id), stop one with kill_shell."]
        )
        return [Reattachment("shells", SHELLS_TITLE, body)]


class RuleSource:
    """The path-scoped rules the model has already been shown: they still apply after a summary."""

    def __init__(self, rules: PathRules) -> None:
        self.rules = rules

    def reattachments(self, history: Sequence[Message]) -> list[Reattachment]:
        return [
            Reattachment(f"rule:{rule.path}",
                         f"project rule {rule.path.name} (applies to {', '.join(rule.globs)})",
                         rule.body)
            for rule in self.rules.loaded
        ]
