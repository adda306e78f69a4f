"""grep_search and list_files: .gitignore, caps with counts, time caps, both grep backends."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from mini_claude.protocol import ToolOutput
from mini_claude.tools.base import NOTHING_TO_ASK
from mini_claude.tools.builtin.grep_search import (
    GrepBackend,
    GrepSearchTool,
    PythonBackend,
    RipgrepBackend,
    SearchRequest,
    choose_backend,
)
from mini_claude.tools.builtin.list_files import ListFilesTool
from tests.support.tools import process_alive, run, tool_context, wait_until


def available_backends() -> list[GrepBackend]:
    """The Python worker always; ripgrep too on machines that have it."""
    backends: list[GrepBackend] = [PythonBackend()]
    executable = shutil.which("rg")
    if executable:
        backends.append(RipgrepBackend(executable))
    return backends


@pytest.fixture(params=available_backends(), ids=lambda backend: backend.name)
def backend(request: pytest.FixtureRequest) -> GrepBackend:
    chosen: GrepBackend = request.param
    return chosen


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small tree with ignored files at several levels and the usual clutter."""
    root = tmp_path / "project"
    write(root, ".gitignore", "build/\n*.log\n!keep.log\n")
    write(root, "src/app.py", "import os\n\ndef target():\n    return 'target'\n")
    write(root, "src/util.py", "def helper():\n    pass  # target\n")
    write(root, "src/gen/.gitignore", "*.gen.py\n")
    write(root, "src/gen/made.gen.py", "target = 1\n")
    write(root, "src/gen/kept.py", "target = 2\n")
    write(root, "build/out.py", "target = 3\n")
    write(root, "debug.log", "target in a log\n")
    write(root, "keep.log", "target kept\n")
    write(root, "node_modules/pkg/index.js", "target\n")
    write(root, ".venv/lib/site.py", "target\n")
    write(root, ".git/config", "target\n")
    write(root, "src/__pycache__/app.cpython-311.pyc", "target\n")
    write(root, ".github/workflows/ci.yml", "run: target\n")
    (root / "blob.bin").write_bytes(b"target\x00\x01\x02")
    return root


def grep(root: Path, backend: GrepBackend, **args: object) -> ToolOutput:
    tool = GrepSearchTool(backend)
    return run(tool.run(dict(args), tool_context(root), NOTHING_TO_ASK))


def listing(root: Path, tool: ListFilesTool | None = None, **args: object) -> ToolOutput:
    return run((tool or ListFilesTool()).run(dict(args), tool_context(root), NOTHING_TO_ASK))


# ---- grep_search on every available backend -----------------------------------------


def test_grep_reports_path_line_text_and_respects_gitignore(
    project: Path, backend: GrepBackend
) -> None:
    out = grep(project, backend, pattern="target")
    assert not out.is_error
    assert out.content.splitlines() == [
        ".github/workflows/ci.yml:1:run: target",
        "keep.log:1:target kept",
        "src/app.py:3:def target():",
        "src/app.py:4:    return 'target'",
        "src/gen/kept.py:1:target = 2",
        "src/util.py:2:    pass  # target",
    ]


def test_grep_glob_and_path_narrow_the_search(project: Path, backend: GrepBackend) -> None:
    logs = grep(project, backend, pattern="target", glob="*.log")
    assert logs.content == "keep.log:1:target kept"
    in_gen = grep(project, backend, pattern="target", path="src/gen")
    assert in_gen.content == "src/gen/kept.py:1:target = 2"
    one_file = grep(project, backend, pattern="def", path="src/util.py")
    assert one_file.content == "src/util.py:1:def helper():"


def test_grep_glob_is_read_relative_to_the_searched_folder(
    project: Path, backend: GrepBackend
) -> None:
    out = grep(project, backend, pattern="target", path="src", glob="gen/*.py")
    assert out.content == "src/gen/kept.py:1:target = 2"
    deep = grep(project, backend, pattern="target", glob="**/gen/*.py")
    assert deep.content == "src/gen/kept.py:1:target = 2"


