"""Tier 3: after a long idle gap, every tool result but the newest few becomes a placeholder.

The provider's prompt cache lives a few minutes. Once it has expired the next
request re-writes the whole prompt anyway, so editing old history costs nothing
extra and shrinks that write. A cursor remembers how far earlier passes got, so
a later gap only looks at results that arrived since.
"""

from __future__ import annotations

from mini_claude.context.base import ResultStore
from mini_claude.context.meter import TokenMeter, apply_edit
from mini_claude.context.placeholders import cleared_block
from mini_claude.context.store import ensure_saved, typical_saved_path
from mini_claude.context.tier import HistoryWatch, PassContext, cache_is_cold
from mini_claude.conversation import Conversation, ResultState, ToolResultBlock
from mini_claude.protocol import TierReport
from mini_claude.settings import Settings


class MicrocompactTier:
    """Clears old results once ``microcompact_idle_seconds`` have passed since the last call."""

    def __init__(self, settings: Settings, store: ResultStore) -> None:
        self.settings = settings
        self.store = store
        self._history = HistoryWatch()
        self._done_before = 0  # results below this index were handled by an earlier pass
        self._retry: list[int] = []  # results the disk refused to save last time
        self._path_standin = typical_saved_path(settings)

    def run(self, conversation: Conversation, context: PassContext) -> TierReport | None:
        now, last_call_at = context.now, context.last_call_at
        idle = self.settings.microcompact_idle_seconds
        if last_call_at is None or not cache_is_cold(now, last_call_at, idle):
            return None
        idle_minutes = (now - last_call_at) / 60
        detail = f"idle {idle_minutes:.0f} min, prompt cache expired"
        return self.clear_all_but_recent(conversation, context.meter, detail)

    def clear_all_but_recent(
        self,
        conversation: Conversation,
        meter: TokenMeter,
        detail: str,
        *,
        stop_at_tokens: int | None = None,
        keep: int | None = None,
    ) -> TierReport | None:
        """Clear old results, oldest first, keeping the newest few.

        With ``stop_at_tokens`` it stops once the estimate is down to
        that many tokens: the relief before a mid-turn summary clears only what it
        must, so newer results keep their text. ``keep`` overrides how many of the
        newest results stay.
        """
        self._sync(conversation)
        kept = self.settings.keep_recent_results if keep is None else keep
        end = len(conversation.results) - kept
        pending = self._retry + list(range(self._done_before, end))
        self._retry = []
        touched = freed = 0
        tokens = 0.0
        for position, index in enumerate(pending):
            if touched and self._low_enough(conversation, meter, stop_at_tokens):
                self._retry.extend(i for i in pending[position:] if i < self._done_before)
                self._done_before = max(self._done_before, index)
                break
            ref = conversation.results[index]
            block = conversation.result_at(ref)
            if block.state == ResultState.CLEARED or not self._worth_saving(block):
                continue
            saved_path = ensure_saved(block, self.store)
            if saved_path is None:
                self._retry.append(index)  # the disk refused: keep the text, try next time
                continue
            placeholder = cleared_block(block, saved_path, label="cleared")
            if placeholder is None:
                continue
            chars, weight = apply_edit(conversation, ref, placeholder, meter)
            freed += chars
            tokens += weight
            touched += 1
        else:
            self._done_before = max(self._done_before, end)
        if not touched:
            return None
        return TierReport("microcompact", touched, freed, round(tokens), detail)

    @staticmethod
    def _low_enough(
        conversation: Conversation, meter: TokenMeter, stop_at_tokens: int | None
    ) -> bool:
        if stop_at_tokens is None:
            return False
        return meter.estimate(conversation) <= stop_at_tokens

    def _worth_saving(self, block: ToolResultBlock) -> bool:
        """Short results stay: their placeholder would be as long, and a file would be clutter."""
        path = block.saved_path or self._path_standin
        return cleared_block(block, path, label="cleared") is not None

    def _sync(self, conversation: Conversation) -> None:
        if self._history.changed(conversation):
            self._done_before = 0
            self._retry = []
