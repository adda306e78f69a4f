"""Model behaviours: scripted replies, a wrapped function, and a realistic exploring agent."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mini_claude.simulator.types import (
    Policy,
    Reply,
    SimConversation,
    SimMessage,
    Step,
    ToolCall,
    ToolResultPart,
    ToolUsePart,
)


class ScriptedPolicy:
    """Plays ``steps`` in order, one per non-summary request, then ``final`` forever."""

    def __init__(self, steps: Sequence[Step], final: Reply | None = None) -> None:
        self._steps = list(steps)
        self._final = final if final is not None else Reply("Done.")
        self._next = 0
        self._lock = threading.Lock()

    @property
    def consumed(self) -> int:
        """How many steps have been played."""
        return self._next

    @property
    def remaining(self) -> int:
        return len(self._steps) - self._next

    def respond(self, conv: SimConversation) -> Reply:
        with self._lock:
            if self._next >= len(self._steps):
                return self._final
            step = self._steps[self._next]
            self._next += 1
        return step(conv) if callable(step) else step


class FunctionPolicy:
    """Any ``conv -> Reply`` callable as a policy."""

    def __init__(self, fn: Callable[[SimConversation], Reply]) -> None:
        self._fn = fn

    def respond(self, conv: SimConversation) -> Reply:
        return self._fn(conv)


# ---- the exploring agent ------------------------------------------------------------------

PATH_TOKEN = re.compile(r"[\w.@+-]+(?:/[\w.@+-]+)*\.[A-Za-z][A-Za-z0-9]{0,7}\b")
PREFERRED_FILES = ("readme", "pyproject.toml", "setup.py", "package.json", "main.py", "cli.py")
NOTES_STATUS_BEFORE = "Status: draft"
NOTES_STATUS_AFTER = "Status: reviewed"


@dataclass(frozen=True, slots=True)
class _Seen:
    """What the current turn has done so far: each call with its result."""

    calls: list[tuple[ToolUsePart, ToolResultPart | None]]

    def of(self, name: str) -> list[tuple[ToolUsePart, ToolResultPart | None]]:
        return [(u, r) for u, r in self.calls if u.name == name]

    def done(self, name: str) -> bool:
        return bool(self.of(name))

    def output(self, name: str) -> str:
        return "\n".join(
            r.content for _, r in self.of(name) if r is not None and not _is_failure(r)
        )

    def failed(self, name: str) -> bool:
        return any(_is_failure(r) for _, r in self.of(name))


def _is_failure(result: ToolResultPart | None) -> bool:
    """Flagged as an error, or reads like one (OpenAI tool messages carry no error flag)."""
    if result is None:
        return False
    return result.is_error or result.content.lstrip().lower().startswith(("error", "failed"))


def _seen(turn: list[SimMessage]) -> _Seen:
    results = {r.tool_use_id: r for m in turn for r in m.tool_results}
    return _Seen([(u, results.get(u.id)) for m in turn for u in m.tool_uses])


def _argument_name(schema: dict[str, Any], hint: str, default: str) -> str:
    """The schema's property whose name contains ``hint`` (``old`` finds ``old_string``)."""
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name in properties:
            if hint in name.lower():
                return str(name)
    return default


def files_in_listing(listing: str, limit: int) -> list[str]:
    """Paths worth reading, preferring the files a developer opens first."""
    found: list[str] = []
    for match in PATH_TOKEN.finditer(listing):
        path = match.group(0).removeprefix("./")
        if path not in found and not path.endswith((".lock", ".pyc", ".png", ".jpg")):
            found.append(path)

    def rank(path: str) -> tuple[int, int]:
        name = path.rsplit("/", 1)[-1].lower()
        preferred = next((i for i, p in enumerate(PREFERRED_FILES) if name.startswith(p)), None)
        return (preferred if preferred is not None else len(PREFERRED_FILES), path.count("/"))

    return sorted(found, key=rank)[:limit]


class ExplorePolicy:
    """Explores a project the way a coding model would, reacting to what each tool returned.

    List the files, read a few that the listing showed, search the code, run a
    command, write notes and then edit them, and finish with an answer that
    reports what was found. Steps whose tool is not offered are skipped.
    """

    def __init__(
        self,
        *,
        shell_command: str = "python -V",
        notes_path: str = "NOTES.md",
        max_reads: int = 3,
    ) -> None:
        self.shell_command = shell_command
        self.notes_path = notes_path
        self.max_reads = max_reads

    def respond(self, conv: SimConversation) -> Reply:
        seen = _seen(conv.current_turn())
        offered = set(conv.tool_names) if not conv.tool_choice_none else set()
        planners: list[tuple[str, Callable[[SimConversation, _Seen], Reply | None]]] = [
            ("list_files", self._list),
            ("read_file", self._read),
            ("grep_search", self._grep),
            ("run_shell", self._shell),
            ("write_file", self._write),
            ("edit_file", self._edit),
        ]
        for name, plan in planners:
            if name in offered and not seen.done(name):
                reply = plan(conv, seen)
                if reply is not None:
                    return reply
        return Reply(self._report(seen))

    def _list(self, conv: SimConversation, seen: _Seen) -> Reply:
        schema = conv.tool_schemas.get("list_files", {})
        args = {"path": "."} if "path" in schema.get("properties", {}) else {}
        return Reply("Let me look at the project layout first.", [ToolCall("list_files", args)])

    def _read(self, conv: SimConversation, seen: _Seen) -> Reply | None:
        files = files_in_listing(seen.output("list_files"), self.max_reads)
        if not files:
            return None
        key = _argument_name(conv.tool_schemas.get("read_file", {}), "path", "path")
        calls = [ToolCall("read_file", {key: path}) for path in files]
        return Reply(f"I'll read {', '.join(files)} to understand the code.", calls)

    def _grep(self, conv: SimConversation, seen: _Seen) -> Reply:
        read = [u.input.get("path", "") for u, _ in seen.of("read_file")]
        pattern = r"def |class " if any(str(p).endswith(".py") for p in read) else "TODO|FIXME"
        return Reply(
            "Now I'll search for the main definitions.",
            [ToolCall("grep_search", {"pattern": pattern})],
        )

    def _shell(self, conv: SimConversation, seen: _Seen) -> Reply:
        matches = len([line for line in seen.output("grep_search").splitlines() if line.strip()])
        return Reply(
            f"The search found {matches} matching lines. Let me check the environment.",
            [ToolCall("run_shell", {"command": self.shell_command})],
        )

    def _write(self, conv: SimConversation, seen: _Seen) -> Reply:
        schema = conv.tool_schemas.get("write_file", {})
        content = "\n".join(
            [
                "# Exploration notes",
                NOTES_STATUS_BEFORE,
                f"Files read: {', '.join(self._paths(seen, 'read_file')) or 'none'}",
                f"Matching lines: {self._match_count(seen)}",
                f"Shell: {self._shell_line(seen)}",
                "",
            ]
        )
        args = {
            _argument_name(schema, "path", "path"): self.notes_path,
            _argument_name(schema, "content", "content"): content,
        }
        return Reply("I'll write down what I found.", [ToolCall("write_file", args)])

    def _edit(self, conv: SimConversation, seen: _Seen) -> Reply | None:
        if not seen.done("write_file") or seen.failed("write_file"):
            return None
        schema = conv.tool_schemas.get("edit_file", {})
        args = {
            _argument_name(schema, "path", "path"): self.notes_path,
            _argument_name(schema, "old", "old"): NOTES_STATUS_BEFORE,
            _argument_name(schema, "new", "new"): NOTES_STATUS_AFTER,
        }
        return Reply("Marking the notes as reviewed.", [ToolCall("edit_file", args)])

    @staticmethod
    def _paths(seen: _Seen, name: str) -> list[str]:
        return [str(u.input.get("path", "")) for u, _ in seen.of(name)]

    @staticmethod
    def _match_count(seen: _Seen) -> int:
        return len([line for line in seen.output("grep_search").splitlines() if line.strip()])

    @staticmethod
    def _shell_line(seen: _Seen) -> str:
        lines = [line.strip() for line in seen.output("run_shell").splitlines() if line.strip()]
        interesting = [line for line in lines if not line.lower().startswith(("exit", "$"))]
        return (interesting or lines or ["no output"])[0][:120]

    def _report(self, seen: _Seen) -> str:
        parts = ["Here is what I found."]
        listing = seen.output("list_files")
        if seen.done("list_files"):
            parts.append(f"The listing shows {len(files_in_listing(listing, 10_000))} files.")
        read = self._paths(seen, "read_file")
        if read:
            parts.append(f"I read {', '.join(read)}.")
        if seen.done("grep_search"):
            parts.append(f"The search matched {self._match_count(seen)} lines.")
        if seen.done("run_shell"):
            parts.append(f"`{self.shell_command}` said: {self._shell_line(seen)}.")
        if seen.done("write_file") and not seen.failed("write_file"):
            status = (
                "reviewed" if seen.done("edit_file") and not seen.failed("edit_file") else "draft"
            )
            parts.append(f"My notes are in {self.notes_path} ({status}).")
        failures = [u.name for u, r in seen.calls if _is_failure(r)]
        if failures:
            parts.append(f"These calls failed: {', '.join(failures)}.")
        return " ".join(parts)


# ---- several agents on one server ---------------------------------------------------------

Match = Callable[[SimConversation], bool]


def system_contains(text: str) -> Match:
    """Requests whose system prompt contains ``text`` (one kind of agent)."""
    return lambda conv: text in conv.system


def user_contains(text: str) -> Match:
    """Requests with a message typed by the user that contains ``text`` (one agent's job).

    A summary keeps the recent user messages, so the match survives a compaction.
    """
    return lambda conv: any(
        text in m.text for m in conv.messages if m.is_plain_user_message
    )


class RoutedPolicy:
    """Answers each request with the policy of the first route that matches it.

    A session and its sub-agents share one server; routing by system prompt or by
    the job's text keeps each agent's script independent of the order in which
    concurrent agents happen to call.
    """

    def __init__(self, routes: Sequence[tuple[Match, Policy]], default: Policy) -> None:
        self.routes = list(routes)
        self.default = default

    def respond(self, conv: SimConversation) -> Reply:
        for matches, policy in self.routes:
            if matches(conv):
                return policy.respond(conv)
        return self.default.respond(conv)
