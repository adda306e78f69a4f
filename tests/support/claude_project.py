"""A project laid out as a Claude Code user's repository, for the compatibility tests."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

PY = sys.executable


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def claude_project(root: Path) -> Path:
    """CLAUDE.md importing two files (one imports back: a cycle), a rule with ``paths:``,
    a rule without, CLAUDE.local.md, two commands with arguments and front matter."""
    write(root / "CLAUDE.md", (
        "# Team notes\nFollow the house style in @docs/style.md and the test guide "
        "@docs/testing.md.\nNot an import: `@docs/secret.md`.\n\n"
        "```\n@docs/secret.md\n```\n"))
    write(root / "docs" / "style.md", "STYLE-MARKER: four spaces.\nSee also @../CLAUDE.md\n")
    write(root / "docs" / "testing.md", "TESTING-MARKER: run pytest -q.\n")
    write(root / "docs" / "secret.md", "SECRET-MARKER\n")
    write(root / "CLAUDE.local.md", "LOCAL-MARKER: my sandbox is on port 9000.\n")
    write(root / ".claude" / "rules" / "python.md",
          '---\npaths:\n  - "src/**/*.py"\n---\nPY-RULE-MARKER: type hints everywhere.\n')
    write(root / ".claude" / "rules" / "general.md", "GENERAL-RULE-MARKER: be brief.\n")
    write(root / "src" / "app.py", "print('app')\n")
    write(root / "src" / "util.py", "print('util')\n")
    write(root / "README.md", "demo\n")
    write(root / ".claude" / "commands" / "frontend" / "component.md", (
        "---\ndescription: Scaffold a UI component\nargument-hint: <name> <folder>\n"
        "model: sim-frontend\n---\nCreate the component $1 in $2 (asked: $ARGUMENTS). "
        "Follow @README.md.\n"))
    write(root / ".claude" / "commands" / "build-status.md", (
        "---\ndescription: Report the build status\nallowed-tools: Bash(echo:*)\n---\n"
        "Build status: !`echo STATUS-OF-$1`\nExplain it for $1.\n"))
    return root


def hook(command: str, matcher: str = "") -> dict[str, Any]:
    return {"matcher": matcher, "hooks": [{"type": "command", "command": command}]}


def hook_script(folder: Path, name: str, body: str) -> str:
    """A hook in Python that logs its input to ``<name>.log`` and then runs ``body``."""
    log = folder / f"{name}.log"
    path = write(folder / f"{name}.py", (
        "import json, sys\nevent = json.load(sys.stdin)\n"
        f"open({str(log)!r}, 'a').write(json.dumps(event) + '\\n')\n" + body))
    return f"{PY} {path}"


def logged(folder: Path, name: str) -> list[dict[str, Any]]:
    log = folder / f"{name}.log"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def write_hooks(settings: Path, hooks: dict[str, list[dict[str, Any]]]) -> None:
    write(settings, json.dumps({"hooks": hooks}))