def test_grep_glob_never_brings_back_ignored_files(project: Path, backend: GrepBackend) -> None:
    out = grep(project, backend, pattern="target", glob="*")
    assert "debug.log" not in out.content
    assert "build/" not in out.content
    assert "keep.log:1:target kept" in out.content


def test_grep_in_an_ignored_folder_named_on_purpose(project: Path, backend: GrepBackend) -> None:
    out = grep(project, backend, pattern="target", path="build")
    assert out.content == "build/out.py:1:target = 3"


def test_grep_without_matches_says_so(project: Path, backend: GrepBackend) -> None:
    out = grep(project, backend, pattern="no_such_identifier_anywhere")
    assert not out.is_error
    assert out.content == "No matches for 'no_such_identifier_anywhere' in ."


def test_grep_pattern_is_an_argument_never_shell_text(
    project: Path, backend: GrepBackend
) -> None:
    write(project, "notes.txt", "cost: $(whoami) `id`; rm -rf\n")
    out = grep(project, backend, pattern=r"\$\(whoami\) `id`; rm")
    assert out.content == "notes.txt:1:cost: $(whoami) `id`; rm -rf"
    assert (project / "src").is_dir()


def test_grep_caps_matches_and_counts_the_rest(tmp_path: Path, backend: GrepBackend) -> None:
    write(tmp_path, "many.txt", "".join(f"hit {n}\n" for n in range(1, 351)))
    out = grep(tmp_path, backend, pattern="hit")
    lines = out.content.splitlines()
    assert len(lines) == 201
    assert lines[199] == "many.txt:200:hit 200"
    assert lines[-1].startswith("(showing 200 of 350 matching lines;")


def test_grep_caps_characters_too(tmp_path: Path, backend: GrepBackend) -> None:
    write(tmp_path, "wide.txt", "".join(f"hit {n} " + "w" * 400 + "\n" for n in range(100)))
    out = run(GrepSearchTool(backend, max_chars=2_000).run({"pattern": "hit"},
                                                            tool_context(tmp_path), NOTHING_TO_ASK))
    shown = out.content.splitlines()[:-1]
    assert 1 <= len(shown) <= 5
    assert sum(len(line) + 1 for line in shown) <= 2_000
    assert f"showing {len(shown)} of 100 matching lines" in out.content


def test_grep_cuts_very_long_matching_lines(tmp_path: Path, backend: GrepBackend) -> None:
    write(tmp_path, "min.js", "var hit=1;" + "x" * 50_000 + "\n")
    out = grep(tmp_path, backend, pattern="hit")
    assert out.content.startswith("min.js:1:var hit=1;")
    assert len(out.content) < 2_000


def test_grep_missing_path_is_an_error(project: Path, backend: GrepBackend) -> None:
    out = grep(project, backend, pattern="x", path="nowhere")
    assert out.is_error
    assert "nowhere does not exist" in out.content


# ---- the Python backend -----------------------------------------------------------------


def test_invalid_regex_is_a_clear_error(project: Path) -> None:
    out = grep(project, PythonBackend(), pattern="def (unclosed")
    assert out.is_error
    assert out.content.startswith("invalid regex 'def (unclosed': missing )")


def test_empty_pattern_is_refused(project: Path) -> None:
    out = grep(project, PythonBackend(), pattern="")
    assert out.is_error


def test_catastrophic_regex_is_stopped_at_the_time_cap(tmp_path: Path) -> None:
    write(tmp_path, "evil.txt", "a" * 40 + "!\n")
    tool = GrepSearchTool(PythonBackend(), time_limit=1.0)
    started = time.monotonic()
    out = run(tool.run({"pattern": "(a+)+$"}, tool_context(tmp_path), NOTHING_TO_ASK))
    assert time.monotonic() - started < 15
    assert out.is_error
    assert "search stopped after 1 s" in out.content


