"""write_file and edit_file: atomic replacement, kept modes, refusals, and diffs."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from mini_claude.protocol import ToolOutput
from mini_claude.tools.builtin.edit_file import EditFileTool
from mini_claude.tools.builtin.write_file import WriteFileTool
from tests.support.tools import run, tool_context


def prepared_run(
    tool: WriteFileTool | EditFileTool, args: dict[str, Any], root: Path
) -> ToolOutput:
    """Prepare the call as the registry does, then run what was prepared."""
    ctx = tool_context(root)
    return run(tool.run(args, ctx, tool.permission(args, ctx)))


def write(root: Path, path: str, content: str) -> ToolOutput:
    return prepared_run(WriteFileTool(), {"path": path, "content": content}, root)


def edit(root: Path, path: str, old: str, new: str) -> ToolOutput:
    return prepared_run(EditFileTool(), {"path": path, "old": old, "new": new}, root)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def leftovers(folder: Path) -> list[str]:
    """Hidden files beside the target: where an atomic write keeps its temporary file."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# ---- write_file ----------------------------------------------------------------------------


def test_write_creates_parent_folders_and_exact_content(tmp_path: Path) -> None:
    out = write(tmp_path, "deep/er/new.txt", "one\ntwo\n")
    assert not out.is_error
    assert out.content == "Created deep/er/new.txt (2 lines)"
    assert (tmp_path / "deep/er/new.txt").read_bytes() == b"one\ntwo\n"
    assert out.display_kind == "diff"
    assert out.display is not None
    assert out.display.startswith("--- /dev/null\n+++ b/deep/er/new.txt")
    assert mode_of(tmp_path / "deep/er/new.txt") == 0o666 & ~current_umask()


def test_overwrite_shows_a_diff_and_keeps_the_mode(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o750)
    out = write(tmp_path, "run.sh", "#!/bin/sh\necho new\n")
    assert out.content == "Wrote run.sh (2 lines; +1 -1)"
    assert out.display is not None
    assert "-echo old\n+echo new\n" in out.display
    assert out.display.startswith("--- a/run.sh\n+++ b/run.sh\n")
    assert mode_of(script) == 0o750
    assert leftovers(tmp_path) == []


