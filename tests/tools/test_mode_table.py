"""Each permission mode is written once: the mode table; every other file asks it."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import mini_claude
from mini_claude.permissions.mode_table import MODES, PermissionMode
from mini_claude.permissions.modes import Permissions

PACKAGE = Path(mini_claude.__file__).parent
TABLE_FILE = PACKAGE / "permissions" / "mode_table.py"
PLAIN_WORDS = {"default", "plan"}  # also ordinary words: a spelling only beside a mode


def _docstrings(tree: ast.AST) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _beside_a_mode(parent: ast.AST) -> bool:
    """The plain word is compared with, assigned to or passed as a mode."""
    if isinstance(parent, ast.keyword):
        return "mode" in (parent.arg or "")
    if isinstance(parent, (ast.Compare, ast.BoolOp, ast.IfExp, ast.Assign, ast.AnnAssign)):
        return "mode" in ast.unparse(parent)
    return False


def _spellings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = _docstrings(tree)
    found = []
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            if (not isinstance(child, ast.Constant) or child.value not in MODES
                    or id(child) in docstrings):
                continue
            if child.value not in PLAIN_WORDS or _beside_a_mode(parent):
                found.append(f"{path.relative_to(PACKAGE)}:{child.lineno}: {child.value!r}")
    return found


def test_a_mode_name_is_spelled_only_in_the_mode_table() -> None:
    spelled = [hit for path in sorted(PACKAGE.rglob("*.py"))
               if path != TABLE_FILE and "simulator" not in path.parts
               for hit in _spellings(path)]
    assert spelled == []


def test_the_table_holds_every_mode_of_the_type_once_in_a_cycle() -> None:
    assert tuple(MODES) == get_args(PermissionMode)
    assert sorted(row.cycle for row in MODES.values()) == list(range(len(MODES)))


def test_shift_tab_follows_the_table_and_reaches_bypass_only_if_started_so() -> None:
    def cycle(permissions: Permissions) -> list[str]:
        seen: list[str] = [permissions.mode]
        while (following := permissions.next_mode()) != seen[0]:
            permissions.set_mode(following)
            seen.append(following)
        return seen

    by_order = [row.name for row in sorted(MODES.values(), key=lambda row: row.cycle)]
    gated = {row.name for row in MODES.values() if row.reached_only_if_started}
    assert cycle(Permissions()) == [name for name in by_order if name not in gated]
    started = next(iter(gated))
    assert set(cycle(Permissions(mode=started))) == set(by_order)
