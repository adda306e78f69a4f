"""The registry: stable schemas, and a dispatch that turns every failure into a result."""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from mini_claude.permissions.asking import PermissionDecision, PermissionRequest
from mini_claude.project.skills import Skill, SkillCatalog
from mini_claude.protocol import (
    RAW_ARGUMENTS_KEY,
    CompactionRequested,
    PlanChanged,
    SkillLoaded,
    ToolOutput,
    ToolSpec,
)
from mini_claude.tool_kinds import ToolTraits
from mini_claude.tools.base import NOTHING_TO_ASK, Prepared, ToolContext
from mini_claude.tools.builtin.grep_search import PythonBackend
from mini_claude.tools.registry import ToolRegistry, check_arguments, default_registry
from tests.support.tools import ScriptedApprover, run, tool_context

EXPECTED_ORDER = [
    "read_file", "grep_search", "list_files", "run_shell", "write_file", "edit_file", "compact",
    "search_history",
    "todo_write", "skill", "shell_output", "kill_shell", "web_fetch", "exit_plan_mode",
]


def execute(name: str, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
    return run(default_registry(PythonBackend()).execute(name, args, ctx))


class ExplodingTool:
    spec = ToolSpec("explode", "Always fails.", {"type": "object", "properties": {}})
    read_only = True
    traits = ToolTraits(plan_mode=True)

    def __init__(self, error: BaseException, *, in_permission: bool = False) -> None:
        self.error = error
        self.in_permission = in_permission

    def permission(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        if self.in_permission:
            raise self.error
        return NOTHING_TO_ASK

    async def run(self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared) -> ToolOutput:
        raise self.error


# ---- specs --------------------------------------------------------------------------------


def test_specs_are_in_a_fixed_order_with_matching_names() -> None:
    registry = default_registry(PythonBackend())
    assert [spec.name for spec in registry.specs()] == EXPECTED_ORDER
    assert registry.names() == EXPECTED_ORDER


def test_specs_are_byte_identical_across_calls_and_registries() -> None:
    def text(registry: ToolRegistry) -> str:
        return json.dumps([asdict(spec) for spec in registry.specs()])

    first = default_registry(PythonBackend())
    assert text(first) == text(first)
    assert text(first) == text(default_registry(PythonBackend()))


def test_every_spec_is_a_closed_object_schema_with_described_properties() -> None:
    for spec in default_registry(PythonBackend()).specs():
        schema = spec.input_schema
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        assert set(schema.get("required", [])) <= set(schema["properties"])
        assert all(prop.get("description") for prop in schema["properties"].values())
        assert 60 < len(spec.description) < 800


def test_read_only_flags() -> None:
    registry = default_registry(PythonBackend())
    read_only = {name for name in registry.names() if registry.get(name).read_only}  # type: ignore[union-attr]
    assert read_only == {"read_file", "grep_search", "list_files", "compact", "search_history",
                         "todo_write", "skill", "shell_output", "kill_shell", "exit_plan_mode"}
    assert registry.get("nonexistent") is None


def test_duplicate_names_are_rejected() -> None:
    tool = ExplodingTool(RuntimeError())
    with pytest.raises(ValueError, match="explode"):
        ToolRegistry([tool, tool])


# ---- dispatch errors ------------------------------------------------------------------------


def test_unknown_tool_names_the_available_ones(tmp_path: Path) -> None:
    out = execute("delete_everything", {}, tool_context(tmp_path))
    assert out.is_error
    assert out.content == (
        "Unknown tool 'delete_everything'. Available tools: " + ", ".join(EXPECTED_ORDER)
    )


def test_raw_arguments_are_quoted_back_shortly(tmp_path: Path) -> None:
    sent = '{"path": "a.py", "offset": ' + "9" * 1_000
    out = execute("read_file", {RAW_ARGUMENTS_KEY: sent}, tool_context(tmp_path))
    assert out.is_error
    assert out.content.startswith("The arguments for read_file were not valid JSON: '{\"path\": ")
    assert len(out.content) < 400


def test_arguments_that_are_not_an_object_are_refused(tmp_path: Path) -> None:
    out = execute("read_file", ["a.py"], tool_context(tmp_path))  # type: ignore[arg-type]
    assert out.is_error
    assert out.content.startswith("The arguments for read_file must be a JSON object, not array")


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({}, "missing required argument 'path'"),
        ({"path": None}, "missing required argument 'path'"),
        ({"path": 7}, "'path' must be a string (got integer)"),
        ({"path": "a", "offset": "first"}, "'offset' must be an integer (got string)"),
        ({"path": "a", "limit": 2.5}, "'limit' must be an integer (got number)"),
        ({"path": "a", "limit": True}, "'limit' must be an integer (got boolean)"),
        ({"path": "a", "encoding": "latin-1"}, "unknown argument 'encoding'"),
    ],
)
def test_schema_errors_are_clear_results(
    tmp_path: Path, args: dict[str, Any], problem: str
) -> None:
    out = execute("read_file", args, tool_context(tmp_path))
    assert out.is_error
    assert out.content.startswith("Invalid arguments for read_file: ")
    assert problem in out.content
    expected = "Expected read_file(path: string, offset?: integer, limit?: integer)"
    assert out.content.endswith(expected)


