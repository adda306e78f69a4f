"""Tier 0: a tool result's way into the conversation.

Large output goes to disk whole and the context gets a preview and the path, so
nothing is lost and the model can page through it. Only when the disk refuses
does an over-long result get cut, and the marker says so.
"""

from __future__ import annotations

from dataclasses import replace

from mini_claude.context.base import ResultStore
from mini_claude.context.placeholders import (
    count_lines,
    cut_to_head_and_tail,
    persisted_notice,
    preview_of,
    truncation_marker,
    utf8_size,
)
from mini_claude.conversation import ResultState, ToolResultBlock, ToolUseBlock, target_of
from mini_claude.protocol import TierName, TierReport, ToolOutput
from mini_claude.settings import Settings
from mini_claude.tool_kinds import known_tools


def admit_result(
    output: ToolOutput,
    use: ToolUseBlock,
    store: ResultStore,
    settings: Settings,
    *,
    chars_per_token: float | None = None,
) -> tuple[ToolResultBlock, TierReport | None]:
    """Build the result block for ``use``; persist or cut it when it is too large."""
    content = output.content
    block = ToolResultBlock(
        tool_use_id=use.id,
        content=content,
        is_error=output.is_error,
        tool_name=use.name,
        target=target_of(use),
        original_chars=len(content),
        original_lines=count_lines(content),
    )
    ratio = chars_per_token or settings.chars_per_token
    size_bytes = utf8_size(content)
    save_failed = False
    # A page of a file that stays on disk, bounded by the tool itself: saving a copy would
    # only make the model read the copy back, and a preview invites answering from it alone.
    self_paged = known_tools().traits(use.name).pages_itself and settings.reads_page_themselves
    if size_bytes > settings.persist_threshold_bytes and not self_paged:
        saved_path = store.save(use.name, content)
        if saved_path is not None:
            persisted = _persisted_block(block, saved_path, size_bytes, settings)
            return persisted, _report("persist", block, persisted, ratio, f"saved to {saved_path}")
        save_failed = True
    if len(content) > settings.truncate_chars:
        cut = replace(
            block,
            content=cut_to_head_and_tail(
                block,
                settings.truncate_chars,
                lambda n: truncation_marker(n, save_failed=save_failed),
            ),
            state=ResultState.BUDGETED,
        )
        detail = "disk write failed" if save_failed else ""
        return cut, _report("truncate", block, cut, ratio, detail)
    return block, None


def _persisted_block(
    block: ToolResultBlock, saved_path: str, size_bytes: int, settings: Settings
) -> ToolResultBlock:
    preview, shown = preview_of(block.content, settings.preview_lines, settings.preview_bytes)
    notice = persisted_notice(
        block.tool_name, saved_path, size_bytes, block.original_lines, preview, shown
    )
    if len(notice) >= len(block.content):
        return replace(block, saved_path=saved_path)  # tiny thresholds: the notice would not help
    return replace(block, content=notice, saved_path=saved_path)


def _report(
    tier: TierName, before: ToolResultBlock, after: ToolResultBlock, ratio: float, detail: str
) -> TierReport:
    freed = len(before.content) - len(after.content)
    return TierReport(tier, 1, freed, round(freed / ratio), detail)
