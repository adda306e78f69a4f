"""Hooks: the user's shell commands around tool calls and compactions, in Claude Code's shape.

Configured under ``"hooks"`` in the settings files (``<home>/settings.json``
and the project's ``.mini-claude/settings.json``)::

    {"hooks": {"PreToolUse": [{"matcher": "run_shell",
                               "hooks": [{"type": "command", "command": "./check.sh",
                                          "timeout": 60}]}]}}

Each command gets a JSON description of the event on stdin. Exit code 2 (or a
JSON ``decision: "block"`` / ``permissionDecision: "deny"`` on stdout) blocks
a tool call, and the reason goes to the model; a ``PreCompact`` hook's stdout
is added to the summary instructions. A PreToolUse hook is a guard: when it
fails, times out, cannot start or answers something unreadable, the call is
blocked (fail closed), never let through. Any other hook that fails is one
warning line: it never stops the session. Which files count, and when a
project's hooks may run (only after the user approved that file), is decided
with the permission settings (``session/settings_files.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from mini_claude.text import shorten
from mini_claude.tools.process import terminate_group

if TYPE_CHECKING:
    pass

HookEvent = Literal[
    "PreToolUse", "PostToolUse", "PreCompact", "PostCompact", "UserPromptSubmit", "Stop",
    "SubagentStop", "SessionStart", "SessionEnd", "Notification",
]
# Events whose matcher is not a tool name or a trigger: every entry runs, whatever its matcher.
UNMATCHED_EVENTS = ("UserPromptSubmit", "Stop", "SubagentStop")
# Events whose exit code 2 means "not this": the prompt is refused, the turn goes on.
BLOCKING_EVENTS = ("PreToolUse", "UserPromptSubmit", "Stop", "SubagentStop")
# Events whose plain stdout (exit 0) is context for the model.
CONTEXT_EVENTS = ("UserPromptSubmit", "SessionStart")
HOOK_EVENTS: tuple[str, ...] = get_args(HookEvent)
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
    written: str | None = None  # the matcher as the settings file has it, when widened

    @property
    def shown_matcher(self) -> str:
        """What ``/hooks`` shows: the user's own words, not the widened pattern."""
        return self.written if self.written is not None else self.matcher
    # Answers instead of running ``command`` (a hook the controlling program hosts);
    # its answer is read as a command's would be.
    answer: Callable[[HookCommand, dict[str, Any]], Awaitable[HookRun]] | None = None

    def matches(self, value: str) -> bool:
        if self.matcher in ("", "*") or self.event in UNMATCHED_EVENTS:
            return True
        try:
            return re.fullmatch(self.matcher, value) is not None
        except re.error:
            return self.matcher == value


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
    context: list[str] = field(default_factory=list)  # for the model (prompt, session start)
    messages: list[str] = field(default_factory=list)  # for the user (``systemMessage``)
    stop_reason: str | None = None  # ``continue: false``: the turn ends here


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

    async def user_prompt_submit(self, prompt: str) -> HookOutcome:
        return await self._dispatch("UserPromptSubmit", "", {"prompt": prompt})

    async def stop(self, event: HookEvent, stop_hook_active: bool) -> HookOutcome:
        return await self._dispatch(event, "", {"stop_hook_active": stop_hook_active})

    async def session_start(self, source: str) -> HookOutcome:
        return await self._dispatch("SessionStart", source, {"source": source})

    async def session_end(self, reason: str) -> HookOutcome:
        return await self._dispatch("SessionEnd", reason, {"reason": reason})

    async def notification(self, message: str, kind: str) -> HookOutcome:
        payload = {"message": message, "notification_type": kind}
        return await self._dispatch("Notification", kind, payload)

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
            if hook.answer is not None:
                run = await hook.answer(hook, payload)
            else:
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
    finally:
        _close_transport(process)
    return HookRun(
        hook,
        process.returncode,
        out.decode("utf-8", "replace")[:MAX_OUTPUT_CHARS],
        err.decode("utf-8", "replace")[:MAX_OUTPUT_CHARS],
    )


def _close_transport(process: asyncio.subprocess.Process) -> None:
    """Close the pipes now, inside the loop: left to the garbage collector after the loop
    has closed, asyncio prints an "Event loop is closed" traceback at exit."""
    transport = getattr(process, "_transport", None)
    if transport is not None:
        with contextlib.suppress(Exception):
            transport.close()


def _read_answer(run: HookRun, outcome: HookOutcome) -> None:
    hook = run.hook
    name = f"{hook.event} hook {shorten(hook.command, 60, marker='...')!r}"
    failure = _failure(run)
    if failure is not None:
        if hook.event == "PreToolUse":  # a guard that cannot answer blocks the call
            outcome.block_reason = f"the hook {_quoted(hook)} {failure}, so the call is blocked"
        outcome.warnings.append(f"{name} {failure}")
        return
    if run.exit_code == BLOCK_EXIT_CODE:
        reason = _reason(run.stderr) or _reason(run.stdout) or "no reason given"
        if hook.event in BLOCKING_EVENTS:
            outcome.block_reason = reason
        elif hook.event == "PostToolUse":
            outcome.feedback.append(reason)
        else:
            outcome.warnings.append(f"{name} exited 2 ({shorten(reason, 200, marker='...')}), "
                                    f"but {hook.event} cannot be blocked")
        return
    _read_stdout(run, outcome, name)


def _quoted(hook: HookCommand) -> str:
    return repr(shorten(hook.command, 60, marker="..."))


