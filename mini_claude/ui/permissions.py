"""Asking the user before a tool changes something: a box, three answers, an optional reason.

"Yes, and don't ask again" keeps a proposed rule (a command family, a fetched domain) as
Claude Code does: written to the project's ``.claude/settings.local.json``, so it holds in
later sessions too. An answer about one exact file or call is kept for this session only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from prompt_toolkit import PromptSession
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from rich.console import Console, Group, RenderableType
from rich.markdown import Markdown
from rich.panel import Panel
from rich.text import Text

from mini_claude.mcp.tool import TOOL_PREFIX
from mini_claude.permissions.asking import PermissionDecision, PermissionRequest
from mini_claude.permissions.mode_table import ACCEPT_EDITS_MODE, DEFAULT_MODE
from mini_claude.text import short_target
from mini_claude.tools.permission_gate import EXIT_PLAN_TOOL
from mini_claude.ui.choice import ChoiceInterrupted, choose, keys_typed_before_kept
from mini_claude.ui.live import KEY_TIMEOUT_SECONDS
from mini_claude.ui.render import diff_view
from mini_claude.ui.statusbar import UI_STYLE
from mini_claude.ui.terminal_input import raw_while_printing

TITLES = {
    "run_shell": "Run a shell command",
    "write_file": "Write a file",
    "edit_file": "Edit a file",
    "read_file": "Read outside the project",
}
DETAIL_LINES = 40
YES, YES_ALWAYS, NO = 0, 1, 2
CHOICE_HINT = "esc cancels the turn · 3 to say what to do instead"
NOT_ATTACHED = "no terminal is attached to ask the user; not allowed"

PLAN_ANSWERS = [
    "Yes, and auto-accept edits",
    "Yes, and manually approve edits",
    "No, keep planning",
]
PLAN_HINT = "esc cancels the turn · 3 to say what to change"

Pause = Callable[[], AbstractAsyncContextManager[None]]
# Writes a rule the user chose to keep; returns the line that says where (or why not).
RuleSaver = Callable[[str], str]


def plan_box(request: PermissionRequest) -> Panel:
    """The plan the model proposes, rendered as markdown, with the question."""
    parts: list[RenderableType] = [Markdown(request.detail or ""), Text(),
                                   Text("Would you like to proceed?")]
    return Panel(Group(*parts), title=f"[bold]{request.summary}[/]", title_align="left",
                 border_style="cyan", expand=True)


def permission_box(request: PermissionRequest) -> Panel:
    parts: list[RenderableType] = [Text(request.summary, style="bold")]
    if request.detail:
        parts.append(Text())
        parts.append(_detail(request.detail))
    parts.append(Text())
    parts.append(Text("Do you want to proceed?"))
    return Panel(Group(*parts), title=box_title(request.tool_name), title_align="left",
                 border_style="yellow", expand=True)


def box_title(tool_name: str) -> Text:
    """"Run a shell command (run_shell)"; a tool without a title of its own is named once."""
    title = TITLES.get(tool_name)
    if title is None and tool_name.startswith(TOOL_PREFIX):
        title = "Use an MCP tool"
    if title is None:
        return Text(tool_name, style="bold")
    return Text.assemble((title, "bold"), " ", (f"({tool_name})", "dim"))


def _detail(detail: str) -> Text:
    lines = detail.splitlines()
    if any(line.startswith("@@") for line in lines):
        return diff_view(detail, DETAIL_LINES)
    shown = "\n".join(lines[:DETAIL_LINES])
    more = f"\n… +{len(lines) - DETAIL_LINES} lines" if len(lines) > DETAIL_LINES else ""
    return Text(shown + more, style="dim")


def subject_label(request: PermissionRequest) -> str:
    """What "don't ask again" covers: the proposed rule, the tool, or the one folder."""
    if request.rule:
        return rule_label(request.rule)
    if request.subject == request.tool_name:
        return request.tool_name
    _kind, colon, rest = request.subject.partition(":")
    return f"`{short_target(rest if colon else request.subject)}`"


def rule_label(rule: str) -> str:
    """``run_shell(npm run test:*)`` -> "`npm run test` commands"; an exact one as itself."""
    _tool, _open, body = rule.partition("(")
    body = body[:-1] if body.endswith(")") else body
    if body.endswith(":*"):
        return f"`{short_target(body[:-2])}` commands"
    return f"`{short_target(body)}`"


def answer_labels(request: PermissionRequest, project: str | None = None) -> list[str]:
    """The three answers; "don't ask again" names where it holds: the project (a rule,
    saved), a setting it is written to, or this session (one exact subject, or nowhere to
    save)."""
    subject = subject_label(request)
    where = f"in {project}" if project and request.rule else "this session"
    if request.kept_in:
        where = f"(kept in {request.kept_in})"
    return [
        "Yes",
        f"Yes, and don't ask again for {subject} {where}",
        "No, and tell the agent what to do differently",
    ]


class TerminalApprover:
    """The approver the REPL wires in; it borrows the terminal from the live turn view."""

    def __init__(self) -> None:
        self._console: Console | None = None
        self._pause: Pause | None = None
        self._interrupt: Callable[[], None] | None = None
        self._status_line: Callable[[], StyleAndTextTuples] | None = None
        self._shown: list[str] = []  # details (diffs) the user saw in a question
        self.on_question: Callable[[PermissionRequest], None] | None = None  # notifications
        self.rule_saver: RuleSaver | None = None  # where "don't ask again" rules are kept
        self.project_label = ""  # the project, as the answer names it

    def shown_before(self, text: str) -> bool:
        """Whether the user saw this text in a question (an approved edit's diff)."""
        return bool(text) and any(text.strip() == shown.strip() for shown in self._shown)

    def attach(self, console: Console, pause: Pause, interrupt: Callable[[], None],
               status_line: Callable[[], StyleAndTextTuples] | None = None) -> None:
        self._console = console
        self._pause = pause
        self._interrupt = interrupt
        self._status_line = status_line

    async def __call__(self, request: PermissionRequest) -> PermissionDecision:
        if self._console is None or self._pause is None:
            return PermissionDecision(False, reason=NOT_ATTACHED, asked=False)
        async with self._pause():
            if self.on_question is not None:
                self.on_question(request)
            with keys_typed_before_kept():  # type-ahead goes back to the turn's input box
                return await self._ask(self._console, request)

    async def _ask(self, console: Console, request: PermissionRequest) -> PermissionDecision:
        if request.tool_name == EXIT_PLAN_TOOL:
            return await self._ask_plan(console, request)
        console.print(permission_box(request))
        try:
            project = self.project_label if self.rule_saver is not None else None
            index = await choose(answer_labels(request, project), hint=CHOICE_HINT,
                                 status_line=self._status_line)
        except ChoiceInterrupted:
            index = None
        if index is None:  # Esc or Ctrl-C: the whole turn stops, as anywhere else in it
            self._interrupt_turn()
            raise asyncio.CancelledError from None
        if request.detail and index in (YES, YES_ALWAYS):
            self._shown = [request.detail]
        if index == YES:
            console.print(Text("  ✓ allowed", style="green"))
            return PermissionDecision(True)
        if index == YES_ALWAYS:
            console.print(Text(self._keep(request), style="green"))
            return PermissionDecision(True, remember=True)
        try:
            reason = await ask_text()
        except ChoiceInterrupted:
            self._interrupt_turn()
            raise asyncio.CancelledError from None
        console.print(Text("  ✗ denied" + (f": {reason}" if reason else ""), style="red"))
        return PermissionDecision(False, reason=reason or "the user said no")

    async def _ask_plan(self, console: Console, request: PermissionRequest) -> PermissionDecision:
        """Claude Code's plan approval: go (auto-accepting edits or not), or keep planning."""
        console.print(plan_box(request))
        try:
            index = await choose(PLAN_ANSWERS, hint=PLAN_HINT, status_line=self._status_line)
        except ChoiceInterrupted:
            index = None
        if index is None:
            self._interrupt_turn()
            raise asyncio.CancelledError from None
        if index in (0, 1):
            mode = ACCEPT_EDITS_MODE if index == 0 else DEFAULT_MODE
            console.print(Text(f"  ✓ plan approved · {mode}", style="green"))
            return PermissionDecision(True, mode=mode)
        try:
            feedback = await ask_text("  What should change in the plan? ")
        except ChoiceInterrupted:
            self._interrupt_turn()
            raise asyncio.CancelledError from None
        console.print(Text("  ⏸ keep planning" + (f": {feedback}" if feedback else ""),
                           style="yellow"))
        return PermissionDecision(False, reason=feedback or "keep planning")

    def _keep(self, request: PermissionRequest) -> str:
        """Save the proposed rule; the line saying what was kept and where."""
        if request.rule and self.rule_saver is not None:
            return f"  ✓ allowed; {self.rule_saver(request.rule)}"
        return f"  ✓ allowed for this session: {subject_label(request)}"

    def _interrupt_turn(self) -> None:
        """Esc or Ctrl-C at the question stops the whole turn, as anywhere else in it."""
        if self._interrupt is not None:
            self._interrupt()


async def ask_text(
    question: str = "  What should the agent do instead? (Enter to skip) ",
) -> str:
    """One line of text (the reason for a "no", instructions for a summary); Esc raises
    ChoiceInterrupted, Ctrl-C and end of input give ""."""
    keys = KeyBindings()

    @keys.add("escape", eager=True)
    def _escape(event: KeyPressEvent) -> None:
        event.app.exit(exception=ChoiceInterrupted())

    session: PromptSession[str] = PromptSession(style=UI_STYLE, key_bindings=keys,
                                                input=raw_while_printing())
    session.app.ttimeoutlen = KEY_TIMEOUT_SECONDS
    try:
        text = await session.prompt_async(
            [("class:choice.hint", question)],
            set_exception_handler=False,
        )
    except (KeyboardInterrupt, EOFError):
        return ""
    return text.strip()
