"""ARCHITECTURE.md stays true: the paths it names exist, a new tool needs the files it lists,
no module imports a room on a higher floor, and no two packages import each other."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from mini_claude.models import PROVIDERS
from mini_claude.tools.registry import BUILTIN_TOOLS

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mini_claude"
PAGE = ROOT / "ARCHITECTURE.md"
FLOORS_BLOCK = re.compile(r"^```floors\n(.*?)^```", re.S | re.M)
FLOOR_LINE = re.compile(r"floor (\d+): (.+)")
NAMED_PATH = re.compile(r"`((?:mini_claude|tests|docs)/[\w./-]*)`")


def floors() -> dict[str, int]:
    """Room -> floor, as the page's ``floors`` block writes them."""
    match = FLOORS_BLOCK.search(PAGE.read_text())
    assert match, "ARCHITECTURE.md has no floors block"
    found: dict[str, int] = {}
    for line in match.group(1).splitlines():
        parsed = FLOOR_LINE.fullmatch(line.strip())
        assert parsed, f"not a floor line: {line!r}"
        for room in parsed.group(2).split():
            found[room] = int(parsed.group(1))
    return found


def room_of(module: Path) -> str:
    """``tools/`` for anything in a package, ``cli.py`` for a module at the top."""
    first = module.relative_to(PACKAGE).parts[0]
    return first + "/" if (PACKAGE / first).is_dir() else first


def modules() -> Iterator[Path]:
    return (path for path in sorted(PACKAGE.rglob("*.py")) if path != PACKAGE / "__init__.py")


def imported_rooms(module: Path) -> Iterator[tuple[str, int]]:
    """Every room of the package this module imports, with the line, wherever the import is."""
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif node.module and node.level == 0:
            names = ([f"{node.module}.{alias.name}" for alias in node.names]
                     if node.module == "mini_claude" else [node.module])
        for name in names:
            parts = name.split(".")
            if parts[0] != "mini_claude" or len(parts) < 2:
                continue
            if (PACKAGE / parts[1]).is_dir():
                yield parts[1] + "/", node.lineno
            elif (PACKAGE / f"{parts[1]}.py").exists():  # not a name of the package's face
                yield parts[1] + ".py", node.lineno


def test_every_path_the_page_names_exists() -> None:
    named = set(NAMED_PATH.findall(PAGE.read_text()))
    assert named
    assert [path for path in sorted(named) if not (ROOT / path).exists()] == []


def test_every_room_stands_on_a_floor_of_the_page() -> None:
    on_floors = floors()
    rooms = {room_of(module) for module in modules()}
    assert sorted(rooms - on_floors.keys()) == []
    assert sorted(on_floors.keys() - rooms) == []


def test_no_module_imports_a_room_above_it() -> None:
    on_floors = floors()
    upward = [f"{module.relative_to(ROOT)}:{line} imports {target}"
              for module in modules()
              for target, line in imported_rooms(module)
              if on_floors[target] > on_floors[room_of(module)]]
    assert upward == []


def test_no_two_packages_import_each_other() -> None:
    arrows: dict[str, set[str]] = {}
    for module in modules():
        source = room_of(module)
        arrows.setdefault(source, set()).update(
            target for target, _ in imported_rooms(module) if target != source)
    assert cycles(arrows) == []


def cycles(arrows: dict[str, set[str]]) -> list[list[str]]:
    """Each loop of rooms found by a walk in depth (empty: the rooms form no circle)."""
    found: list[list[str]] = []
    state: dict[str, str] = {}

    def walk(room: str, path: list[str]) -> None:
        state[room] = "open"
        for target in sorted(arrows.get(room, ())):
            if state.get(target) == "open":
                found.append([*path[path.index(target):], target])
            elif target not in state:
                walk(target, [*path, target])
        state[room] = "done"

    for room in sorted(arrows):
        if room not in state:
            walk(room, [room])
    return found


def test_the_cycle_check_sees_a_circle() -> None:
    assert cycles({"a/": {"b/"}, "b/": {"a/"}}) == [["a/", "b/", "a/"]]
    assert cycles({"a/": {"b/"}, "b/": set()}) == []


def test_a_new_tool_needs_a_builtin_module_and_its_line_in_the_registry() -> None:
    """The page's "a tool" row names the folder every built-in lives in and the registry list;
    each module of that folder is a tool the registry lists, and each listed tool lives there."""
    row = next(line for line in PAGE.read_text().splitlines() if line.startswith("| a tool |"))
    assert "`mini_claude/tools/builtin/`" in row and "`mini_claude/tools/registry.py`" in row
    assert "BUILTIN_TOOLS" in row
    folder = PACKAGE / "tools" / "builtin"
    tool_modules = {path.stem for path in folder.glob("*.py") if path.stem != "__init__"}
    listed = {tool.__module__.rpartition(".")[2] for tool in BUILTIN_TOOLS}
    assert {tool.__module__.rpartition(".")[0] for tool in BUILTIN_TOOLS} == {
        "mini_claude.tools.builtin"}
    # The task tool is declared by the registry but built by the session (it needs the agent).
    assert tool_modules - listed == {"task"}


# Where a provider's own name may be written: its adapter, its row, and the two programs that
# play or measure every provider on purpose (the simulator and the benchmark).
PROVIDER_NAME_PLACES = ("providers/", "models.py", "simulator/", "bench/")


def provider_name_mentions(root: Path, name: str) -> list[str]:
    """Each ``"name"`` or ``'name'`` in a product file outside the places a provider lives."""
    quoted = re.compile(rf"[\"']{re.escape(name)}[\"']")
    found: list[str] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        place = path.relative_to(root).as_posix()
        if place.startswith(PROVIDER_NAME_PLACES):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [f"{place}:{text.count(chr(10), 0, m.start()) + 1}" for m in quoted.finditer(text)]
    return found


def test_a_provider_is_named_only_by_its_row_and_its_adapter() -> None:
    """Adding a provider touches its row and its adapter: no other product file may name one
    to choose what to do, or a new provider would need an edit there too. The default
    provider (the first row) is left out: the demo runs on the simulator's wire of it."""
    row = next(line for line in PAGE.read_text().splitlines() if line.startswith("| a provider |"))
    assert "`mini_claude/models.py`" in row and "`mini_claude/providers/`" in row
    assert {r.adapter.partition(":")[0].rpartition(".")[0] for r in PROVIDERS.values()} == {
        "mini_claude.providers"}
    for name in list(PROVIDERS)[1:]:
        assert provider_name_mentions(PACKAGE, name) == []


def test_the_provider_name_scan_sees_a_quoted_name(tmp_path: Path) -> None:
    (tmp_path / "demo.py").write_text('x = 1\nprovider = "openai"\n')
    (tmp_path / "providers").mkdir()
    (tmp_path / "providers" / "openai.py").write_text("name = 'openai'\n")
    assert provider_name_mentions(tmp_path, "openai") == ["demo.py:2"]
