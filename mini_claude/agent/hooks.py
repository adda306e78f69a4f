"""Hooks: the user's shell commands around tool calls and compactions, in Claude Code's shape.

Configured under ``"hooks"`` in the settings files (``<home>/settings.json``
and the project's ``.mini-claude/settings.json``)::

    {"hooks": {"PreToolUse": [{"matcher": "run_shell",
                               "hooks": [{"type": "command", "command": "./check.sh",
                                          "timeout": 60}]}]}}

Each command gets a JSON description of the event on stdin. Exit code 2 (or a
JSON ``decision: "block"`` / ``permissionDecision: "deny"`` on stdout) blocks
a tool call, and the reason goes to the model; a ``PreCompact`` hook's stdout
is added to the summary instructions. A hook that fails, times out or cannot
start is one warning line: it never stops the session. Which files count, and when a
project's hooks may run, is decided with the permission settings
(``session/settings_files.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from mini_claude.text import shorten
from mini_claude.tools.process import terminate_group

HookEvent = Literal["PreToolUse", "PostToolUse", "PreCompact", "PostCompact"]
HOOK_EVENTS: tuple[str, ...] = get_args(HookEvent)
PROJECT_SETTINGS = Path(".mini-claude") / "settings.json"
USER_SETTINGS_NAME = "settings.json"
BLOCK_EXIT_CODE = 2
MAX_OUTPUT_CHARS = 10_000
MAX_REASON_CHARS = 2_000


@dataclass(frozen=True, slots=True)
class HookCommand:
    event: HookEvent
    matcher: str  # "" matches everything
    command: str
    timeout: float
    source: Path

    def matches(self, value: str) -> bool:
        if self.matcher in ("", "*"):
            return True
        try:
            return re.fullmatch(self.matcher, value) is not None
        except re.error:
            return self.matcher == value


@dataclass
class HookFile:
    """The hooks of one settings file."""

    path: Path
    commands: list[HookCommand] = field(default_factory=list)
    content: bytes = b""


@dataclass
class HookSettings:
    """Hooks from the user's file and the project's, and what was wrong with them."""

    user: HookFile | None = None
    project: HookFile | None = None
    warnings: list[str] = field(default_factory=list)


def load_hook_settings(cwd: Path, home: Path, default_timeout: float) -> HookSettings:
    settings = HookSettings()
    user_path = home / USER_SETTINGS_NAME
    project_path = cwd / PROJECT_SETTINGS
    settings.user = _read_file(user_path, default_timeout, settings.warnings)
    if not _same_file(user_path, project_path):
        settings.project = _read_file(project_path, default_timeout, settings.warnings)
    return settings


def _read_file(path: Path, default_timeout: float, warnings: list[str]) -> HookFile | None:
    try:
        content = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        warnings.append(f"cannot read {path}: {exc.strerror or exc}; its hooks are not used")
        return None
    try:
        data = json.loads(content)
    except ValueError:
        return None  # the permission rules report a broken settings file once
    hooks = data.get("hooks") if isinstance(data, dict) else None
    if hooks is None:
        return None
    return HookFile(path, hook_commands(path, hooks, default_timeout, warnings), content)


def hook_commands(
    path: Path, hooks: object, default_timeout: float, warnings: list[str]
) -> list[HookCommand]:
    """The commands of one settings file's ``"hooks"`` value (ours or Claude Code's)."""
    if not isinstance(hooks, dict):
        warnings.append(f'{path}: "hooks" must be an object; its hooks are not used')
        return []
    commands: list[HookCommand] = []
    for event, groups in hooks.items():
        if event not in HOOK_EVENTS:
            known = ", ".join(HOOK_EVENTS)
            warnings.append(f"{path}: unknown hook event {event!r} (known: {known}); skipped")
            continue
        if not isinstance(groups, list):
            warnings.append(f'{path}: "hooks.{event}" must be a list; it is not used')
            continue
        for group in groups:
            commands.extend(_commands(event, group, path, default_timeout, warnings))
    return commands


def _commands(
    event: HookEvent, group: object, path: Path, default_timeout: float, warnings: list[str]
) -> list[HookCommand]:
    where = f"{path}: a {event} entry"
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
        warnings.append(f'{where} needs a "hooks" list; it is not used')
        return []
    matcher = group.get("matcher", "")
    if not isinstance(matcher, str):
        warnings.append(f'{where} has a "matcher" that is not a string; it is not used')
        return []
    commands: list[HookCommand] = []
    for hook in group["hooks"]:
        if not isinstance(hook, dict) or hook.get("type", "command") != "command":
            warnings.append(f'{where} has a hook that is not {{"type": "command", ...}}; skipped')
            continue
        command = hook.get("command")
        timeout = hook.get("timeout", default_timeout)
        if not isinstance(command, str) or not command.strip():
            warnings.append(f'{where} has a hook without a "command" string; skipped')
            continue
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            warnings.append(f'{where}: "timeout" must be a positive number of seconds; skipped')
            continue
        commands.append(HookCommand(event, matcher, command, float(timeout), path))
    return commands


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


# ---- running ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HookRun:
    """How one command ended."""

    hook: HookCommand
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    error: str = ""


@dataclass
class HookOutcome:
    """What a set of hooks for one event decided, and the warnings to show."""

    block_reason: str | None = None
    feedback: list[str] = field(default_factory=list)  # for the model (PostToolUse)
    instructions: list[str] = field(default_factory=list)  # for the summary (PreCompact)
    warnings: list[str] = field(default_factory=list)


class HookRunner:
    """Runs the matching commands for an event, one after another, and reads their answers."""

    def __init__(
        self,
        commands: list[HookCommand],
        *,
        cwd: Path,
        env: Mapping[str, str] | None,
        session_id: str = "",
        transcript_path: str = "",
    ) -> None:
        self.commands = commands
        self.cwd = cwd
        self.env = dict(env) if env is not None else None
        self.session_id = session_id
        self.transcript_path = transcript_path

    def __bool__(self) -> bool:
        return bool(self.commands)

    def for_event(self, event: HookEvent) -> list[HookCommand]:
        return [c for c in self.commands if c.event == event]

    async def pre_tool_use(self, name: str, tool_input: Mapping[str, Any]) -> HookOutcome:
        payload = {"tool_name": name, "tool_input": dict(tool_input)}
        return await self._dispatch("PreToolUse", name, payload)

    async def post_tool_use(
        self, name: str, tool_input: Mapping[str, Any], content: str, is_error: bool
    ) -> HookOutcome:
        payload = {
            "tool_name": name,
            "tool_input": dict(tool_input),
            "tool_response": {"content": content, "is_error": is_error},
        }
        return await self._dispatch("PostToolUse", name, payload)

    async def pre_compact(self, reason: str, focus: str | None) -> HookOutcome:
        trigger = _trigger(reason)
        payload = {"trigger": trigger, "reason": reason, "custom_instructions": focus or ""}
        return await self._dispatch("PreCompact", trigger, payload)

    async def post_compact(
        self, reason: str, tokens_before: int, tokens_after: int, summary: str
    ) -> HookOutcome:
        trigger = _trigger(reason)
        payload = {
            "trigger": trigger,
            "reason": reason,
            "tokens_before": tokens_before,
            "tokens_after": tokens_after,
            "summary": summary,
        }
        return await self._dispatch("PostCompact", trigger, payload)

    async def _dispatch(
        self, event: HookEvent, match_value: str, fields: dict[str, Any]
    ) -> HookOutcome:
        outcome = HookOutcome()
        hooks = [h for h in self.for_event(event) if h.matches(match_value)]
        if not hooks:
            return outcome
        payload = {
            "session_id": self.session_id,
            "transcript_path": self.transcript_path,
            "cwd": str(self.cwd),
            "hook_event_name": event,
            **fields,
        }
        data = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")
        for hook in hooks:
            run = await run_hook(hook, data, cwd=self.cwd, env=self.env)
            _read_answer(run, outcome)
            if outcome.block_reason is not None:
                break  # a blocked call needs no further opinions
        return outcome


def _trigger(reason: str) -> str:
    """Claude Code's two triggers: ``manual`` for /compact, ``auto`` for everything else."""
    return "manual" if reason == "manual" else "auto"


