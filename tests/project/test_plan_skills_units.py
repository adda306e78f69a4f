"""The plan, skill discovery and hook settings as units: what is accepted, what is refused
and how the refusal reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_claude.agent.hooks import hook_commands
from mini_claude.context.attachments import SkillSource
from mini_claude.plan import Plan, PlanError, TodoItem, parse_todos
from mini_claude.project.instructions import ProjectInstructions, build_system_prompt
from mini_claude.project.skills import LoadedSkills, find_skills

# ---- the plan ---------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "message"), [
    ("not a list", "'todos' must be a list"),
    (["x"], "item 1 must be an object"),
    ([{"content": "  ", "status": "pending"}], "item 1 needs a non-empty 'content'"),
    ([{"content": "a", "status": "pending"}, {"content": "b", "status": "doing"}],
     "item 2 has status 'doing'"),
    ([{"content": "a", "status": "in_progress"}, {"content": "b", "status": "pending"},
      {"content": "c", "status": "in_progress"}], "items 1, 3 are"),
    ([{"content": "a" * 501, "status": "pending"}], "longer than 500"),
    ([{"content": str(i), "status": "pending"} for i in range(51)], "at most 50 items"),
])
def test_a_bad_list_is_refused_with_the_first_problem(raw: object, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        parse_todos(raw)


def test_a_good_list_is_kept_in_order_with_whitespace_tidied() -> None:
    items = parse_todos([{"content": " fix\n the  bug ", "status": "in_progress"},
                         {"content": "test", "status": "completed"}])
    assert items == (TodoItem("fix the bug", "in_progress"), TodoItem("test", "completed"))
    assert parse_todos([]) == ()


def test_the_reminder_needs_an_unfinished_list_and_restarts_its_count() -> None:
    plan = Plan()
    for _ in range(5):
        plan.note_model_call()
    assert plan.reminder(3) is None  # no list
    plan.replace(parse_todos([{"content": "a", "status": "completed"}]))
    for _ in range(5):
        plan.note_model_call()
    assert plan.reminder(3) is None  # finished
    plan.replace(parse_todos([{"content": "a", "status": "pending"}]))
    plan.note_model_call()
    plan.note_model_call()
    assert plan.reminder(3) is None
    plan.note_model_call()
    assert plan.reminder(3) is not None
    assert plan.reminder(3) is None  # once, then the count starts over
    assert plan.reminder(0) is None


def test_reminders_are_not_kept_as_the_users_words_after_a_summary() -> None:
    from mini_claude.context.rebuild import user_texts
    from mini_claude.conversation import Message, TextBlock

    plan = Plan(parse_todos([{"content": "a", "status": "pending"}]))
    plan.calls_since_touch = 5
    reminder = plan.reminder(5)
    assert reminder is not None
    message = Message("user", [TextBlock("and now?"), TextBlock(reminder)])
    assert user_texts([message]) == ["and now?"]


# ---- skills -----------------------------------------------------------------------------


def skill(root: Path, folder: str, text: str) -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_skills_are_found_in_the_project_both_folders_and_the_home(tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "h"
    skill(project / ".mini-claude" / "skills", "alpha",
          "---\nname: alpha\ndescription: >\n  Folded\n  description.\n---\nAlpha body.\n")
    skill(project / ".claude" / "skills", "beta",
          "---\nname: \"beta\"\ndescription: 'Beta: quoted'\n---\nBeta body.\n")
    skill(home / "skills", "gamma", "---\nname: gamma\ndescription: G.\n---\nGamma body.\n")
    (home / "skills" / "gamma" / "ref.md").write_text("x")
    skill(home / "skills", "alpha", "---\nname: alpha\ndescription: home one\n---\nother\n")
    catalog = find_skills(project, home)
    assert catalog.names() == ["alpha", "beta", "gamma"]
    alpha = catalog.get("alpha")
    assert alpha is not None and alpha.description == "Folded description."
    assert alpha.scope == "project" and alpha.body == "Alpha body."
    beta, gamma = catalog.get("beta"), catalog.get("gamma")
    assert beta is not None and beta.description == "Beta: quoted"
    assert gamma is not None and gamma.scope == "user"
    assert [p.name for p in gamma.extra_files] == ["ref.md"]
    assert len(catalog.warnings) == 1 and "is hidden by the one in" in catalog.warnings[0]
    section = catalog.prompt_section()
    assert "- alpha: Folded description." in section and "Alpha body" not in section
    prompt = build_system_prompt(project, ProjectInstructions((), ""), skills=section)
    assert "- gamma: G." in prompt


@pytest.mark.parametrize(("text", "problem"), [
    ("no front matter\n", "does not start with front matter"),
    ("---\nname: x\n", "not closed with '---'"),
    ("---\ndescription: d\n---\nbody\n", "has no 'name'"),
    ("---\nname: Bad_Name\ndescription: d\n---\nbody\n", "must be lowercase letters"),
    ("---\nname: ok\n---\nbody\n", "has no 'description'"),
    ("---\nname: ok\ndescription: d\n---\n\n", "has no instructions"),
    ("---\nname: ok\njust words\ndescription: d\n---\nbody\n", "front matter is not valid YAML"),
])
def test_a_broken_skill_is_one_warning_naming_the_file(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = skill(tmp_path / "p" / ".mini-claude" / "skills", "broken", text)
    catalog = find_skills(tmp_path / "p", tmp_path / "h")
    assert catalog.skills == {}
    assert len(catalog.warnings) == 1
    assert str(path) in catalog.warnings[0] and problem in catalog.warnings[0]


def test_loaded_skills_are_reattached_newest_first_within_the_bound(tmp_path: Path) -> None:
    root = tmp_path / "p" / ".mini-claude" / "skills"
    for name, size in (("one", 300), ("two", 500), ("three", 400)):
        skill(root, name, f"---\nname: {name}\ndescription: d\n---\n{name[0] * size}\n")
    catalog = find_skills(tmp_path / "p", tmp_path / "h")
    loaded = LoadedSkills(["one", "two", "three"])
    loaded.add("one")  # loaded again: the newest now
    blocks = SkillSource(catalog, loaded, max_chars=800).reattachments([])
    assert [b.source for b in blocks] == ["skill:one", "skill:three", "skills-left-out"]
    assert blocks[0].body == "o" * 300
    assert "'two'" in blocks[-1].body and "skill tool" in blocks[-1].body
    assert SkillSource(catalog, LoadedSkills(), 800).reattachments([]) == []


# ---- hook settings ----------------------------------------------------------------------


def test_hook_settings_problems_are_warnings_and_good_entries_still_count(tmp_path: Path) -> None:
    hooks = {
        "PreToolUse": [
            {"matcher": "run_shell", "hooks": [{"type": "command", "command": "a"},
                                               {"type": "http", "url": "x"},
                                               {"type": "command", "command": "b",
                                                "timeout": -1}]},
            {"matcher": 3, "hooks": []},
        ],
        "PermissionRequest": [],
        "PostCompact": {"oops": 1},
    }
    warnings: list[str] = []
    commands = hook_commands(tmp_path / "settings.json", hooks, 60.0, warnings)
    assert [(c.event, c.matcher, c.command, c.timeout) for c in commands] == [
        ("PreToolUse", "run_shell", "a", 60.0)]
    text = "\n".join(warnings)
    for problem in ('not {"type": "command"', "positive number of seconds",
                    '"matcher" that is not a string', "unknown hook event 'PermissionRequest'",
                    '"hooks.PostCompact" must be a list'):
        assert problem in text
    assert hook_commands(tmp_path / "s.json", ["not", "an", "object"], 60.0, warnings) == []
    assert '"hooks" must be an object' in warnings[-1]


def test_matchers_are_exact_names_or_patterns() -> None:
    from mini_claude.agent.hooks import HookCommand

    def matches(matcher: str, value: str) -> bool:
        return HookCommand("PreToolUse", matcher, "true", 1, Path("x")).matches(value)

    assert matches("", "read_file") and matches("*", "run_shell")
    assert matches("run_shell", "run_shell") and not matches("run_shell", "run_shell2")
    assert matches("write_file|edit_file", "edit_file") and not matches("edit", "edit_file")
    assert matches("mcp__.*", "mcp__git__log") and matches("[", "[")
