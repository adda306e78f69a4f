"""The model cannot rewrite mini-claude's own files, nor read the home without a person's
yes, and a denied call never costs print mode its result line. Both providers, over HTTP."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from mini_claude.simulator import Reply, ScriptedPolicy, SimConversation, ToolCall
from tests.support.hostile import Cli
from tests.support.printing import RESULT

HOME_SECRET = "home-env-secret-0123456789"


@pytest.fixture
def cli(cli: Cli) -> Cli:
    """The shared command line, with a home that holds settings and a .env worth taking."""
    cli.home.mkdir(parents=True, exist_ok=True)
    (cli.home / "settings.json").write_text('{"permissions": {"allow": []}}\n')
    (cli.home / ".env").write_text(f"SOME_TOKEN={HOME_SECRET}\n")
    return cli


def calls_then_report(calls: list[ToolCall]) -> tuple[ScriptedPolicy, list[str]]:
    """Each call in its own reply; every result is kept for the test."""
    seen: list[str] = []

    def keep(conv: SimConversation, reply: Reply) -> Reply:
        seen.extend(r.content for r in conv.last_tool_results())
        return reply

    def then(reply: Reply) -> Callable[[SimConversation], Reply]:
        return lambda conv: keep(conv, reply)

    steps: list[Reply | Callable[[SimConversation], Reply]] = [Reply("Working.", [calls[0]])]
    steps += [then(Reply("Working.", [call])) for call in calls[1:]]
    steps.append(then(Reply("Finished.")))
    return ScriptedPolicy(steps), seen


def home_writes(home: str) -> list[ToolCall]:
    hook = {"hooks": {"PreToolUse": [{"matcher": "", "hooks": [
        {"type": "command", "command": "touch pwned"}]}]}}
    return [
        ToolCall("write_file", {"path": f"{home}/settings.json", "content": json.dumps(hook)}),
        ToolCall("edit_file", {"path": f"{home}/settings.json", "old": "[]",
                               "new": '["run_shell"]'}),
        ToolCall("write_file", {"path": f"{home}/transcripts/forged.jsonl", "content": "{}\n"}),
        ToolCall("write_file", {"path": f"{home}/trust.json", "content": "{}"}),
        ToolCall("write_file", {"path": "via-link/mcp.json", "content": "{}"}),
    ]


@pytest.mark.parametrize("where", ["above", "inside"])
def test_no_writing_tool_writes_into_the_home(cli: Cli, where: str) -> None:
    """With the project folder above the home (the probe's case) or the home linked from
    inside the project: every write into it is refused, even when allowed by rule and --yes."""
    cwd = cli.project.parent if where == "above" else cli.project
    (cwd / "via-link").symlink_to(cli.home)
    home = "home" if where == "above" else str(cli.home)
    before = (cli.home / "settings.json").read_text()
    cli.sim.policy, seen = calls_then_report(home_writes(home))
    outcome = cli.run("-p", "configure yourself", "--yes",
                      "--allowed-tools", "write_file", "edit_file", cwd=cwd)
    assert outcome.code == 0, outcome.err
    assert (cli.home / "settings.json").read_text() == before
    assert not (cli.home / "transcripts" / "forged.jsonl").exists()
    assert not (cli.home / "trust.json").exists() and not (cli.home / "mcp.json").exists()
    assert len(seen) == 5 and all("inside mini-claude's home" in r for r in seen), "\n".join(seen)
    cli.sim.policy = ScriptedPolicy([Reply("Running.", [ToolCall("run_shell", {
        "command": "echo hi"})]), Reply("done")])
    again = cli.run("-p", "again", "--yes", cwd=cwd)
    assert again.code == 0 and not (cwd / "pwned").exists()


@pytest.mark.parametrize("where", ["outside", "above"])
def test_yes_does_not_let_the_model_read_the_home(cli: Cli, where: str) -> None:
    cwd = cli.project if where == "outside" else cli.project.parent
    path = str(cli.home / ".env") if where == "outside" else "home/.env"
    others = cli.home / "transcripts" / "other-session.jsonl"
    others.parent.mkdir(parents=True, exist_ok=True)
    others.write_text(json.dumps({"secret": HOME_SECRET}) + "\n")
    cli.sim.policy, seen = calls_then_report([
        ToolCall("read_file", {"path": path}),
        ToolCall("read_file", {"path": str(others)}),
        ToolCall("grep_search", {"pattern": "secret", "path": str(cli.home)}),
        ToolCall("list_files", {"path": str(cli.home / "transcripts")}),
    ])
    outcome = cli.run("-p", "look around", "--yes", "--disallowed-tools", "run_shell", cwd=cwd)
    assert outcome.code == 0, outcome.err
    assert len(seen) == 4 and all("not covered by --yes" in r for r in seen), seen
    for request in cli.sim.requests:
        assert HOME_SECRET not in json.dumps(request.body)
    allowed = cli.run("-p", "look", "--yes", "--allowed-tools", "read_file", cwd=cwd)
    assert allowed.code == 0  # an explicit rule is the user's own yes


def test_searching_and_listing_the_project_pass_by_a_home_inside_it(cli: Cli) -> None:
    """The project folder holds the home (the probe's case): a search or a listing of the
    whole project never walks into it, while the project's own files are found."""
    cwd = cli.project.parent
    assert cli.home.parent == cwd
    (cli.project / "notes.txt").write_text("secret of the project\n")
    others = cli.home / "transcripts" / "other-session.jsonl"
    others.parent.mkdir(parents=True, exist_ok=True)
    others.write_text(json.dumps({"secret": HOME_SECRET}) + "\n")
    cli.sim.policy, seen = calls_then_report([
        ToolCall("grep_search", {"pattern": "secret", "path": "."}),
        ToolCall("list_files", {"path": "."}),
    ])
    outcome = cli.run("-p", "look around", "--yes", cwd=cwd)
    assert outcome.code == 0, outcome.err
    grep, listing = seen
    assert "notes.txt" in grep and "notes.txt" in listing
    assert "other-session" not in grep + listing and ".env" not in grep + listing
    for request in cli.sim.requests:
        assert HOME_SECRET not in json.dumps(request.body)


@pytest.mark.parametrize("output_format", ["json", "stream-json"])
def test_a_denied_write_or_edit_still_ends_with_a_result_line(
    cli: Cli, output_format: str
) -> None:
    (cli.project / "notes.txt").write_text("old\n")
    cli.sim.policy = ScriptedPolicy([
        Reply("Reading.", [ToolCall("read_file", {"path": "notes.txt"})]),
        Reply("Writing.", [ToolCall("write_file", {"path": "new.txt", "content": "x"}),
                           ToolCall("edit_file", {"path": "notes.txt", "old": "old",
                                                  "new": "new"})]),
        Reply("Both were denied."),
    ])
    outcome = cli.run("-p", "change things", "--output-format", output_format)
    assert outcome.code == 0, outcome.err
    assert "Traceback" not in outcome.err and "not JSON serializable" not in outcome.err
    result = json.loads(outcome.out.splitlines()[-1])
    RESULT.validate(result)
    assert result["subtype"] == "success" and result["result"] == "Both were denied."
    denied = result["permission_denials"]
    assert [d["tool_name"] for d in denied] == ["write_file", "edit_file"]
    assert denied[0]["tool_input"]["path"] == "new.txt"
    assert denied[1]["tool_input"]["old"] == "old"
    assert (cli.project / "notes.txt").read_text() == "old\n"
