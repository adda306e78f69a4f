"""YAML front matter of Claude Code's Markdown files (commands, rules, skills, agent types),
read with PyYAML: the one reader of them all.

Claude Code's own files use real YAML there (``paths:`` lists, quoted globs,
``allowed-tools`` lists), so a YAML parser reads them as their authors meant.
A file without front matter is all body; broken YAML is an error naming the file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from mini_claude.safe_read import read_text_limited

if TYPE_CHECKING:
    from mini_claude.project.boundary import ProjectBoundary


class FrontMatterError(ValueError):
    """Front matter that is not a YAML mapping; the message names the file."""


def split(text: str, path: Path | None, *, required: bool = False) -> tuple[dict[str, Any], str]:
    """``(fields, body)``; no leading ``---`` line means no fields, or an error when the
    kind of file must have them. Messages name ``path`` when given."""
    named = f"{path}: " if path is not None else ""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        if required:
            raise FrontMatterError(f"{named}it does not start with front matter (a line with ---)")
        return {}, text.lstrip("\ufeff")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise FrontMatterError(f"{named}the front matter is not closed with '---'")
    try:
        data = _load(lines[1:end])
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 2})" if where is not None else ""
        raise FrontMatterError(f"{named}the front matter is not valid YAML{line}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise FrontMatterError(f"{named}the front matter must be 'key: value' lines")
    return {str(k): v for k, v in data.items()}, "\n".join(lines[end + 1 :])


# A plain value YAML would misread: it holds ": ", or starts a flow, alias, tag or block.
_NEEDS_QUOTES = re.compile(r"[{}\[\]*&#!|>%@`]|: ")
_PLAIN_FIELD = re.compile(r"^([a-zA-Z_-]+):\s+(\S.*)$")
_LEADING_TABS = re.compile(r"^\t+", re.MULTILINE)


def _load(lines: list[str]) -> Any:
    """YAML, and when that fails, YAML again after quoting the one-line values it tripped on.

    Claude Code's own ``/agents`` writes descriptions such as ``description: Use it when:
    <example>…`` that strict YAML refuses; Claude Code quotes such values and tries again,
    and so do we, so the same files load in both.
    """
    try:
        return yaml.safe_load("\n".join(lines))
    except yaml.YAMLError:
        repaired = "\n".join(_quoted(line) for line in lines)
        return yaml.safe_load(_LEADING_TABS.sub(lambda tabs: "  " * len(tabs[0]), repaired))


def _quoted(line: str) -> str:
    match = _PLAIN_FIELD.match(line)
    if match is None:
        return line
    key, value = match.groups()
    if value[0] in "\"'" and value[-1] == value[0]:
        return line
    if value.startswith("[") and value.endswith("]") and _is_flow_list(value):
        return line
    if not _NEEDS_QUOTES.search(value):
        return line
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'{key}: "{escaped}"'


def _is_flow_list(value: str) -> bool:
    try:
        return isinstance(yaml.safe_load(value), list)
    except yaml.YAMLError:
        return False


def read(path: Path, what: str, warnings: list[str], max_chars: int | None = None,
         boundary: ProjectBoundary | None = None) -> tuple[dict[str, Any], str] | None:
    """``split`` of a file's text; a file that cannot be read or parsed is one warning naming
    ``what`` it is (``"command"``, ``"rule"``) and None.

    A project's file is read through its ``boundary`` (a link out of the project is not
    read); the user's own files have none.
    """
    try:
        raw = boundary.read_text(path) if boundary is not None else read_text_limited(path)
        return split(raw[:max_chars], path)
    except OSError as exc:
        warnings.append(f"cannot read the {what} {path} ({exc.strerror or exc}); not used")
    except FrontMatterError as exc:
        warnings.append(f"{exc}; the {what} is not used")
    return None


def string_list(value: Any) -> list[str]:
    """A YAML list, or one comma-separated string, as a list of non-empty strings."""
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in _split_commas(value) if part.strip()]
    if isinstance(value, list):
        return [str(item).strip() for item in value if str(item).strip()]
    return [str(value)]


def _split_commas(text: str) -> list[str]:
    """Split on commas outside parentheses and braces: ``Bash(a, b), Read`` is two items."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char in "({":
            depth += 1
        elif char in ")}" and depth:
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts
