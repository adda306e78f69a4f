"""read_file pages through a huge file: the page comes back, not a preview of a saved copy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mini_claude.context.persist import admit_result
from mini_claude.context.store import DiskResultStore
from mini_claude.conversation import ToolUseBlock
from mini_claude.tools.builtin.read_file import page_bytes
from mini_claude.tools.registry import default_registry
from tests.support.tools import run, tool_context


def transcript_like(path: Path, records: int) -> None:
    """JSONL records of about 3,000 characters each, with a fact in record 1,234."""
    with path.open("w", encoding="utf-8") as handle:
        for i in range(records):
            text = f"FACT-{i} the value is {i * 7}" if i == 1_234 else "log line " * 330
            handle.write(json.dumps({"type": "message", "n": i, "text": text}) + "\n")


def read_page(tmp_path: Path, args: dict[str, object], **settings: Any) -> tuple[str, bool]:
    ctx = tool_context(tmp_path, **settings)
    output = run(default_registry().execute("read_file", args, ctx))
    assert not output.is_error, output.content
    use = ToolUseBlock("toolu_1", "read_file", dict(args))
    block, _ = admit_result(output, use, DiskResultStore(ctx.settings, "s"), ctx.settings)
    return block.content, block.saved_path is not None


def test_a_page_of_a_4_mb_file_is_returned_not_persisted(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    transcript_like(path, 1_400)
    assert path.stat().st_size > 4_000_000
    content, persisted = read_page(tmp_path, {"path": "session.jsonl", "offset": 1_230,
                                              "limit": 100})
    assert not persisted
    assert "FACT-1234 the value is 8638" in content
    assert "  1230\t" in content.splitlines()[0]
    assert "of 1,400; call again with offset=" in content
    next_offset = int(content.split("call again with offset=", 1)[1].split(")", 1)[0])
    assert 1_231 < next_offset < 1_330  # cut by size, before the 100 lines asked for


def test_the_page_fits_a_small_window_and_always_shows_a_line(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("".join(f"{'y' * 900} {i}\n" for i in range(500)))
    content, persisted = read_page(tmp_path, {"path": "big.txt", "offset": 10},
                                   context_window=20_000)
    ctx = tool_context(tmp_path, context_window=20_000)
    assert not persisted
    assert len(content.encode()) <= page_bytes(ctx.settings) + 200
    assert content.startswith("    10\t")
    tiny, _ = read_page(tmp_path, {"path": "big.txt", "offset": 3, "limit": 1},
                        persist_threshold_bytes=100)
    assert tiny.startswith("     3\t")


def test_a_whole_file_read_is_a_page_that_says_where_to_read_on(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("".join(f"{'z' * 200} {i}\n" for i in range(1_000)))
    content, persisted = read_page(tmp_path, {"path": "big.txt"}, context_window=32_000)
    assert not persisted and content.startswith("     1\t")
    last_shown = int(content.split("showing lines 1-", 1)[1].split(" ", 1)[0].replace(",", ""))
    assert 100 < last_shown < 1_000
    assert f"call again with offset={last_shown + 1}" in content
    ctx = tool_context(tmp_path, context_window=32_000)
    assert len(content.encode()) <= page_bytes(ctx.settings) + 200


def test_with_no_page_share_a_whole_file_read_goes_to_tier_0(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("".join(f"{'z' * 200} {i}\n" for i in range(1_000)))
    content, persisted = read_page(tmp_path, {"path": "big.txt"}, read_page_window_share=0.0)
    assert persisted and "Output too large" in content