async def run_hook(
    hook: HookCommand, stdin: bytes, *, cwd: Path, env: Mapping[str, str] | None
) -> HookRun:
    """Run one command with the event on stdin; never raises (cancellation aside)."""
    child_env = dict(env) if env is not None else None
    if child_env is not None:
        child_env["MINI_CLAUDE_PROJECT_DIR"] = str(cwd)
        child_env["CLAUDE_PROJECT_DIR"] = str(cwd)
    try:
        process = await asyncio.create_subprocess_shell(
            hook.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=child_env,
            start_new_session=True,
        )
    except OSError as exc:
        return HookRun(hook, None, "", "", error=f"could not start: {exc.strerror or exc}")
    try:
        out, err = await asyncio.wait_for(process.communicate(stdin), hook.timeout)
    except TimeoutError:
        await terminate_group(process)
        return HookRun(hook, None, "", "", timed_out=True)
    except asyncio.CancelledError:
        await terminate_group(process)
        raise
    except (BrokenPipeError, ConnectionResetError):
        # The hook did not read its stdin; its answer still counts.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), hook.timeout)
        out, err = b"", b""
    return HookRun(
        hook,
        process.returncode,
        out.decode("utf-8", "replace")[:MAX_OUTPUT_CHARS],
        err.decode("utf-8", "replace")[:MAX_OUTPUT_CHARS],
    )