def test_forgivable_argument_shapes_are_tidied() -> None:
    schema = default_registry(PythonBackend()).get("read_file").spec.input_schema  # type: ignore[union-attr]
    checked, problems = check_arguments(schema, {"path": "a", "offset": "3", "limit": 10.0})
    assert problems == []
    assert checked == {"path": "a", "offset": 3, "limit": 10}
    checked, problems = check_arguments(schema, {"path": "a", "offset": None})
    assert problems == [] and checked == {"path": "a"}


def test_tidied_arguments_reach_the_tool(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("a\nb\nc\n")
    args = {"path": "f.txt", "offset": "2", "limit": "1"}
    out = execute("read_file", args, tool_context(tmp_path))
    assert out.content.startswith("     2\tb")


# ---- permission ---------------------------------------------------------------------------


def test_allowed_command_runs_once_asked(tmp_path: Path) -> None:
    approver = ScriptedApprover(PermissionDecision(True))
    ctx = tool_context(tmp_path, approve=approver)
    out = execute("run_shell", {"command": "echo ran"}, ctx)
    assert out.content == "ran\n[exit code 0]"
    assert [r.subject for r in approver.requests] == ["run_shell:echo ran"]
    assert ctx.allowed_subjects == set()
    execute("run_shell", {"command": "echo ran"}, ctx)
    assert len(approver.requests) == 2  # not remembered: asked again


def test_denied_command_does_not_run_and_the_model_hears_why(tmp_path: Path) -> None:
    approver = ScriptedApprover(PermissionDecision(False, reason="use the Makefile instead"))
    ctx = tool_context(tmp_path, approve=approver)
    out = execute("run_shell", {"command": "touch made.txt"}, ctx)
    assert out.is_error
    assert out.content == "Permission denied by the user: use the Makefile instead"
    assert not (tmp_path / "made.txt").exists()


def test_denial_without_a_reason(tmp_path: Path) -> None:
    ctx = tool_context(tmp_path, approve=ScriptedApprover(PermissionDecision(False)))
    out = execute("write_file", {"path": "x.txt", "content": "x"}, ctx)
    assert out.content == "Permission denied by the user"
    assert not (tmp_path / "x.txt").exists()


def test_remembered_subject_is_not_asked_again(tmp_path: Path) -> None:
    approver = ScriptedApprover(PermissionDecision(True, remember=True))
    ctx = tool_context(tmp_path, approve=approver)
    execute("write_file", {"path": "a.txt", "content": "1"}, ctx)
    execute("write_file", {"path": "b.txt", "content": "2"}, ctx)
    execute("run_shell", {"command": "true"}, ctx)
    execute("run_shell", {"command": "true"}, ctx)
    execute("run_shell", {"command": "false"}, ctx)
    assert [r.subject for r in approver.requests] == [
        "write_file", "run_shell:true", "run_shell:false",
    ]
    assert ctx.allowed_subjects == {"write_file"}
    assert ctx.rules is not None  # commands are remembered as prefix rules for the session
    assert [r.text for r in ctx.rules.session_allow] == ["run_shell(true:*)", "run_shell(false:*)"]
    assert (tmp_path / "b.txt").read_text() == "2"


def test_read_only_tools_in_the_project_never_ask(tmp_path: Path) -> None:
    approver = ScriptedApprover(PermissionDecision(False))
    ctx = tool_context(tmp_path, approve=approver)
    (tmp_path / "f.txt").write_text("x\n")
    for name, args in [("read_file", {"path": "f.txt"}), ("grep_search", {"pattern": "x"}),
                       ("list_files", {}), ("compact", {"focus": "the parser"})]:
        assert not execute(name, args, ctx).is_error
    assert approver.requests == []


# ---- failures inside tools ------------------------------------------------------------------


def test_an_exception_inside_a_tool_becomes_a_one_line_error(tmp_path: Path) -> None:
    registry = ToolRegistry([ExplodingTool(RuntimeError("disk on fire\n  at line 3"))])
    out = run(registry.execute("explode", {}, tool_context(tmp_path)))
    assert out.is_error
    assert out.content == "explode failed unexpectedly: RuntimeError: disk on fire"


def test_an_exception_while_asking_permission_is_an_error_too(tmp_path: Path) -> None:
    registry = ToolRegistry([ExplodingTool(KeyError("subject"), in_permission=True)])
    out = run(registry.execute("explode", {}, tool_context(tmp_path)))
    assert out.content == "explode failed unexpectedly: KeyError: 'subject'"


def test_a_failing_approver_is_an_error_not_a_crash(tmp_path: Path) -> None:
    async def broken(request: PermissionRequest) -> PermissionDecision:
        raise OSError("terminal went away")

    out = execute("run_shell", {"command": "true"}, tool_context(tmp_path, approve=broken))
    assert out.is_error
    assert "terminal went away" in out.content


def test_cancellation_passes_through(tmp_path: Path) -> None:
    registry = ToolRegistry([ExplodingTool(asyncio.CancelledError())])
    with pytest.raises(asyncio.CancelledError):
        run(registry.execute("explode", {}, tool_context(tmp_path)))


def test_compact_only_reports_the_request_for_the_agent(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    ctx = tool_context(project)
    out = execute("compact", {"focus": "tests"}, ctx)
    assert not out.is_error
    assert "summarized" in out.content
    assert out.effects == (CompactionRequested("tests"),)
    assert execute("compact", {}, ctx).effects == (CompactionRequested(None),)
    assert list(project.iterdir()) == []
    refused = execute("compact", {"focus": ["tests"]}, ctx)
    assert refused.is_error and refused.effects == ()


def test_todo_write_and_skill_report_what_they_changed(tmp_path: Path) -> None:
    folder = tmp_path / "skills" / "release"
    folder.mkdir(parents=True)
    skill = Skill("release", "cut a release", "Tag, then publish.", folder, "project")
    ctx = tool_context(tmp_path)
    ctx.skills = SkillCatalog({"release": skill})
    todos = {"todos": [{"content": "tag", "status": "in_progress"}]}
    assert execute("todo_write", todos, ctx).effects == (PlanChanged(),)
    assert execute("skill", {"name": "release"}, ctx).effects == (SkillLoaded("release"),)
    assert execute("skill", {"name": "unknown"}, ctx).effects == ()  # an error changes nothing
    assert execute("todo_write", {"todos": [{"content": "x"}]}, ctx).effects == ()
