"""The pure-Python search, run in a child process so that it can be killed.

Python's ``re`` cannot be interrupted mid-match and holds the GIL while it
backtracks, so a catastrophic pattern run in a thread would freeze the whole
agent. In a process of its own the parent simply stops it at the deadline.
Output mirrors ``rg --line-number --no-heading --null``: ``path NUL line:text``.
"""

from __future__ import annotations

import io
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from mini_claude.project.ignore import BINARY_SNIFF_BYTES, looks_binary, rules_for, walk_files
from mini_claude.safe_read import is_regular_file
from mini_claude.tools.common import ToolError
from mini_claude.tools.special_files import open_regular


@dataclass(frozen=True, slots=True)
class WorkerQuery:
    pattern: str
    project: str
    base: str
    max_columns: int
    kept_out: str | None = None  # a folder never entered (the home)

    def to_json(self) -> str:
        return json.dumps(
            {
                "pattern": self.pattern,
                "project": self.project,
                "base": self.base,
                "max_columns": self.max_columns,
                "kept_out": self.kept_out,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> WorkerQuery:
        data = json.loads(text)
        kept_out = data.get("kept_out")
        return cls(data["pattern"], data["project"], data["base"], int(data["max_columns"]),
                   kept_out if isinstance(kept_out, str) else None)


def search(query: WorkerQuery, out: TextIO) -> int:
    """Write every matching line; return 0 when something matched, 1 otherwise (like grep)."""
    regex = re.compile(query.pattern)
    project = Path(query.project)
    base = Path(query.base)
    found = False
    kept_out = Path(query.kept_out) if query.kept_out else None
    for path in walk_files(base, rules_for(base, project), kept_out=kept_out):
        if path != base and path.is_symlink():
            continue
        shown = path.relative_to(project).as_posix() if path.is_relative_to(project) else str(path)
        found |= _search_file(path, shown, regex, query.max_columns, out)
    return 0 if found else 1


def _search_file(
    path: Path, shown: str, regex: re.Pattern[str], max_columns: int, out: TextIO
) -> bool:
    if not is_regular_file(path):
        return False  # a pipe or device would block or never end
    try:
        with open_regular(path, shown) as handle:
            if looks_binary(handle.read(BINARY_SNIFF_BYTES)):
                return False
            handle.seek(0)
            found = False
            for number, raw in enumerate(handle, start=1):
                text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                if regex.search(text):
                    if len(text) > max_columns:
                        text = text[:max_columns] + " [... rest of long line omitted]"
                    out.write(f"{shown}\0{number}:{text}\n")
                    found = True
    except (OSError, ToolError):
        return False
    if found:
        out.flush()  # the parent may stop us at any moment; keep what was found
    return found


def main(argv: list[str]) -> int:
    """Exit 0 on matches, 1 on none, 2 on failure with one line on stderr (like rg)."""
    out = sys.stdout
    if isinstance(out, io.TextIOWrapper):
        out.reconfigure(encoding="utf-8", errors="replace")
    try:
        return search(WorkerQuery.from_json(argv[0]), out)
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
