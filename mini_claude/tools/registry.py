"""The tool registry: the schemas the model sees, and a dispatch that never raises.

Whatever goes wrong on the way to a tool (a name the model made up,
arguments that are not JSON or do not fit the schema, a user who says no,
a bug inside a tool) comes back as an error result the model can read and
correct. Only cancellation passes through, so a turn can be stopped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from mini_claude.protocol import ARGUMENTS_REFUSED_KEY, RAW_ARGUMENTS_KEY, ToolOutput, ToolSpec
from mini_claude.sanitize import has_non_finite
from mini_claude.text import shorten
from mini_claude.tool_kinds import OTHER, ToolKind, ToolTraits, declare, known_tools
from mini_claude.tools.base import Tool, ToolContext
from mini_claude.tools.builtin.compact import CompactTool
from mini_claude.tools.builtin.edit_file import EditFileTool
from mini_claude.tools.builtin.exit_plan_mode import ExitPlanModeTool
from mini_claude.tools.builtin.grep_search import GrepBackend, GrepSearchTool
from mini_claude.tools.builtin.kill_shell import KillShellTool
from mini_claude.tools.builtin.list_files import ListFilesTool
from mini_claude.tools.builtin.read_file import ReadFileTool
from mini_claude.tools.builtin.run_shell import RunShellTool
from mini_claude.tools.builtin.search_history import SearchHistoryTool
from mini_claude.tools.builtin.shell_output import ShellOutputTool
from mini_claude.tools.builtin.skill import SkillTool
from mini_claude.tools.builtin.task import TOOL_NAME as TASK_TOOL_NAME
from mini_claude.tools.builtin.task import TaskTool
from mini_claude.tools.builtin.todo_write import TodoWriteTool
from mini_claude.tools.builtin.web_fetch import WebFetchTool
from mini_claude.tools.builtin.write_file import WriteFileTool
from mini_claude.tools.common import error_output
from mini_claude.tools.permission_gate import check_permission

_JSON_TYPE_NAMES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
    type(None): "null",
}


BUILTIN_TOOLS = (
    ReadFileTool, GrepSearchTool, ListFilesTool, RunShellTool, WriteFileTool, EditFileTool,
    CompactTool, SearchHistoryTool, TodoWriteTool, SkillTool, ShellOutputTool, KillShellTool,
    WebFetchTool, ExitPlanModeTool,
)


def declare_builtin_tools() -> None:
    """Tell the process's view of tool kinds what each built-in tool is, so that rules, plan
    mode and the Claude Code name table know them before any registry is built."""
    for builtin in BUILTIN_TOOLS:
        declare(builtin.spec.name, builtin.traits)
    declare(TASK_TOOL_NAME, TaskTool.traits)


declare_builtin_tools()


def tools_of_kind(*kinds: ToolKind) -> tuple[str, ...]:
    """The names of every tool the process knows of these kinds ("which tools read?")."""
    return known_tools().of_kind(*kinds)


class ToolRegistry:
    """Tools in a fixed order; ``specs()`` returns the same objects every time.

    The specs are part of the prompt-cache prefix, so they are built once
    and never rebuilt: callers must not mutate them. Every tool given or added is
    declared to the process's view of tool kinds (:mod:`mini_claude.tool_kinds`).
    """

    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.spec.name in self._tools:
                raise ValueError(f"two tools are named {tool.spec.name!r}")
            self._tools[tool.spec.name] = tool
            declare(tool.spec.name, tool.traits)
        self._specs = tuple(tool.spec for tool in self._tools.values())

    def specs(self) -> list[ToolSpec]:
        return list(self._specs)

    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def add(self, tool: Tool) -> bool:
        """A tool that became available later (an MCP server connected); False if the
        name is taken. The specs change once, so the prompt cache is rebuilt once."""
        if tool.spec.name in self._tools:
            return False
        self._tools[tool.spec.name] = tool
        declare(tool.spec.name, tool.traits)
        self._specs = (*self._specs, tool.spec)
        return True

    def traits(self, name: str) -> ToolTraits:
        """What the tool declared; a name the model made up is of kind ``other``."""
        tool = self._tools.get(name)
        return tool.traits if tool is not None else OTHER

    def of_kind(self, *kinds: ToolKind) -> list[str]:
        """This registry's tools of these kinds, in order."""
        return [name for name, tool in self._tools.items() if tool.traits.kind in kinds]

    def remove(self, name: str) -> bool:
        """Leave a tool out before the session's first request (the skill tool when there
        are no skills to load); False if there is no such tool."""
        if self._tools.pop(name, None) is None:
            return False
        self._specs = tuple(tool.spec for tool in self._tools.values())
        return True

    async def execute(self, name: str, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        tool = self._tools.get(name)
        if tool is None:
            return error_output(
                f"Unknown tool {name!r}. Available tools: {', '.join(self._tools)}"
            )
        if not isinstance(args, Mapping):
            return error_output(
                f"The arguments for {name} must be a JSON object, not {_json_type(args)}. "
                f"Expected {signature(tool.spec)}"
            )
        if ARGUMENTS_REFUSED_KEY in args:
            return error_output(str(args[ARGUMENTS_REFUSED_KEY]))
        if RAW_ARGUMENTS_KEY in args:
            sent = shorten(str(args[RAW_ARGUMENTS_KEY]), 200, marker="...")
            if has_invalid_number(str(args[RAW_ARGUMENTS_KEY])):
                return error_output(
                    f"invalid number in arguments for {name}: {sent!r} (JSON has no NaN, "
                    "Infinity or numbers too large for a double). Call the tool again with "
                    "finite numbers."
                )
            return error_output(
                f"The arguments for {name} were not valid JSON: {sent!r}. "
                "Call the tool again with a JSON object that matches its schema."
            )
        checked, problems = check_arguments(tool.spec.input_schema, args)
        if problems:
            return error_output(
                f"Invalid arguments for {name}: {'; '.join(problems)}. "
                f"Expected {signature(tool.spec)}"
            )
        try:
            prepared = await check_permission(tool, checked, ctx)
            if isinstance(prepared, ToolOutput):
                return prepared  # refused
            return await tool.run(checked, ctx, prepared)
        except Exception as exc:
            return error_output(f"{name} failed unexpectedly: {_one_line(exc)}")


def has_invalid_number(raw: str) -> bool:
    """The text is a JSON object apart from a non-finite number (``1e999``, ``NaN``)."""
    try:
        return has_non_finite(json.loads(raw))
    except ValueError:
        return False


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    detail = shorten(lines[0], 300, marker="...") if lines else ""
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


# ---- arguments ---------------------------------------------------------------------


def check_arguments(
    schema: Mapping[str, Any], args: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """Check arguments against a flat object schema; return them tidied, and the problems.

    Tidying forgives what models commonly get slightly wrong: ``null`` for an
    optional argument (dropped), numbers sent as strings or as ``10.0``.
    """
    properties: Mapping[str, Any] = schema.get("properties", {})
    required: list[str] = list(schema.get("required", []))
    extra_allowed = schema.get("additionalProperties", True) is not False
    problems = [f"missing required argument {key!r}" for key in required if args.get(key) is None]
    checked: dict[str, Any] = {}
    for key, value in args.items():
        if key not in properties:
            if extra_allowed:
                checked[key] = value
            else:
                problems.append(f"unknown argument {key!r}")
            continue
        if value is None:
            continue  # reported above when required
        expected = properties[key].get("type")
        converted = _convert(expected, value) if isinstance(expected, str) else value
        if converted is None:
            problems.append(f"{key!r} must be {_a(expected)} (got {_json_type(value)})")
        else:
            checked[key] = converted
    return checked, problems


def _convert(expected: str, value: Any) -> Any:
    """The value as the expected JSON type, or None when it cannot be read as one."""
    if expected == "integer":
        number = _as_number(value)
        return int(number) if number is not None and float(number).is_integer() else None
    if expected == "number":
        return _as_number(value)
    python_type = {"string": str, "boolean": bool, "array": list, "object": dict}.get(expected)
    if python_type is None:
        return value  # a type this checker does not know: let the tool judge
    return value if isinstance(value, python_type) else None


def _as_number(value: Any) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _json_type(value: Any) -> str:
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def _a(type_name: Any) -> str:
    name = str(type_name)
    return ("an " if name[:1] in "aeiou" else "a ") + name


def signature(spec: ToolSpec) -> str:
    """``read_file(path: string, offset?: integer)``: the schema in one line for an error."""
    properties: Mapping[str, Any] = spec.input_schema.get("properties", {})
    required = set(spec.input_schema.get("required", []))
    params = ", ".join(
        f"{key}{'' if key in required else '?'}: {prop.get('type', 'any')}"
        for key, prop in properties.items()
    )
    return f"{spec.name}({params})"


def default_registry(grep_backend: GrepBackend | None = None) -> ToolRegistry:
    """Every tool, in the order the model sees them."""
    searching = (GrepSearchTool, SearchHistoryTool)
    return ToolRegistry(
        [tool(grep_backend) if tool in searching else tool()
         for tool in BUILTIN_TOOLS]
    )
