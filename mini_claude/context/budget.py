"""Tier 1: as the window fills, long tool results shrink to their head and tail.

The cut text stays on disk (saved first if it never was) and the marker names
the file. Results are indexed as they arrive, so a pass only looks at what was
appended since the last one plus the few results that are still long.
"""

from __future__ import annotations

from dataclasses import replace

from mini_claude.context.base import ResultStore
from mini_claude.context.meter import apply_edit
from mini_claude.context.placeholders import budget_marker, cut_to_head_and_tail, with_original_size
from mini_claude.context.store import ensure_saved
from mini_claude.context.tier import HistoryWatch, PassContext
from mini_claude.conversation import Conversation, ResultState, ToolResultBlock
from mini_claude.protocol import TierReport
from mini_claude.settings import Settings


class BudgetTier:
    """Cuts long results at two steps of utilization (the ``budget_low_*`` and
    ``budget_high_*`` settings); on a small window a share of it caps each step's limit."""

    def __init__(self, settings: Settings, store: ResultStore) -> None:
        self.settings = settings
        self.store = store
        self._history = HistoryWatch()
        self._cursor = 0
        self._long: set[int] = set()  # result indexes still longer than the smallest limit

    @property
    def _smallest_limit(self) -> int:
        s = self.settings
        return min(s.budget_low_chars, s.budget_high_chars,
                   self._window_cap(min(s.budget_low_window_share, s.budget_high_window_share)))

    def limit_for(self, utilization: float) -> int | None:
        """The length a result may keep at this utilization, or None below the first step."""
        s = self.settings
        if utilization >= s.budget_high_pct:
            return min(s.budget_high_chars, self._window_cap(s.budget_high_window_share))
        if utilization >= s.budget_low_pct:
            return min(s.budget_low_chars, self._window_cap(s.budget_low_window_share))
        return None

    def _window_cap(self, share: float) -> int:
        """Characters a share of the effective window holds (only binds on small windows)."""
        return int(self.settings.effective_window * share * self.settings.chars_per_token)

    def run(self, conversation: Conversation, context: PassContext) -> TierReport | None:
        utilization = context.utilization
        seen = self._index_new_results(conversation)
        limit = self.limit_for(utilization)
        if limit is None or not self._long:
            return None
        due = self._due(conversation, seen, limit, utilization)
        if not due or not self._worth_a_cache_break(conversation, due, limit, context):
            return None
        touched = freed = 0
        tokens = 0.0
        for index in due:
            ref = conversation.results[index]
            block = conversation.result_at(ref)
            shorter = self._shorter(block, limit)
            if shorter is None:
                continue  # the disk refused: keep the text rather than lose it
            chars, weight = apply_edit(conversation, ref, shorter, context.meter)
            freed += chars
            tokens += weight
            touched += 1
        if not touched:
            return None
        detail = f"over {limit:,} chars at {utilization:.0%} of the window"
        return TierReport("budget", touched, freed, round(tokens), detail)

    def _due(
        self, conversation: Conversation, seen: int, limit: int, utilization: float
    ) -> list[int]:
        """Indexes of results over ``limit`` that may be cut now, oldest first."""
        due: list[int] = []
        for index in sorted(self._long):
            if index >= seen and utilization < 1.0:
                break  # the model has not read this one yet: it sees every result whole once,
                # unless the request would not fit at all
            block = conversation.result_at(conversation.results[index])
            if block.state == ResultState.CLEARED or len(block.content) <= self._smallest_limit:
                self._long.discard(index)
                continue
            if len(block.content) > limit:
                due.append(index)
        return due

    def _worth_a_cache_break(
        self, conversation: Conversation, due: list[int], limit: int, context: PassContext
    ) -> bool:
        """Cutting rewrites the prompt cache from the first cut on: only worth it in a batch.

        Cuts wait until together they free ``budget_min_free_pct`` of the window (like
        snip's threshold and Anthropic's ``clear_at_least``), so one cut at a time does
        not break the cache on every call; a request that would not fit cuts at once.
        """
        if context.utilization >= 1.0:
            return True
        if not self.settings.clearing_pays:
            return False
        freeable = sum(
            len(conversation.result_at(conversation.results[i]).content) - limit for i in due
        )
        worth = (
            self.settings.budget_min_free_pct
            * self.settings.effective_window
            * context.chars_per_token
        )
        return freeable >= worth

    def _shorter(self, block: ToolResultBlock, limit: int) -> ToolResultBlock | None:
        """The block cut to ``limit``, or None when its full text could not be saved."""
        saved_path = ensure_saved(block, self.store)
        if saved_path is None:
            return None
        content = cut_to_head_and_tail(block, limit, lambda n: budget_marker(n, saved_path))
        return replace(
            with_original_size(block),
            content=content,
            saved_path=saved_path,
            state=max(block.state, ResultState.BUDGETED),
        )

    def _index_new_results(self, conversation: Conversation) -> int:
        """Index results that arrived since the last pass; returns how many were there before.

        Results present at the last pass went out with the last request, so the
        model has read them; the newer ones it has not seen yet.
        """
        if self._history.changed(conversation):
            self._cursor = 0
            self._long.clear()
        seen = self._cursor
        results = conversation.results
        for index in range(self._cursor, len(results)):
            if len(conversation.result_at(results[index]).content) > self._smallest_limit:
                self._long.add(index)
        self._cursor = len(results)
        return seen
