"""Claude Code's rule syntax on our tools: paths, domains, MCP servers, sub-agents, wildcards;
the rule "don't ask again" proposes; which commands plan mode counts as read-only."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_claude.permissions.command_kinds import is_read_only_command, suggest_rule
from mini_claude.permissions.rules import PermissionRules, RuleError, parse_rule


def rules(project: Path, *, allow: tuple[str, ...] = (), deny: tuple[str, ...] = (),
          ask: tuple[str, ...] = ()) -> PermissionRules:
    def parsed(texts: tuple[str, ...]) -> tuple:  # type: ignore[type-arg]
        return tuple(parse_rule(t, "settings", project) for t in texts)

    return PermissionRules(parsed(allow), parsed(deny), parsed(ask))


def behavior(r: PermissionRules, tool: str, **args: str) -> str | None:
    verdict = r.check(tool, args)
    return verdict.behavior if verdict is not None else None


def test_read_rules_cover_the_three_reading_tools_with_gitignore_paths(tmp_path: Path) -> None:
    r = rules(tmp_path, deny=("Read(./.env)", "Read(secrets/**)", "Read(*.pem)"))
    for tool in ("read_file", "grep_search", "list_files"):
        assert behavior(r, tool, path=".env") == "deny"
        assert behavior(r, tool, path="secrets/prod/key") == "deny"
    assert behavior(r, "read_file", path="secrets") == "deny"  # the folder itself
    assert behavior(r, "read_file", path="deep/down/cert.pem") == "deny"  # no slash: any depth
    assert behavior(r, "read_file", path="sub/.env") is None  # ./.env is the project's only
    assert behavior(r, "read_file", path="src/main.py") is None
    assert behavior(r, "read_file", path="./x/../.env") == "deny"
    assert behavior(r, "write_file", path=".env") is None  # Read rules are not Edit rules


def test_a_link_to_a_denied_file_is_denied_too(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("KEY=1")
    (tmp_path / "innocent.txt").symlink_to(tmp_path / ".env")
    r = rules(tmp_path, deny=("Read(./.env)",))
    assert behavior(r, "read_file", path="innocent.txt") == "deny"


def test_edit_and_write_rules_cover_both_writing_tools(tmp_path: Path) -> None:
    r = rules(tmp_path, allow=("Edit(src/**)",), deny=("Write(//etc/**)",))
    for tool in ("edit_file", "write_file"):
        assert behavior(r, tool, path="src/app/main.py") == "allow"
        assert behavior(r, tool, path="docs/x.md") is None
        assert behavior(r, tool, path="/etc/hosts") == "deny"
    assert behavior(r, "read_file", path="src/a.py") is None


def test_home_and_absolute_patterns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "me"
    monkeypatch.setenv("HOME", str(home))
    project = tmp_path / "repo"
    r = rules(project, deny=("Read(~/.ssh/**)", "Read(//var/log/*.log)"))
    assert behavior(r, "read_file", path=str(home / ".ssh" / "id_rsa")) == "deny"
    assert behavior(r, "read_file", path="~/.ssh/id_rsa") == "deny"
    assert behavior(r, "read_file", path="/var/log/syslog.log") == "deny"
    assert behavior(r, "read_file", path=".ssh/id_rsa") is None  # the project's own .ssh


def test_web_fetch_rules_match_the_urls_host(tmp_path: Path) -> None:
    r = rules(tmp_path,
              allow=("WebFetch(domain:docs.python.org)", "web_fetch(domain:*.example.com)"),
              deny=("WebFetch(domain:evil.test)",))
    assert behavior(r, "web_fetch", url="https://docs.python.org/3/library/") == "allow"
    assert behavior(r, "web_fetch", url="https://api.example.com/x") == "allow"
    assert behavior(r, "web_fetch", url="https://docs.python.org.evil.test/") == "deny"
    assert behavior(r, "web_fetch", url="https://EVIL.test:8443/") == "deny"
    assert behavior(r, "web_fetch", url="https://other.org/") is None
    assert behavior(r, "web_fetch", url="not a url") == "deny"  # no host: deny rules hold
    assert behavior(rules(tmp_path, allow=("WebFetch(domain:x.org)",)), "web_fetch",
                    url="not a url") is None
    with pytest.raises(RuleError):
        parse_rule("WebFetch(example.com)", "settings")


def test_mcp_rules_name_a_server_or_one_tool(tmp_path: Path) -> None:
    r = rules(tmp_path, allow=("mcp__github",), deny=("mcp__github__delete_repo", "mcp__db__*"))
    assert behavior(r, "mcp__github__list_issues") == "allow"
    assert behavior(r, "mcp__github__delete_repo") == "deny"
    assert behavior(r, "mcp__db__query") == "deny"
    assert behavior(r, "mcp__githubx__list") is None


def test_task_rules_name_a_sub_agent_type(tmp_path: Path) -> None:
    r = rules(tmp_path, deny=("Task(general)",))
    assert behavior(r, "task", agent_type="general") == "deny"
    assert behavior(r, "task", agent_type="explore") is None


@pytest.mark.parametrize(("rule", "command", "expected"), [
    ("Bash(npm run test:*)", "npm run test -- --watch", "allow"),
    ("Bash(npm run test:*)", "npm run test", "allow"),
    ("Bash(npm run test:*)", "npm run testing", None),
    ("Bash(npm run *)", "npm run lint", "allow"),
    ("Bash(npm run *)", "npm run", "allow"),
    ("Bash(git * main)", "git push origin main", "allow"),
    ("Bash(git * main)", "git push origin main; rm -rf /", None),
    ("Bash(npm run test:*)", "npm run test && curl x | sh", None),
    ("Bash", "anything at all; rm x", "allow"),
])
def test_command_rules_in_claude_codes_syntax(
    tmp_path: Path, rule: str, command: str, expected: str | None
) -> None:
    assert behavior(rules(tmp_path, allow=(rule,)), "run_shell", command=command) == expected


def test_deny_then_ask_then_allow(tmp_path: Path) -> None:
    r = rules(tmp_path, allow=("Bash(git:*)",), ask=("Bash(git push:*)",),
              deny=("Bash(git push --force:*)",))
    assert behavior(r, "run_shell", command="git status") == "allow"
    assert behavior(r, "run_shell", command="git push origin") == "ask"
    assert behavior(r, "run_shell", command="git push --force") == "deny"
    assert behavior(r, "run_shell", command="ls && git push") == "ask"  # ask looks inside too


@pytest.mark.parametrize(("command", "rule"), [
    ("cat docs/changelog.md", "run_shell(cat:*)"),
    ("npm run test -- --watch", "run_shell(npm run test:*)"),
    ("git diff HEAD~1 --stat", "run_shell(git diff:*)"),
    ("pytest -x tests/a.py", "run_shell(pytest:*)"),
    ("python -m pytest -q", "run_shell(python -m pytest:*)"),
    ("cargo build --release", "run_shell(cargo build:*)"),
    ("python script.py", "run_shell(python script.py)"),
    ("rm -rf build", "run_shell(rm -rf build)"),
    ("sudo apt install x", "run_shell(sudo apt install x)"),
    ("cat a && rm b", "run_shell(cat a && rm b)"),
    ("ls | wc -l", "run_shell(ls | wc -l)"),
    ("./run.sh fast", "run_shell(./run.sh fast)"),
    ("git --no-pager log", "run_shell(git:*)"),
])
def test_dont_ask_again_proposes_the_commands_family(command: str, rule: str) -> None:
    assert suggest_rule(command) == rule


def test_a_proposed_prefix_rule_allows_the_family_and_never_a_compound(tmp_path: Path) -> None:
    r = rules(tmp_path, allow=(suggest_rule("cat docs/changelog.md"),))
    assert behavior(r, "run_shell", command="cat docs/changelog.md") == "allow"
    assert behavior(r, "run_shell", command="cat README.md") == "allow"
    assert behavior(r, "run_shell", command="cat x; rm y") is None
    assert behavior(r, "run_shell", command="cat $(rm y)") is None
    assert behavior(r, "run_shell", command="catalog") is None


@pytest.mark.parametrize("command", [
    "ls -la", "cat a b | grep x | wc -l", "git status", "git log --oneline -5",
    "git diff HEAD", "find . -name '*.py'", "rg TODO src", "head -5 f 2>/dev/null",
    "echo hi", "sort f | uniq -c",
])
def test_read_only_commands(command: str) -> None:
    assert is_read_only_command(command)


@pytest.mark.parametrize("command", [
    "rm f", "touch x", "echo hi > out.txt", "cat a >> b", "git commit -m x", "git push",
    "find . -delete", "find . -exec rm {} +", "sort -o out f", "python -c 'print(1)'",
    "$X", "ls; touch y", "sed -i s/a/b/ f", "npm install", "env rm f", "ls $(touch y)",
    "mkdir d", "tee f",
])
def test_commands_that_write_or_are_unknown_are_not_read_only(command: str) -> None:
    assert not is_read_only_command(command)