def test_write_leaves_no_temporary_file_and_the_old_content_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "keep.txt"
    target.write_text("original\n")

    def refuse(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    out = write(tmp_path, "keep.txt", "replacement\n")
    assert out.is_error
    assert out.content == "cannot write keep.txt: No space left on device"
    assert target.read_text() == "original\n"
    assert leftovers(tmp_path) == []


def test_write_to_a_directory_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    out = write(tmp_path, "src", "x")
    assert out.is_error and "directory" in out.content


def test_write_through_a_symlink_inside_the_project_keeps_the_link(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("old\n")
    (tmp_path / "alias.txt").symlink_to(tmp_path / "real.txt")
    write(tmp_path, "alias.txt", "new\n")
    assert (tmp_path / "alias.txt").is_symlink()
    assert (tmp_path / "real.txt").read_text() == "new\n"


def test_write_permission_asks_with_the_diff(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    args = {"path": "a.txt", "content": "b\n"}
    request = WriteFileTool().permission(args, tool_context(tmp_path)).request
    assert request is not None
    assert request.subject == "write_file"
    assert request.summary == "overwrite a.txt"
    assert request.detail is not None and "-a\n+b\n" in request.detail


# ---- edit_file -----------------------------------------------------------------------------


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "mod.py"
    path.write_text("def f():\n    return 1\n\n\ndef g():\n    return 1\n")
    path.chmod(0o755)
    return path


def test_edit_replaces_a_unique_piece(tmp_path: Path, source: Path) -> None:
    out = edit(tmp_path, "mod.py", "def g():\n    return 1", "def g():\n    return 2")
    assert not out.is_error
    assert out.content == "Edited mod.py at line 5 (+1 -1)"
    assert source.read_text() == "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
    assert out.display_kind == "diff"
    assert out.display is not None and "-    return 1\n+    return 2\n" in out.display


def test_edit_keeps_mode_and_leaves_no_temporary_file(tmp_path: Path, source: Path) -> None:
    edit(tmp_path, "mod.py", "def f():", "def first():")
    assert mode_of(source) == 0o755
    assert leftovers(tmp_path) == []


def test_edit_refuses_text_that_is_not_there(tmp_path: Path, source: Path) -> None:
    before = source.read_bytes()
    out = edit(tmp_path, "mod.py", "def h():", "def k():")
    assert out.is_error
    assert out.content.startswith("old text not found in mod.py")
    assert source.read_bytes() == before


def test_edit_refuses_text_that_is_not_unique(tmp_path: Path, source: Path) -> None:
    before = source.read_bytes()
    out = edit(tmp_path, "mod.py", "    return 1", "    return 3")
    assert out.is_error
    assert out.content.startswith("old text found 2 times in mod.py; include more context")
    assert source.read_bytes() == before


def test_edit_refuses_identical_and_empty_old(tmp_path: Path, source: Path) -> None:
    same = edit(tmp_path, "mod.py", "def f():", "def f():")
    assert same.is_error and "same" in same.content
    empty = edit(tmp_path, "mod.py", "", "x")
    assert empty.is_error and "write_file" in empty.content


def test_edit_missing_and_binary_files_are_errors(tmp_path: Path) -> None:
    missing = edit(tmp_path, "nope.py", "a", "b")
    assert missing.is_error and "does not exist" in missing.content
    (tmp_path / "data.bin").write_bytes(b"ab\x00cd")
    binary = edit(tmp_path, "data.bin", "ab", "xy")
    assert binary.is_error and "binary" in binary.content


def test_edit_keeps_crlf_line_endings(tmp_path: Path) -> None:
    path = tmp_path / "win.txt"
    path.write_bytes(b"first\r\nsecond\r\nthird\r\n")
    out = edit(tmp_path, "win.txt", "first\nsecond", "first\nmiddle\nsecond")
    assert not out.is_error
    assert path.read_bytes() == b"first\r\nmiddle\r\nsecond\r\nthird\r\n"


def test_edit_preserves_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "mixed.txt"
    path.write_bytes(b"caf\xe9 latin-1\nchange me\n")
    out = edit(tmp_path, "mixed.txt", "change me", "changed")
    assert not out.is_error
    assert path.read_bytes() == b"caf\xe9 latin-1\nchanged\n"


def test_edit_permission_carries_the_diff_and_skips_doomed_edits(
    tmp_path: Path, source: Path
) -> None:
    ctx = tool_context(tmp_path)
    request = EditFileTool().permission({"path": "mod.py", "old": "def f", "new": "def F"},
                                        ctx).request
    assert request is not None
    assert request.subject == "edit_file"
    assert request.summary == "edit mod.py"
    assert request.detail is not None and "-def f():\n+def F():\n" in request.detail
    doomed = EditFileTool().permission({"path": "mod.py", "old": "absent", "new": "x"}, ctx)
    assert doomed.request is None and doomed.action is None


# ---- several edits at once ------------------------------------------------------------------


def edit_with(root: Path, args: dict[str, object]) -> ToolOutput:
    return prepared_run(EditFileTool(), {"path": "mod.py", **args}, root)


def test_edit_replace_all_changes_every_occurrence(tmp_path: Path, source: Path) -> None:
    out = edit_with(tmp_path, {"old": "return 1", "new": "return 7", "replace_all": True})
    assert not out.is_error
    assert out.content == "Edited mod.py (2 replacements, the first at line 2) (+2 -2)"
    assert source.read_text() == "def f():\n    return 7\n\n\ndef g():\n    return 7\n"


def test_several_edits_apply_in_order_each_to_the_previous_result(
    tmp_path: Path, source: Path
) -> None:
    out = edit_with(tmp_path, {"edits": [
        {"old": "def f():\n    return 1", "new": "def f():\n    return 10"},
        {"old": "return 10", "new": "return 11"},  # only there after the first edit
        {"old": "def g():", "new": "def gee():"},
    ]})
    assert not out.is_error, out.content
    assert source.read_text() == "def f():\n    return 11\n\n\ndef gee():\n    return 1\n"
    assert out.display is not None and "+def gee():" in out.display


def test_a_failed_edit_leaves_the_file_untouched_and_is_named(
    tmp_path: Path, source: Path
) -> None:
    before = source.read_bytes()
    out = edit_with(tmp_path, {"edits": [
        {"old": "def f():", "new": "def first():"},
        {"old": "def g():", "new": "def second():"},
        {"old": "def missing():", "new": "x"},
    ]})
    assert out.is_error
    assert out.content.startswith("edit 3 of 3: old text not found in mod.py")
    assert "Nothing was changed" in out.content
    assert source.read_bytes() == before
    ambiguous = edit_with(tmp_path, {"edits": [{"old": "return 1", "new": "return 2"}]})
    assert ambiguous.is_error and "replace_all" in ambiguous.content
    assert source.read_bytes() == before


def test_edits_and_old_new_together_or_neither_are_refused(tmp_path: Path, source: Path) -> None:
    both = edit_with(tmp_path, {"old": "def f", "new": "def F", "edits": [
        {"old": "a", "new": "b"}]})
    assert both.is_error and "not both" in both.content
    neither = edit_with(tmp_path, {})
    assert neither.is_error and "old and new" in neither.content
    bad = edit_with(tmp_path, {"edits": [{"old": "def f"}]})
    assert bad.is_error and bad.content.startswith("edit 1: old and new must both be strings")
