"""Agent types: the built-in ones and Markdown files in Claude Code's agent format."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_claude.project.agent_types import AgentFileError, load_catalog, parse_agent_file
from mini_claude.project.front_matter import split


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_builtin_types_have_their_own_prompts_and_read_only_tools_where_promised(
    tmp_path: Path,
) -> None:
    catalog = load_catalog(tmp_path / "repo", tmp_path / "home")
    assert catalog.names() == ["explore", "plan", "general"]
    explore, plan, general = (catalog.types[n] for n in catalog.names())
    assert explore.tools == plan.tools == ("read_file", "grep_search", "list_files")
    assert general.tools is None
    assert len({explore.prompt, plan.prompt, general.prompt}) == 3
    assert "- plan: " in catalog.describe()


def test_claude_code_agent_files_keep_their_meaning(tmp_path: Path) -> None:
    path = write(tmp_path / "a.md", (
        "---\nname: code-reviewer\ndescription: |\n  Reviews changes\n  for bugs.\n"
        "tools:\n  - Read\n  - Bash\n  - MultiEdit\nmodel: sonnet\n---\n\nBe strict.\n"))
    agent = parse_agent_file(path)
    assert agent.description == "Reviews changes for bugs."
    assert agent.tools == ("read_file", "run_shell", "edit_file")
    assert agent.model == "sonnet"  # resolved to the current Sonnet when the sub-agent starts
    assert agent.prompt == "Be strict.\n"
    listed = parse_agent_file(write(tmp_path / "b.md", (
        "---\nname: b\ndescription: 'quoted: yes'\ntools: [grep_search, Glob]\n"
        "model: gpt-4.1-mini\n---\nGo.\n")))
    assert listed.description == "quoted: yes"
    assert listed.tools == ("grep_search", "list_files")
    assert listed.model == "gpt-4.1-mini"


@pytest.mark.parametrize(("text", "problem"), [
    ("name: x\n", "does not start with front matter"),
    ("---\nname: x\ndescription: y\n", "not closed"),
    ("---\ndescription: y\n---\nbody\n", "needs a name"),
    ("---\nname: x y\ndescription: y\n---\nbody\n", "needs a name"),
    ("---\nname: x\n---\nbody\n", "needs a description"),
    ("---\nname: x\ndescription: y\n---\n\n", "no instructions"),
])
def test_a_bad_agent_file_says_why(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(AgentFileError, match=problem):
        parse_agent_file(write(tmp_path / "bad.md", text))


def test_project_files_win_over_home_files_and_bad_ones_are_skipped_with_a_warning(
    tmp_path: Path,
) -> None:
    project, home = tmp_path / "repo", tmp_path / "home"
    agent = "---\nname: {n}\ndescription: {d}\n---\nPrompt.\n"
    write(home / "agents" / "helper.md", agent.format(n="helper", d="from home"))
    write(home / "agents" / "mine.md", agent.format(n="mine", d="only at home"))
    write(project / ".claude" / "agents" / "helper.md", agent.format(n="helper", d="claude"))
    write(project / ".mini-claude" / "agents" / "helper.md", agent.format(n="helper", d="ours"))
    write(project / ".mini-claude" / "agents" / "explore.md", agent.format(n="explore", d="mine"))
    write(project / ".mini-claude" / "agents" / "broken.md", "no front matter\n")
    catalog = load_catalog(project, home)
    assert catalog.types["helper"].description == "ours"
    assert catalog.types["mine"].description == "only at home"
    assert catalog.types["explore"].description == "mine"
    [warning] = catalog.warnings
    assert "broken.md" in warning and "skipped" in warning


def test_front_matter_body_starts_after_the_closing_line() -> None:
    fields, body = split("---\nname: a\n# a comment\n---\nline one\n---\nmore\n", None)
    assert fields == {"name": "a"}
    assert body == "line one\n---\nmore"


def test_an_agent_file_written_by_claude_codes_agents_command_loads(tmp_path: Path) -> None:
    """Its one-line description holds ': ' and '<example>': strict YAML refuses it, Claude
    Code quotes such values and reads it again, and so must we."""
    description = ("Use this agent when the user asks for a review. Examples: <example>Context: "
                   "the user wrote a parser. user: \"check it\" assistant: \"I'll review it\""
                   "</example>")
    path = write(tmp_path / "reviewer.md", (
        f"---\nname: reviewer\ndescription: {description}\ntools: Read, Grep\n"
        "model: inherit\ncolor: blue\n---\n\nReview carefully.\n"))
    agent = parse_agent_file(path)
    assert agent.description == description
    assert agent.tools == ("read_file", "grep_search")


def test_front_matter_that_stays_broken_after_quoting_is_still_an_error() -> None:
    with pytest.raises(ValueError, match="not valid YAML"):
        split("---\nname: [unclosed\n  - x: y: z\n---\nbody\n", None)