def _read_answer(run: HookRun, outcome: HookOutcome) -> None:
    hook = run.hook
    name = f"{hook.event} hook {shorten(hook.command, 60, marker='...')!r}"
    if run.error:
        outcome.warnings.append(f"{name} {run.error}")
        return
    if run.timed_out:
        outcome.warnings.append(f"{name} timed out after {hook.timeout:g}s and was stopped")
        return
    if run.exit_code == BLOCK_EXIT_CODE:
        reason = _reason(run.stderr) or _reason(run.stdout) or "no reason given"
        if hook.event == "PreToolUse":
            outcome.block_reason = reason
        elif hook.event == "PostToolUse":
            outcome.feedback.append(reason)
        else:
            outcome.warnings.append(f"{name} exited 2, but a compaction cannot be blocked")
        return
    if run.exit_code != 0:
        detail = _reason(run.stderr).splitlines()[:1]
        why = f": {shorten(detail[0], 200, marker='...')}" if detail else ""
        outcome.warnings.append(f"{name} failed (exit {run.exit_code}){why}")
        return
    _read_stdout(run, outcome, name)


def _read_stdout(run: HookRun, outcome: HookOutcome, name: str) -> None:
    text = run.stdout.strip()
    if not text:
        return
    answer: object = None
    if text.startswith("{"):
        try:
            answer = json.loads(text)
        except ValueError:
            outcome.warnings.append(f"{name} printed something that is not JSON; ignored")
            return
    event = run.hook.event
    if not isinstance(answer, dict):
        if event == "PreCompact":
            outcome.instructions.append(text)  # plain text: instructions for the summary
        return
    specific = answer.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    reason = _reason(str(answer.get("reason", "")))
    if event == "PreToolUse":
        if specific.get("permissionDecision") == "deny":
            why = _reason(str(specific.get("permissionDecisionReason", "")))
            outcome.block_reason = why or reason or "no reason given"
        elif answer.get("decision") == "block":
            outcome.block_reason = reason or "no reason given"
    elif event == "PostToolUse":
        if answer.get("decision") == "block" and reason:
            outcome.feedback.append(reason)
        context = specific.get("additionalContext")
        if isinstance(context, str) and context.strip():
            outcome.feedback.append(_reason(context))
    elif event == "PreCompact":
        extra = specific.get("customInstructions", answer.get("customInstructions"))
        if isinstance(extra, str) and extra.strip():
            outcome.instructions.append(extra.strip())


def _reason(text: str) -> str:
    return shorten(text.strip(), MAX_REASON_CHARS, marker="...")
