"""The permission decision through the registry: modes, ask rules, remembered rules, plans."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mini_claude.permissions.asking import PermissionDecision, PermissionRequest, deny_all
from mini_claude.permissions.mode_table import PermissionMode
from mini_claude.permissions.modes import Permissions
from mini_claude.permissions.rules import PermissionRules, parse_rule
from mini_claude.protocol import ToolOutput, ToolSpec
from mini_claude.tool_kinds import ToolTraits
from mini_claude.tools.base import Prepared, ToolContext
from mini_claude.tools.permission_gate import users_own
from mini_claude.tools.registry import ToolRegistry, default_registry
from tests.support.tools import ScriptedApprover, run, tool_context

REGISTRY = default_registry()


def execute(name: str, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
    return run(REGISTRY.execute(name, args, ctx))


def context(root: Path, mode: PermissionMode = "default", *, allow: tuple[str, ...] = (),
            ask: tuple[str, ...] = (), deny: tuple[str, ...] = (),
            answer: PermissionDecision | None = None,
            extra: tuple[Path, ...] = ()) -> tuple[ToolContext, ScriptedApprover]:
    approver = ScriptedApprover(answer or PermissionDecision(True))
    ctx = tool_context(root, approve=approver)
    parsed = [tuple(parse_rule(t, "settings", root) for t in group) for group in (allow, deny, ask)]
    ctx.rules = Permissions(PermissionRules(*parsed), mode=mode, additional_directories=extra)
    return ctx, approver


def test_plan_mode_runs_only_read_only_tools(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    ctx, approver = context(tmp_path, "plan", allow=("Bash",))
    for name, args in [
        ("write_file", {"path": "b.txt", "content": "x"}),
        ("edit_file", {"path": "a.txt", "old": "alpha", "new": "beta"}),
        ("run_shell", {"command": "touch c.txt"}),
        ("run_shell", {"command": "ls > listing.txt"}),
    ]:
        output = execute(name, args, ctx)
        assert output.is_error and "plan mode is on" in output.content, name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]
    assert (tmp_path / "a.txt").read_text() == "alpha\n"
    assert not execute("read_file", {"path": "a.txt"}, ctx).is_error
    listed = execute("run_shell", {"command": "ls"}, ctx)  # read-only, and allowed by rule
    assert not listed.is_error and "a.txt" in listed.content
    assert approver.requests == []
    assert [d.tool_name for d in ctx.denials] == ["write_file", "edit_file", "run_shell",
                                                 "run_shell"]


def test_plan_mode_lets_web_fetch_ask_for_its_domain(tmp_path: Path) -> None:
    """Fetching a page changes nothing, so plan mode lets it through to its usual question
    (Claude Code plans with web fetches too); the answer still decides."""
    ctx, approver = context(tmp_path, "plan", answer=PermissionDecision(False, reason="not now"))
    output = execute("web_fetch", {"url": "https://docs.example.org/guide"}, ctx)
    assert output.is_error and "plan mode" not in output.content
    assert "Permission denied" in output.content and "not now" in output.content
    [asked] = approver.requests
    assert asked.tool_name == "web_fetch" and asked.subject == "web_fetch:docs.example.org"


def test_accept_edits_writes_in_the_project_and_its_additional_folders_without_asking(
    tmp_path: Path,
) -> None:
    project, extra, elsewhere = tmp_path / "repo", tmp_path / "shared", tmp_path / "other"
    for folder in (project, extra, elsewhere):
        folder.mkdir()
    ctx, approver = context(project, "acceptEdits", extra=(extra.resolve(),),
                            answer=PermissionDecision(False, reason="no"))
    assert not execute("write_file", {"path": "new.txt", "content": "1"}, ctx).is_error
    assert not execute("write_file", {"path": str(extra / "n.txt"), "content": "2"}, ctx).is_error
    assert (extra / "n.txt").read_text() == "2"
    refused = execute("write_file", {"path": str(elsewhere / "x.txt"), "content": "3"}, ctx)
    assert refused.is_error and "outside the project" in refused.content
    assert not execute("run_shell", {"command": "mkdir -p d && touch d/t"}, ctx).is_error
    assert not execute("run_shell", {"command": f"cp d/t {extra}/t2"}, ctx).is_error
    assert (project / "d" / "t").exists() and (extra / "t2").exists()
    for command in ("touch ../other/x", "echo x > e", "touch $X", "rm d/t", "mv d/t /tmp/"):
        assert execute("run_shell", {"command": command}, ctx).is_error, command
    assert [r.summary for r in approver.requests] == [
        "touch ../other/x", "echo x > e", "touch $X", "rm d/t", "mv d/t /tmp/"]
    assert not (elsewhere / "x").exists() and (project / "d" / "t").exists()


def test_bypass_runs_everything_but_deny_rules_and_ask_rules_still_hold(tmp_path: Path) -> None:
    ctx, approver = context(tmp_path, "bypassPermissions", deny=("Bash(rm:*)",),
                            ask=("Write(notes/**)",),
                            answer=PermissionDecision(False, reason="not there"))
    assert not execute("run_shell", {"command": "touch made"}, ctx).is_error
    denied = execute("run_shell", {"command": "timeout 5 rm made"}, ctx)
    assert denied.is_error and "Permission denied by the rule 'Bash(rm:*)'" in denied.content
    assert (tmp_path / "made").exists()
    asked = execute("write_file", {"path": "notes/a.md", "content": "x"}, ctx)
    assert asked.is_error and "not there" in asked.content
    [request] = approver.requests
    assert "asked by the rule 'Write(notes/**)'" in request.summary


def test_an_ask_rule_asks_even_for_a_tool_that_never_asks(tmp_path: Path) -> None:
    (tmp_path / "config.yml").write_text("x: 1\n")
    ctx, approver = context(tmp_path, ask=("Read(config.yml)",))
    assert not execute("read_file", {"path": "config.yml"}, ctx).is_error
    assert [r.tool_name for r in approver.requests] == ["read_file"]


def test_dont_ask_again_remembers_a_prefix_rule_and_never_a_compound(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("a\n")
    (tmp_path / "b.md").write_text("b\n")
    ctx, approver = context(tmp_path, answer=PermissionDecision(True, remember=True))
    execute("run_shell", {"command": "cat a.md"}, ctx)
    assert approver.requests[0].rule == "run_shell(cat:*)"
    execute("run_shell", {"command": "cat b.md"}, ctx)
    execute("run_shell", {"command": "cat a.md && touch x"}, ctx)
    assert [r.summary for r in approver.requests] == ["cat a.md", "cat a.md && touch x"]
    assert ctx.rules is not None
    assert [r.text for r in ctx.rules.session_allow] == [
        "run_shell(cat:*)", "run_shell(cat a.md && touch x)"]
    session_rule = ctx.rules.session_allow[0]
    ctx.rules.remove(session_rule)  # /permissions remove
    execute("run_shell", {"command": "cat b.md"}, ctx)
    assert len(approver.requests) == 3


def test_removing_a_settings_rule_stops_it_for_the_session(tmp_path: Path) -> None:
    ctx, _ = context(tmp_path, deny=("Bash(touch:*)",))
    assert execute("run_shell", {"command": "touch x"}, ctx).is_error
    assert ctx.rules is not None
    [(behavior, rule)] = ctx.rules.listing()
    assert behavior == "deny" and rule.source == "settings"
    ctx.rules.remove(rule)
    assert not execute("run_shell", {"command": "touch x"}, ctx).is_error
    assert (tmp_path / "x").exists()


def mode_of(ctx: ToolContext) -> str:
    assert ctx.rules is not None
    return ctx.rules.mode


class PlanAnswers:
    """Approves a plan with the given mode, or keeps planning with feedback."""

    def __init__(self, *answers: PermissionDecision) -> None:
        self.answers = list(answers)
        self.requests: list[PermissionRequest] = []

    async def __call__(self, request: PermissionRequest) -> PermissionDecision:
        self.requests.append(request)
        return self.answers.pop(0)


def test_exit_plan_mode_keeps_planning_then_switches_to_the_chosen_mode(tmp_path: Path) -> None:
    ctx, _ = context(tmp_path, "plan")
    answers = PlanAnswers(PermissionDecision(False, reason="also update the docs"),
                          PermissionDecision(True, mode="acceptEdits"))
    ctx.approve = answers
    first = execute("exit_plan_mode", {"plan": "1. change a\n2. test"}, ctx)
    assert "also update the docs" in first.content and "keep planning" in first.content
    assert ctx.rules is not None and ctx.rules.mode == "plan"
    second = execute("exit_plan_mode", {"plan": "1. change a\n2. docs\n3. test"}, ctx)
    assert "approved" in second.content
    assert mode_of(ctx) == "acceptEdits"
    assert ctx.rules.approved_plan == "1. change a\n2. docs\n3. test"
    assert answers.requests[1].detail == "1. change a\n2. docs\n3. test"
    assert not execute("write_file", {"path": "a.txt", "content": "x"}, ctx).is_error
    again = execute("exit_plan_mode", {"plan": "more"}, ctx)
    assert again.is_error and "Not in plan mode" in again.content


def test_print_mode_records_the_plan_and_tells_the_model_to_stop(tmp_path: Path) -> None:
    ctx, _ = context(tmp_path, "plan")
    ctx.approve = deny_all
    output = execute("exit_plan_mode", {"plan": "the plan"}, ctx)
    assert not output.is_error and "reply with the plan as your final answer" in output.content
    assert ctx.rules is not None and ctx.rules.mode == "plan"
    assert ctx.rules.proposed_plan == "the plan" and ctx.rules.approved_plan is None


def test_shift_tab_cycles_and_reaches_bypass_only_when_started_with_it() -> None:
    permissions = Permissions()
    seen = []
    for _ in range(4):
        permissions.set_mode(permissions.next_mode())
        seen.append(permissions.mode)
    assert seen == ["acceptEdits", "plan", "default", "acceptEdits"]
    bypass = Permissions(mode="bypassPermissions")
    assert bypass.next_mode() == "default"
    bypass.set_mode("plan")
    assert bypass.next_mode() == "bypassPermissions"


class FetchTool:
    """A stand-in for a URL-fetching tool: it only names its ``url`` argument."""

    spec = ToolSpec("web_fetch", "Fetch a URL.", {
        "type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]})
    read_only = True
    traits = ToolTraits("web", "domain", "url", ("WebFetch",), plan_mode=True)

    def permission(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        url = args["url"]
        return Prepared(PermissionRequest("web_fetch", f"fetch {url}", f"web_fetch:{url}"))

    async def run(self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared) -> ToolOutput:
        return ToolOutput(f"fetched {args['url']}")


def test_a_fetch_tool_is_asked_per_domain_and_domain_rules_apply(tmp_path: Path) -> None:
    registry = ToolRegistry([FetchTool()])
    ctx, approver = context(tmp_path, deny=("WebFetch(domain:evil.test)",),
                            answer=PermissionDecision(True, remember=True))

    def fetch(url: str) -> ToolOutput:
        return run(registry.execute("web_fetch", {"url": url}, ctx))

    assert not fetch("https://docs.example.com/a").is_error
    assert approver.requests[0].rule == "web_fetch(domain:docs.example.com)"
    assert not fetch("https://docs.example.com/b?q=1").is_error
    assert not fetch("https://other.org/").is_error
    assert [r.summary for r in approver.requests] == ["fetch https://docs.example.com/a",
                                                      "fetch https://other.org/"]
    refused = fetch("https://cdn.evil.test/x")
    assert refused.is_error and "WebFetch(domain:evil.test)" in refused.content


def test_plan_mode_and_rules_hold_back_the_model_not_the_users_own_commands(
    tmp_path: Path,
) -> None:
    ctx, approver = context(tmp_path, "plan", deny=("Bash(rm:*)",))
    assert execute("run_shell", {"command": "touch model.txt"}, ctx).is_error
    mine = users_own(ctx)
    assert not execute("run_shell", {"command": "touch mine.txt"}, mine).is_error
    assert [p.name for p in tmp_path.iterdir()] == ["mine.txt"]
    assert not execute("run_shell", {"command": "rm mine.txt"}, mine).is_error  # as bash mode
    assert list(tmp_path.iterdir()) == []
    assert approver.requests == []  # typing the command was the answer
    assert ctx.rules is not None and ctx.rules.mode == "plan"
    assert execute("run_shell", {"command": "rm x"}, ctx).is_error  # the model: still denied


def test_a_fetch_refused_whatever_the_answer_fails_without_asking(tmp_path: Path) -> None:
    ctx, approver = context(tmp_path)
    for url in ("http://127.0.0.1:9/admin", "http://localhost/x", "http://[::1]/",
                "http://169.254.169.254/latest/meta-data", "http://10.0.0.7/", "ftp://example.com/",
                "http://user:pw@example.com/"):
        out = execute("web_fetch", {"url": url}, ctx)
        assert out.is_error, url
        assert "Permission denied" not in out.content
    assert approver.requests == []
    assert not execute("web_fetch", {"url": "https://example.invalid/x"}, ctx).content.startswith(
        "Permission denied")
    assert [r.summary for r in approver.requests] == ["fetch https://example.invalid/x"]


def test_the_question_about_a_background_command_says_it_runs_in_the_background(
    tmp_path: Path,
) -> None:
    ctx, approver = context(tmp_path, answer=PermissionDecision(False, reason="no"))
    execute("run_shell", {"command": "sleep 1", "run_in_background": True}, ctx)
    execute("run_shell", {"command": "sleep 1"}, ctx)
    background, foreground = approver.requests
    assert background.detail is not None and "Runs in the background" in background.detail
    assert foreground.detail is None
