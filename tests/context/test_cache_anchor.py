"""Where the prompt cache keeps a prefix that the next history edit leaves alone."""

from __future__ import annotations

from mini_claude.context.cache_anchor import stable_prefix_end
from mini_claude.context.fold import FOLD_HEADING
from mini_claude.context.rebuild import assemble, boundary_message
from mini_claude.conversation import Message, TextBlock
from tests.support.compact import call, exchange, user


def test_no_summary_and_no_fold_means_no_anchor() -> None:
    history = [user("start"), *exchange(call("read_file", path="a.py"), output="A")]
    assert stable_prefix_end(history) is None


def test_the_summary_boundary_is_kept_until_a_fold_comes_after_it() -> None:
    boundary = boundary_message("earlier work", "", 10, ["the user's own words"], [])
    tail = [user("go on"), *exchange(call("read_file", path="a.py"), output="A")]
    history = assemble(boundary, tail)
    assert stable_prefix_end(history) is boundary.blocks[-1]

    fold = TextBlock(f"{FOLD_HEADING}:]\n- read_file a.py → 1.txt")
    history[2] = Message("user", [*history[2].blocks, fold])
    assert stable_prefix_end(history) is fold


def test_the_newest_fold_block_wins() -> None:
    older = TextBlock(f"{FOLD_HEADING}:]\n- read_file a.py → 1.txt")
    newer = TextBlock(f"{FOLD_HEADING}:]\n- read_file b.py → 2.txt")
    history = [
        Message("user", [TextBlock("first"), older]),
        Message("assistant", [TextBlock("done")]),
        Message("user", [TextBlock("second"), newer, TextBlock("a note after it")]),
    ]
    assert stable_prefix_end(history) is newer
