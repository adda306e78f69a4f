"""read_file: numbering, paging, long lines, and the files it must refuse or flag."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from mini_claude.protocol import ToolOutput
from mini_claude.tools.base import NOTHING_TO_ASK
from mini_claude.tools.builtin.read_file import ReadFileTool
from tests.support.tools import run, tool_context


def read(root: Path, **args: object) -> ToolOutput:
    return run(ReadFileTool().run(dict(args), tool_context(root), NOTHING_TO_ASK))


def numbered(count: int) -> str:
    return "".join(f"line {n}\n" for n in range(1, count + 1))


def test_lines_are_numbered_like_cat_n(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n\tbeta\ngamma")
    out = read(tmp_path, path="a.txt")
    assert not out.is_error
    assert out.content == "     1\talpha\n     2\t\tbeta\n     3\tgamma"


def test_crlf_line_endings_are_not_shown(tmp_path: Path) -> None:
    (tmp_path / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    assert read(tmp_path, path="w.txt").content == "     1\tone\n     2\ttwo"


def test_offset_and_limit_page_through_the_file(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text(numbered(10))
    out = read(tmp_path, path="f.txt", offset=3, limit=2)
    lines = out.content.splitlines()
    assert lines[:2] == ["     3\tline 3", "     4\tline 4"]
    assert lines[2] == "(showing lines 3-4 of 10; call again with offset=5)"


def test_last_page_says_where_it_is_without_asking_for_more(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text(numbered(10))
    out = read(tmp_path, path="f.txt", offset=9)
    assert out.content.splitlines()[-1] == "(showing lines 9-10 of 10)"
    assert "offset=" not in out.content


def test_default_limit_is_2000_lines_with_a_hint_to_page_on(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text(numbered(9_412))
    out = read(tmp_path, path="big.txt")
    lines = out.content.splitlines()
    assert len(lines) == 2_001
    assert lines[1_999] == "  2000\tline 2000"
    assert lines[-1] == "(showing lines 1-2,000 of 9,412; call again with offset=2001)"


def test_total_counts_a_last_line_without_newline(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text(numbered(5) + "tail without newline")
    out = read(tmp_path, path="f.txt", limit=2)
    assert "of 6;" in out.content


def test_small_file_read_whole_has_no_paging_note(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text(numbered(3))
    assert "showing" not in read(tmp_path, path="f.txt").content


def test_long_lines_are_cut_at_2000_chars(tmp_path: Path) -> None:
    (tmp_path / "wide.txt").write_text("x" * 5_000 + "\nshort\n")
    out = read(tmp_path, path="wide.txt")
    first, second = out.content.splitlines()[:2]
    assert first == "     1\t" + "x" * 2_000 + " [line cut at 2,000 chars]"
    assert second == "     2\tshort"
    assert "1 long lines were cut" in out.content


def test_a_huge_single_line_is_not_loaded_whole(tmp_path: Path) -> None:
    (tmp_path / "minified.js").write_bytes(b"a" * 30_000_000 + b"\nnext\n")
    tracemalloc.start()
    try:
        out = read(tmp_path, path="minified.js")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out.content.splitlines()[1] == "     2\tnext"
    assert peak < 8_000_000


def test_paging_a_big_file_streams_instead_of_loading_it(tmp_path: Path) -> None:
    (tmp_path / "log.txt").write_bytes(b"".join(b"%07d some log text here\n" % n
                                                for n in range(300_000)))
    tracemalloc.start()
    try:
        out = read(tmp_path, path="log.txt", offset=150_000, limit=3)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out.content.splitlines()[0] == "150000\t0149999 some log text here"
    assert "of 300,000;" in out.content
    assert peak < 4_000_000  # the file is 7.5 MB; reading it whole would pass that


def test_a_cut_inside_a_multibyte_character_is_not_called_invalid(tmp_path: Path) -> None:
    (tmp_path / "u.txt").write_text("é" * 5_000 + "\n", encoding="utf-8")
    out = read(tmp_path, path="u.txt")
    assert "é" * 2_000 + " [line cut" in out.content
    assert "UTF-8" not in out.content


def test_invalid_utf8_is_replaced_and_said(tmp_path: Path) -> None:
    (tmp_path / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    out = read(tmp_path, path="latin1.txt")
    assert not out.is_error
    assert "caf\ufffd" in out.content
    assert "not valid UTF-8" in out.content


def test_binary_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "img.dat").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    out = read(tmp_path, path="img.dat")
    assert out.is_error
    assert "binary" in out.content


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    out = read(tmp_path, path="nope/missing.py")
    assert out.is_error
    assert out.content == "nope/missing.py does not exist"


def test_directory_is_a_clear_error_pointing_at_list_files(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    out = read(tmp_path, path="src")
    assert out.is_error
    assert "directory" in out.content and "list_files" in out.content


def test_empty_file_says_so(tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_text("")
    out = read(tmp_path, path="empty.txt")
    assert not out.is_error
    assert "empty" in out.content


def test_offset_past_the_end_is_an_error_with_the_length(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text(numbered(4))
    out = read(tmp_path, path="f.txt", offset=50)
    assert out.is_error
    assert "offset 50" in out.content and "4 lines" in out.content


def test_offset_below_one_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text(numbered(4))
    out = read(tmp_path, path="f.txt", offset=0, limit=5)
    assert out.is_error
    assert "1-based" in out.content
