"""The README and docs/ keep their promises: every link leads somewhere, every `mini-claude`
command line in them parses, every `make` target and every slash command they name exists."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from mini_claude.cli import build_parser
from mini_claude.ui.commands import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
SPAN = re.compile(r"`([^`\n]+)`")
SUBCOMMANDS = {"bench", "mcp", "export-atif"}
# Slash commands the docs show as examples of a user's or a project's own commands.
EXAMPLE_COMMANDS = {"frontend:component", "review", "fix-issue", "deploy", "build-status",
                    "commit", "name", "explain", "component",
                    "skill-name"}
# Spans that are paths of the machine, not commands.
PATHS = {"path", "run", "tmp", "proc", "dev", "etc", "home", "usr", "bin"}


def slug(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def test_the_readme_is_a_page_a_newcomer_reads_in_two_minutes() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 120
    assert any(line.startswith("## Install") for line in lines)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_leads_somewhere(page: Path) -> None:
    for target in LINK.findall(FENCE.sub("", page.read_text())):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        assert file.exists(), f"{page.name}: {target} leads nowhere"
        if anchor and file.suffix == ".md":
            assert anchor in headings(file), f"{page.name}: no heading #{anchor} in {file.name}"


def command_lines(page: Path) -> list[str]:
    found = []
    for block in FENCE.findall(page.read_text()):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("  #", 1)[0].strip()
            match = re.search(r"(?:^|\| )mini-claude( .*)?$", line)
            if match:
                command = (match.group(1) or "").split(" | ")[0]
                found.append(re.split(r" [0-9&]?>", command)[0])  # no redirections
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_command_line_parses(page: Path) -> None:
    parser = build_parser()
    for line in command_lines(page):
        words = shlex.split(line.replace("...", "x"))
        if words and words[0] in SUBCOMMANDS:
            continue
        try:
            parser.parse_intermixed_args(words)
        except SystemExit:
            pytest.fail(f"{page.name}: `mini-claude{line}` does not parse")


def test_every_make_target_named_exists() -> None:
    targets = set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.M))
    for page in PAGES:
        text = page.read_text()
        code = "\n".join([*FENCE.findall(text), *SPAN.findall(text)])
        for name in re.findall(r"(?:^|\s|`)make ([a-z][a-z-]+)", code, re.M):
            assert name in targets, f"{page.name}: make {name} is no target"


def test_every_slash_command_named_exists() -> None:
    known = {n for c in COMMANDS for n in (c.name, *c.aliases)} | EXAMPLE_COMMANDS | PATHS
    for page in PAGES:
        for span in SPAN.findall(page.read_text()):
            match = re.fullmatch(r"/([a-z][a-z:-]*)(?: .*)?", span)
            if match and "/" not in span[1:].split(" ")[0]:
                assert match.group(1) in known, f"{page.name}: /{match.group(1)} is no command"