def _failure(run: HookRun) -> str | None:
    """How a hook failed to answer, in words; None when it answered."""
    if run.error:
        return run.error
    if run.timed_out:
        return f"timed out after {run.hook.timeout:g}s and was stopped"
    if run.exit_code not in (0, BLOCK_EXIT_CODE):
        detail = _reason(run.stderr).splitlines()[:1]
        why = f": {shorten(detail[0], 200, marker='...')}" if detail else ""
        return f"failed (exit {run.exit_code}){why}"
    return None


def _read_stdout(run: HookRun, outcome: HookOutcome, name: str) -> None:
    """A hook's printed answer: JSON fields per event, or plain text where that means something."""
    text = run.stdout.strip()
    if not text:
        return
    answer: object = None
    if text.startswith("{"):
        try:
            answer = json.loads(text)
        except ValueError:
            _refuse_broken_json(run, outcome, name)
            return
    if isinstance(answer, dict):
        _read_common(answer, outcome)
        _JSON_READERS.get(run.hook.event, _ignore_json)(_JsonAnswer.of(answer), outcome)
    else:
        _read_plain_text(run.hook.event, text, outcome)


def _refuse_broken_json(run: HookRun, outcome: HookOutcome, name: str) -> None:
    """A guard whose answer cannot be read blocks the call; elsewhere it is only a warning."""
    if run.hook.event == "PreToolUse":
        outcome.block_reason = (
            f"the hook {_quoted(run.hook)} printed an answer that is not JSON, "
            "so the call is blocked"
        )
    outcome.warnings.append(f"{name} printed something that is not JSON; ignored")


def _read_plain_text(event: str, text: str, outcome: HookOutcome) -> None:
    if event == "PreCompact":
        outcome.instructions.append(text)  # plain text: instructions for the summary
    elif event in CONTEXT_EVENTS:
        outcome.context.append(_reason(text))


@dataclass(frozen=True)
class _JsonAnswer:
    """The parts of a hook's JSON answer that the events read."""

    answer: dict[str, Any]
    specific: dict[str, Any]  # hookSpecificOutput
    reason: str
    blocked: bool  # "decision": "block"

    @classmethod
    def of(cls, answer: dict[str, Any]) -> _JsonAnswer:
        specific = answer.get("hookSpecificOutput")
        return cls(
            answer,
            specific if isinstance(specific, dict) else {},
            _reason(str(answer.get("reason", ""))),
            answer.get("decision") == "block",
        )


def _read_pre_tool_use(answer: _JsonAnswer, outcome: HookOutcome) -> None:
    if answer.specific.get("permissionDecision") == "deny":
        why = _reason(str(answer.specific.get("permissionDecisionReason", "")))
        outcome.block_reason = why or answer.reason or "no reason given"
    elif answer.blocked:
        outcome.block_reason = answer.reason or "no reason given"


def _read_post_tool_use(answer: _JsonAnswer, outcome: HookOutcome) -> None:
    if answer.blocked and answer.reason:
        outcome.feedback.append(answer.reason)
    _add_context(answer.specific, outcome.feedback)


def _read_pre_compact(answer: _JsonAnswer, outcome: HookOutcome) -> None:
    extra = answer.specific.get("customInstructions", answer.answer.get("customInstructions"))
    if isinstance(extra, str) and extra.strip():
        outcome.instructions.append(extra.strip())


def _read_blocking_with_context(answer: _JsonAnswer, outcome: HookOutcome) -> None:
    """UserPromptSubmit, Stop, SubagentStop: may block, and may add context."""
    if answer.blocked:
        outcome.block_reason = answer.reason or "no reason given"
    _add_context(answer.specific, outcome.context)


def _read_session_start(answer: _JsonAnswer, outcome: HookOutcome) -> None:
    _add_context(answer.specific, outcome.context)


def _ignore_json(answer: _JsonAnswer, outcome: HookOutcome) -> None:
    """Events whose JSON carries only the common fields."""


# What each event reads from a JSON answer, beside the common fields.
_JSON_READERS: dict[str, Callable[[_JsonAnswer, HookOutcome], None]] = {
    "PreToolUse": _read_pre_tool_use,
    "PostToolUse": _read_post_tool_use,
    "PreCompact": _read_pre_compact,
    "UserPromptSubmit": _read_blocking_with_context,
    "Stop": _read_blocking_with_context,
    "SubagentStop": _read_blocking_with_context,
    "SessionStart": _read_session_start,
}


def _read_common(answer: dict[str, Any], outcome: HookOutcome) -> None:
    """The fields every event's JSON may carry: ``continue``/``stopReason``, ``systemMessage``."""
    if answer.get("continue") is False:
        outcome.stop_reason = _reason(str(answer.get("stopReason") or "")) or "stopped by a hook"
    message = answer.get("systemMessage")
    if isinstance(message, str) and message.strip():
        outcome.messages.append(_reason(message))


def _add_context(specific: dict[str, Any], into: list[str]) -> None:
    context = specific.get("additionalContext")
    if isinstance(context, str) and context.strip():
        into.append(_reason(context))


def _reason(text: str) -> str:
    return shorten(text.strip(), MAX_REASON_CHARS, marker="...")


def subagent_stop_hooks(parent: HookRunner) -> HookRunner:
    """A sub-agent runs the parent's ``SubagentStop`` hooks only (its tools are the parent's
    concern through the ``task`` call)."""
    return HookRunner(parent.for_event("SubagentStop"), cwd=parent.cwd, env=parent.env,
                      session_id=parent.session_id, transcript_path=parent.transcript_path)
