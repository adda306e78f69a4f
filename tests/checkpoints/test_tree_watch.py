"""The project's listing around commands: only changed folders are listed again, and no
change is missed (deep folders, renames across folders, the user's edits between commands,
hard links, a notice queue that overflowed, no notices at all)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_claude.checkpoints.store import CheckpointStore, content_id
from mini_claude.checkpoints.tree import ProjectTree

Records = list[dict[str, Any]]


@pytest.fixture(params=[True, False], ids=["notices", "full-listing"])
def watching(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    deep = root / "a" / "b" / "c" / "d" / "e"
    deep.mkdir(parents=True)
    (deep / "deep.txt").write_text("deep one\n")
    (root / "a" / "top.txt").write_text("top\n")
    (root / "other").mkdir()
    (root / "other" / "keep.txt").write_text("keep\n")
    return root


@pytest.fixture
def make_tree(tmp_path: Path,
              project: Path) -> Iterator[Callable[..., tuple[ProjectTree, Records]]]:
    made: list[ProjectTree] = []

    def make(watch: bool = True) -> tuple[ProjectTree, Records]:
        records: Records = []
        tree = ProjectTree(project, CheckpointStore(tmp_path / "store"), "s1", records.append,
                           max_file_bytes=1_000_000, watch=watch)
        made.append(tree)
        return tree, records

    yield make
    for tree in made:
        tree.close()


def command(tree: ProjectTree, action: Callable[[], object], label: str = "run_shell") -> None:
    capture = tree.before(label)
    action()
    tree.after(capture)


def by_path(records: Records, root: Path) -> dict[str, dict[str, Any]]:
    return {str(Path(r["path"]).relative_to(root)): r for r in records}


def test_a_change_in_a_deep_folder_is_recorded(make_tree: Any, project: Path,
                                               watching: bool) -> None:
    tree, records = make_tree(watching)
    command(tree, lambda: None)
    deep = project / "a/b/c/d/e/deep.txt"
    command(tree, lambda: deep.write_text("deep two\n"))
    (record,) = records
    assert record["path"] == str(deep)
    assert record["before"]["content"] == content_id(b"deep one\n")
    assert record["after"] == content_id(b"deep two\n")


def test_a_same_size_rewrite_within_one_mtime_tick_is_still_recorded(
        make_tree: Any, project: Path) -> None:
    """The notice names the file: it is read again even when size and mtime look the same."""
    tree, records = make_tree(True)
    deep = project / "a/b/c/d/e/deep.txt"
    command(tree, lambda: None)
    stamp = deep.stat().st_mtime_ns

    def rewrite() -> None:
        deep.write_text("deep ONE\n")
        os.utime(deep, ns=(stamp, stamp))

    command(tree, rewrite)
    assert [r["after"] for r in records] == [content_id(b"deep ONE\n")]


def test_a_file_and_a_folder_renamed_across_folders_are_recorded(
        make_tree: Any, project: Path, watching: bool) -> None:
    tree, records = make_tree(watching)
    command(tree, lambda: None)

    def move() -> None:
        (project / "a/top.txt").rename(project / "other/top.txt")
        (project / "a/b").rename(project / "other/b")

    command(tree, move)
    changes = by_path(records, project)
    assert changes["a/top.txt"]["after"] == "absent"
    assert changes["other/top.txt"]["before"] == {"state": "absent"}
    assert changes["a/b/c/d/e/deep.txt"]["after"] == "absent"
    assert changes["other/b/c/d/e/deep.txt"]["after"] == content_id(b"deep one\n")
    # The moved folder is watched where it is now: a change there is seen.
    records.clear()
    command(tree, lambda: (project / "other/b/c/d/e/deep.txt").write_text("moved on\n"))
    assert list(by_path(records, project)) == ["other/b/c/d/e/deep.txt"]


def test_an_edit_made_between_commands_is_stored_before_the_next_command(
        make_tree: Any, project: Path, watching: bool) -> None:
    tree, records = make_tree(watching)
    command(tree, lambda: None)
    keep = project / "other/keep.txt"
    keep.write_text("the user's own version\n")  # no command running
    command(tree, lambda: keep.unlink())
    (record,) = records
    assert record["before"]["content"] == content_id(b"the user's own version\n")
    assert tree.store.get(record["before"]["content"]) == b"the user's own version\n"


def test_a_folder_created_by_a_command_is_listed_and_then_watched(
        make_tree: Any, project: Path, watching: bool) -> None:
    tree, records = make_tree(watching)
    command(tree, lambda: None)

    def make_folders() -> None:
        (project / "new/inner").mkdir(parents=True)
        (project / "new/inner/made.txt").write_text("made\n")

    command(tree, make_folders)
    assert by_path(records, project)["new/inner/made.txt"]["created_folders"] == [
        str(project / "new"), str(project / "new/inner")]
    records.clear()
    command(tree, lambda: shutil.rmtree(project / "new"))
    assert by_path(records, project)["new/inner/made.txt"]["after"] == "absent"


def test_a_file_changed_through_a_hard_link_outside_the_project_is_recorded(
        make_tree: Any, project: Path, tmp_path: Path, watching: bool) -> None:
    """No notice comes for a write through another name: such files are looked at always."""
    outside = tmp_path / "outside.txt"
    os.link(project / "other/keep.txt", outside)
    tree, records = make_tree(watching)
    command(tree, lambda: None)
    command(tree, lambda: outside.write_text("changed from outside, longer\n"))
    assert by_path(records, project)["other/keep.txt"]["after"] == content_id(
        b"changed from outside, longer\n")


def test_a_gitignore_changed_by_a_command_takes_effect_at_once(
        make_tree: Any, project: Path, watching: bool) -> None:
    tree, records = make_tree(watching)
    (project / "other/build.log").write_text("log one\n")
    command(tree, lambda: None)

    def ignore_logs() -> None:
        (project / ".gitignore").write_text("*.log\n")
        (project / "other/build.log").write_text("log two, longer\n")

    command(tree, ignore_logs)
    assert by_path(records, project)["other/build.log"]["before"]["state"] == "content"
    records.clear()
    command(tree, lambda: (project / "other/build.log").write_text("log three, longer still\n"))
    assert by_path(records, project)["other/build.log"]["before"] == {
        "state": "not_checkpointed", "reason": "ignored by .gitignore"}


def test_a_folder_swapped_for_a_link_is_never_listed_through(
        make_tree: Any, project: Path, tmp_path: Path, watching: bool) -> None:
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "c").mkdir(parents=True)
    (elsewhere / "c" / "secret.txt").write_text("not the project's\n")
    tree, records = make_tree(watching)
    command(tree, lambda: None)

    def swap() -> None:
        shutil.rmtree(project / "a/b")
        (project / "a/b").symlink_to(elsewhere)
        (project / "a/b/c/secret.txt").write_text("still not the project's\n")

    command(tree, swap)
    changes = by_path(records, project)
    assert changes["a/b"]["after"] is None  # a link now: named, not stored
    assert changes["a/b/c/d/e/deep.txt"]["after"] == "absent"
    assert not any("secret" in path for path in changes)


def test_a_command_that_changes_nothing_lists_nothing_again(make_tree: Any,
                                                            project: Path) -> None:
    tree, records = make_tree(True)
    for _ in range(3):
        command(tree, lambda: None)
    command(tree, lambda: (project / "a/top.txt").write_text("top two\n"))
    assert tree.full_listings == 1  # the first look only
    assert list(by_path(records, project)) == ["a/top.txt"]


def test_notices_lost_to_an_overflowing_queue_mean_a_full_listing(
        make_tree: Any, project: Path) -> None:
    """More notices than the kernel queues: the ones dropped include the change that
    matters, which the full listing then finds."""
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 100_000:
        pytest.skip(f"this kernel queues {limit:,} notices: too many files to overflow it")
    tree, records = make_tree(True)
    command(tree, lambda: None)
    flood = project / "other"

    def overflow_then_change() -> None:
        for number in range(limit // 2 + 100):  # a create and a close-after-write each
            (flood / f"f{number}").write_bytes(b"")
        subprocess.run(["sh", "-c", "echo 'deep two' > a/b/c/d/e/deep.txt"], cwd=project,
                       check=True)

    command(tree, overflow_then_change)
    assert tree.full_listings == 2
    changes = by_path(records, project)
    assert changes["a/b/c/d/e/deep.txt"]["after"] == content_id(b"deep two\n")
    assert len([p for p in changes if p.startswith("other/f")]) == limit // 2 + 100


def test_a_folder_replaced_by_a_new_one_is_listed_whole(make_tree: Any, project: Path,
                                                        watching: bool) -> None:
    """The new folder had no watch: what was made in it is found by listing it all."""
    tree, records = make_tree(watching)
    command(tree, lambda: None)
    script = "rm -rf a/b && mkdir -p a/b/c && echo new > a/b/c/new.txt"
    command(tree, lambda: subprocess.run(["sh", "-c", script], cwd=project, check=True))
    changes = by_path(records, project)
    assert changes["a/b/c/d/e/deep.txt"]["after"] == "absent"
    assert changes["a/b/c/new.txt"]["after"] == content_id(b"new\n")


def test_ignore_rules_looked_up_per_folder_agree_with_the_per_path_rules(
        tmp_path: Path) -> None:
    """Nested .gitignore files, a negation and a folder pattern: both ways say the same."""
    from mini_claude.project.ignore import IgnoreRules

    root = tmp_path / "tree"
    (root / "src" / "gen" / "deep").mkdir(parents=True)
    (root / "build").mkdir()
    (root / ".gitignore").write_text("*.log\nbuild/\n!keep.log\n")
    (root / "src" / ".gitignore").write_text("gen/*.py\n!gen/main.py\n")
    (root / "src" / "gen" / "deep" / ".gitignore").write_text("keep.log\n")
    names = ["a.log", "keep.log", "main.py", "other.py", "x.txt", "build", "gen", "deep"]
    folders = [root, root / "src", root / "src" / "gen", root / "src" / "gen" / "deep"]
    verdicts = []
    for folder in folders:
        for name in names:
            for is_dir in (False, True):
                per_path = IgnoreRules(root).ignored(folder / name, is_dir=is_dir)
                assert IgnoreRules(root).ignored_name(folder, name, is_dir=is_dir) == per_path
                verdicts.append(per_path)
    assert True in verdicts and False in verdicts


def test_a_project_reached_through_a_link_is_watched_where_it_really_is(
        tmp_path: Path, project: Path) -> None:
    link = tmp_path / "link-to-project"
    link.symlink_to(project)
    records: Records = []
    tree = ProjectTree(link, CheckpointStore(tmp_path / "store"), "s1", records.append,
                       max_file_bytes=1_000_000)
    try:
        command(tree, lambda: None)
        command(tree, lambda: (project / "new.txt").write_text("at the top\n"))
        assert [Path(r["path"]).name for r in records] == ["new.txt"]
        assert tree.full_listings == 1
    finally:
        tree.close()