def test_matches_found_before_the_time_cap_are_kept(tmp_path: Path) -> None:
    write(tmp_path, "a_good.txt", "aaa\n")
    write(tmp_path, "b_evil.txt", "a" * 40 + "!\n")
    tool = GrepSearchTool(PythonBackend(), time_limit=1.0)
    out = run(tool.run({"pattern": "^(a+)+$"}, tool_context(tmp_path), NOTHING_TO_ASK))
    assert out.content.splitlines()[0] == "a_good.txt:1:aaa"
    assert "search stopped after 1 s" in out.content
    assert not out.is_error


# ---- the ripgrep backend's command and the choice between backends ----------------------


def test_ripgrep_command_passes_the_pattern_as_one_argument(tmp_path: Path) -> None:
    pattern = "$(rm -rf /); `id` -e --files"
    request = SearchRequest(pattern, tmp_path, tmp_path / "src", "*.py")
    argv = RipgrepBackend("/usr/bin/rg").command(request)
    assert argv[0] == "/usr/bin/rg"
    assert f"--regexp={pattern}" in argv
    assert argv[-2:] == ["--", "src"]
    assert not any(arg.startswith("--glob=") and "!" not in arg for arg in argv)
    assert "--null" in argv
    assert {"--glob=!.git/", "--glob=!node_modules/", "--glob=!.venv/",
            "--glob=!__pycache__/"} <= set(argv)
    assert "--no-require-git" in argv and "--no-config" in argv


def test_ripgrep_searches_the_project_as_dot_and_outside_paths_whole(tmp_path: Path) -> None:
    backend = RipgrepBackend("rg")
    assert backend.command(SearchRequest("x", tmp_path, tmp_path, None))[-1] == "."
    outside = tmp_path.parent / "elsewhere"
    assert backend.command(SearchRequest("x", tmp_path, outside, None))[-1] == str(outside)


def test_ripgrep_regex_errors_are_recognised() -> None:
    stderr = "regex parse error:\n    (unclosed\n    ^\nerror: unclosed group\n"
    message = RipgrepBackend("rg").pattern_error(stderr)
    assert message is not None and "unclosed group" in message
    assert RipgrepBackend("rg").pattern_error("rg: ./secret: Permission denied") is None


def test_backend_choice_is_ripgrep_when_on_path_else_python() -> None:
    found = choose_backend(lambda name: "/opt/bin/rg" if name == "rg" else None)
    assert isinstance(found, RipgrepBackend) and found.executable == "/opt/bin/rg"
    assert isinstance(choose_backend(lambda name: None), PythonBackend)


# ---- list_files ---------------------------------------------------------------------------


def test_list_respects_gitignore_and_skips_clutter(project: Path) -> None:
    out = listing(project)
    assert out.content.splitlines() == [
        ".github/workflows/ci.yml",
        ".gitignore",
        "blob.bin",
        "keep.log",
        "src/app.py",
        "src/gen/.gitignore",
        "src/gen/kept.py",
        "src/util.py",
        "(8 files)",
    ]


def test_list_pattern_uses_gitignore_globs(project: Path) -> None:
    everywhere = listing(project, pattern="*.py").content.splitlines()
    assert everywhere[:-1] == ["src/app.py", "src/gen/kept.py", "src/util.py"]
    anchored = listing(project, pattern="src/*.py").content.splitlines()
    assert anchored[:-1] == ["src/app.py", "src/util.py"]
    double_star = listing(project, pattern="**/gen/*.py").content.splitlines()
    assert double_star[:-1] == ["src/gen/kept.py"]


def test_list_a_subfolder_keeps_project_relative_paths(project: Path) -> None:
    out = listing(project, path="src/gen")
    assert out.content.splitlines() == ["src/gen/.gitignore", "src/gen/kept.py", "(2 files)"]


