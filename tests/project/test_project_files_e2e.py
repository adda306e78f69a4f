"""Files a project (or a flag) names are never trusted to be what they look like: a FIFO,
a device or a huge file never hangs start-up, and a link out of the project brings
nothing in without asking. The real command line, over HTTP, both providers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.hostile import Cli

STARTUP_SECONDS = 90.0
OUTSIDE_SECRET = "OUTSIDE-SECRET-7f3a"


PROJECT_FILES = [
    ".mcp.json",
    ".mini-claude/settings.json",
    ".mini-claude/agents/helper.md",
    ".claude/skills/deploy/SKILL.md",
    ".env",
    "CLAUDE.md",
]


def place(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    else:  # a huge file: sparse, so it costs no disk
        with path.open("wb") as handle:
            handle.truncate(3 * 1024 * 1024 * 1024)


@pytest.mark.parametrize("kind", ["fifo", "device", "huge"])
def test_special_project_files_never_hang_start_up(cli: Cli, kind: str) -> None:
    for name in PROJECT_FILES:
        place(cli.project / name, kind)
    process = cli.start("-p", "hello", "--output-format", "json")
    try:
        out, err = process.communicate(timeout=STARTUP_SECONDS)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert json.loads(out.splitlines()[-1])["subtype"] == "success"
    assert "Traceback" not in err
    for name in (".mcp.json", "settings.json", "helper.md", "SKILL.md"):
        assert any(name in line for line in err.splitlines()), (name, err)


@pytest.mark.parametrize("kind", ["fifo", "device", "huge"])
def test_a_special_system_prompt_file_is_one_line_and_exit_2(
    cli: Cli, kind: str, tmp_path: Path
) -> None:
    prompt = tmp_path / "prompt.md"
    place(prompt, kind)
    process = cli.start("-p", "hello", "--system-prompt-file", str(prompt))
    try:
        _, err = process.communicate(timeout=STARTUP_SECONDS)
    finally:
        process.kill()
    assert process.returncode == 2, err
    (line,) = err.strip().splitlines()
    assert "--system-prompt-file" in line and "not read" in line


def test_links_out_of_the_project_bring_in_no_skill_or_agent(cli: Cli, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "skill").mkdir(parents=True)
    (outside / "skill" / "SKILL.md").write_text(
        f"---\nname: leak\ndescription: {OUTSIDE_SECRET} skill\n---\n{OUTSIDE_SECRET}\n")
    (outside / "agent.md").write_text(
        f"---\nname: leaker\ndescription: {OUTSIDE_SECRET} agent\n---\n{OUTSIDE_SECRET}\n")
    (cli.project / ".claude" / "skills").mkdir(parents=True)
    (cli.project / ".claude" / "skills" / "leak").symlink_to(outside / "skill")
    (cli.project / ".mini-claude" / "agents").mkdir(parents=True)
    (cli.project / ".mini-claude" / "agents" / "leaker.md").symlink_to(outside / "agent.md")
    outcome = cli.run("-p", "hello")
    assert outcome.code == 0, outcome.err
    for request in cli.sim.requests:
        assert OUTSIDE_SECRET not in json.dumps(request.body)
    said = [line for line in outcome.err.splitlines() if "links outside the project" in line]
    assert len(said) == 2, outcome.err


# Each a link out of the project, to a file (or a folder holding one) with the secret in it.
LINKED_PROJECT_FILES = [
    "CLAUDE.md",
    "CLAUDE.local.md",
    ".claude/CLAUDE.md",
    "AGENTS.md",
    ".claude/rules/style.md",
    ".claude/rules",
    ".claude/commands/leak.md",
    ".claude/commands",
]


@pytest.mark.parametrize("name", LINKED_PROJECT_FILES)
def test_a_project_file_linked_out_of_the_project_is_never_sent(
    cli: Cli, tmp_path: Path, name: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "id_rsa"
    secret.write_text(f"-----BEGIN KEY-----\n{OUTSIDE_SECRET}\n-----END KEY-----\n")
    for inner in ("style.md", "leak.md"):  # what a linked folder holds
        (outside / inner).symlink_to(secret)
    link = cli.project / name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside if name in (".claude/rules", ".claude/commands") else secret)
    prompt = "/leak now" if "commands" in name else "hello"
    outcome = cli.run("-p", prompt)
    assert "Traceback" not in outcome.err
    for request in cli.sim.requests:
        assert OUTSIDE_SECRET not in json.dumps(request.body), name
    assert OUTSIDE_SECRET not in outcome.out + outcome.err
    told = [line for line in outcome.err.splitlines()
            if "links outside the project" in line or "links to" in line]
    assert told, outcome.err