def test_list_is_capped_with_a_count(tmp_path: Path) -> None:
    for n in range(12):
        write(tmp_path, f"f{n:02d}.txt", "")
    out = listing(tmp_path, ListFilesTool(max_entries=5))
    lines = out.content.splitlines()
    assert lines[:5] == [f"f{n:02d}.txt" for n in range(5)]
    assert lines[5] == "(showing 5 of 12 files; narrow the path or pattern to see the rest)"


def test_list_stops_at_its_time_cap_and_says_so(project: Path) -> None:
    out = listing(project, ListFilesTool(time_limit=0))
    assert "listing stopped after 0 s; it is incomplete" in out.content


def test_list_nothing_matching_says_so(project: Path) -> None:
    out = listing(project, pattern="*.rs")
    assert not out.is_error
    assert out.content == "No files matching '*.rs' in ."


def test_list_errors_for_missing_folder_and_for_a_file(project: Path) -> None:
    missing = listing(project, path="nope")
    assert missing.is_error and "does not exist" in missing.content
    a_file = listing(project, path="src/app.py")
    assert a_file.is_error and "read_file" in a_file.content


def test_list_does_not_enter_symlinked_folders(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "secret.txt", "")
    project = tmp_path / "project"
    write(project, "a.txt", "")
    (project / "linked").symlink_to(outside, target_is_directory=True)
    assert listing(project).content.splitlines() == ["a.txt", "(1 file)"]


def test_grep_does_not_follow_symlinked_files_out_of_the_project(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret target\n")
    project = tmp_path / "project"
    write(project, "a.txt", "target\n")
    (project / "link.txt").symlink_to(outside)
    for backend in available_backends():
        assert grep(project, backend, pattern="target").content == "a.txt:1:target"


def processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line contains ``text`` (the worker carries the paths)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and process_alive(int(entry.name)):
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_the_stopped_worker_process_is_gone(tmp_path: Path) -> None:
    write(tmp_path, "evil.txt", "a" * 40 + "!\n")
    tool = GrepSearchTool(PythonBackend(), time_limit=0.5)
    run(tool.run({"pattern": "(a+)+$"}, tool_context(tmp_path), NOTHING_TO_ASK))
    assert wait_until(lambda: not processes_mentioning(str(tmp_path)))


def test_cancelling_a_search_stops_the_worker_and_propagates(tmp_path: Path) -> None:
    write(tmp_path, "evil.txt", "a" * 40 + "!\n")

    async def cancel_midway() -> None:
        tool = GrepSearchTool(PythonBackend(), time_limit=60)
        task = asyncio.create_task(
            tool.run({"pattern": "(a+)+$"}, tool_context(tmp_path), NOTHING_TO_ASK)
        )
        for _ in range(500):
            if processes_mentioning(str(tmp_path)):
                break
            await asyncio.sleep(0.02)
        task.cancel()
        await task

    with pytest.raises(asyncio.CancelledError):
        run(cancel_midway())
    assert wait_until(lambda: not processes_mentioning(str(tmp_path)))


def test_the_kept_out_folder_is_never_entered(tmp_path: Path, backend: GrepBackend) -> None:
    """The home inside the project is not read at all (not only left out of the results):
    the backend's own output has nothing from it, while a folder of the same name
    elsewhere, and a name with glob characters, are searched as usual."""
    project = tmp_path / "proj"
    home = project / "users" / "a[1]*"
    write(project, "users/a[1]*/.mini-claude/.env", "target in the home\n")
    write(project, "users/a[1]*/notes.txt", "target in a note\n")
    write(project, "users/b/users/a[1]*/x.txt", "target elsewhere\n")
    write(project, "top.txt", "target on top\n")
    request = SearchRequest("target", project, project, None, kept_out=home)
    done = subprocess.run(backend.command(request), cwd=project, capture_output=True,
                          timeout=30, check=False)
    found = sorted(line.split(b"\0")[0].decode().removeprefix("./")
                   for line in done.stdout.splitlines())
    assert found == ["top.txt", "users/b/users/a[1]*/x.txt"], done.stderr
