"""Tier 2: results that a later call made stale become placeholders.

Stale means: a file view read again later, a search or listing older than the
newest few of its tool, a shell command run again later. Staleness is decided
as results arrive (an index per kind), so a pass costs what was appended. The
tier only edits when the stale results together are worth a prompt-cache break,
and then clears all of them at once, so the next edit is far away.
"""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path

from mini_claude.context.base import ResultStore
from mini_claude.context.meter import TokenMeter, apply_edit
from mini_claude.context.placeholders import cleared_block, cleared_placeholder
from mini_claude.context.store import ensure_saved, typical_saved_path
from mini_claude.context.tier import HistoryWatch, PassContext
from mini_claude.conversation import Conversation, ResultRef, ResultState, ToolResultBlock
from mini_claude.protocol import TierReport
from mini_claude.settings import Settings
from mini_claude.tool_kinds import ToolKind, known_tools

REREAD = "read again later"
OLD_SEARCH = "newer results of this tool follow"
REPEATED_COMMAND = "the same command ran again later"

# Kinds whose older results a newer result of the same tool supersedes (as tools declare).
_RECENCY_KINDS: tuple[ToolKind, ...] = ("search",)
_WHY_LABELS = {REREAD: "re-read", OLD_SEARCH: "old search", REPEATED_COMMAND: "re-run"}

ViewKey = tuple[str, object]


class SnipTier:
    """Clears superseded and outdated results from ``snip_pct`` utilization on."""

    def __init__(self, settings: Settings, store: ResultStore, *, root: Path | None = None) -> None:
        self.settings = settings
        self.store = store
        self.root = root
        self._path_standin = typical_saved_path(settings)
        self._history = HistoryWatch()
        self._reset()

    def _reset(self) -> None:
        self._cursor = 0
        self._latest_view: dict[ViewKey, tuple[int, bool]] = {}  # view -> (index, is_error)
        self._latest_command: dict[str, int] = {}
        self._recent: dict[str, deque[int]] = {}
        self._stale: dict[int, str] = {}  # result index -> why it is stale
        self._estimates: dict[int, int] = {}  # result index -> chars a placeholder would free
        self._estimated_total = 0

    @property
    def stale_count(self) -> int:
        return len(self._stale)

    def run(self, conversation: Conversation, context: PassContext) -> TierReport | None:
        self._index_new_results(conversation)
        if context.utilization < self.settings.snip_pct or not self._stale:
            return None
        if context.utilization < 1.0 and not self.settings.clearing_pays:
            return None  # the cache it would break costs more than the room it frees
        worth = (
            self.settings.snip_min_free_pct
            * self.settings.effective_window
            * context.chars_per_token
        )
        if self._estimated_total - self._protected_estimate(conversation) < worth:
            return None
        if self._measure(conversation) < worth:
            return None
        return self._clear_stale(conversation, context.meter)

    # ---- clearing ------------------------------------------------------------------

    def _clear_stale(self, conversation: Conversation, meter: TokenMeter) -> TierReport | None:
        touched = freed = 0
        tokens = 0.0
        reasons: dict[str, int] = {}
        first_protected = self._first_protected(conversation)
        for index, why in sorted(self._stale.items()):
            if index >= first_protected:
                continue
            if self._estimates.get(index, 0) == 0:
                self._forget(index)  # a placeholder would be as long: leave it be
                continue
            ref = conversation.results[index]
            block = conversation.result_at(ref)
            saved_path = ensure_saved(block, self.store)
            if saved_path is None:
                continue  # the disk refused: keep the text, try again another time
            placeholder = cleared_block(block, saved_path, label="snipped", why=why)
            self._forget(index)
            if placeholder is None:
                continue
            chars, weight = apply_edit(conversation, ref, placeholder, meter)
            freed += chars
            tokens += weight
            touched += 1
            reasons[why] = reasons.get(why, 0) + 1
        if not touched:
            return None
        detail = ", ".join(f"{count} {_WHY_LABELS[why]}" for why, count in reasons.items())
        return TierReport("snip", touched, freed, round(tokens), detail)

    def _first_protected(self, conversation: Conversation) -> int:
        return len(conversation.results) - self.settings.keep_recent_results

    def _protected_estimate(self, conversation: Conversation) -> int:
        start = max(0, self._first_protected(conversation))
        return sum(self._estimates.get(i, 0) for i in range(start, len(conversation.results)))

    def _measure(self, conversation: Conversation) -> int:
        """Exact chars the clearable stale results would free; refreshes the estimates."""
        first_protected = self._first_protected(conversation)
        total = 0
        for index in list(self._stale):
            block = conversation.result_at(conversation.results[index])
            if block.state == ResultState.CLEARED:
                self._forget(index)
                continue
            self._set_estimate(index, self._freeable(block))
            if index < first_protected:
                total += self._estimates[index]
        return total

    def _freeable(self, block: ToolResultBlock) -> int:
        path = block.saved_path or self._path_standin
        placeholder = cleared_placeholder(block, path, label="snipped", why=REREAD)
        return max(0, len(block.content) - len(placeholder))

    # ---- indexing ------------------------------------------------------------------

    def _index_new_results(self, conversation: Conversation) -> None:
        if self._history.changed(conversation):
            self._reset()
        results = conversation.results
        for index in range(self._cursor, len(results)):
            self._index(conversation, index, results[index])
        self._cursor = len(results)

    def _index(self, conversation: Conversation, index: int, ref: ResultRef) -> None:
        block = conversation.result_at(ref)
        name = block.tool_name
        kind = known_tools().traits(name).kind
        if kind == "read":
            self._index_read(conversation, index, ref, block)
        elif kind == "shell":
            command = block.target.strip()
            if command:
                previous = self._latest_command.get(command)
                if previous is not None:
                    self._mark(conversation, previous, REPEATED_COMMAND)
                self._latest_command[command] = index
        elif kind in _RECENCY_KINDS:
            recent = self._recent.setdefault(name, deque())
            recent.append(index)
            while len(recent) > self.settings.keep_recent_per_tool:
                older = recent.popleft()
                if not self._is_error(conversation, older):
                    self._mark(conversation, older, OLD_SEARCH)

    def _index_read(
        self, conversation: Conversation, index: int, ref: ResultRef, block: ToolResultBlock
    ) -> None:
        """A successful read supersedes the earlier read of the same view; a failed one
        supersedes only an earlier failure, since the older text may be all that is left."""
        key = self._view_key(conversation, ref, block)
        if key is None:
            return
        previous = self._latest_view.get(key)
        if previous is not None:
            previous_index, previous_failed = previous
            if block.is_error and not previous_failed:
                return
            self._mark(conversation, previous_index, REREAD)
        self._latest_view[key] = (index, block.is_error)

    def _view_key(
        self, conversation: Conversation, ref: ResultRef, block: ToolResultBlock
    ) -> ViewKey | None:
        use = conversation.tool_use_for(ref)
        raw_path = use.input.get("path") if use is not None else None
        path = raw_path if isinstance(raw_path, str) and raw_path else block.target
        if not path:
            return None
        offset = use.input.get("offset") if use is not None else None
        return (self._resolve(path), offset or None)  # no offset and offset 0: the start

    def _resolve(self, path: str) -> str:
        expanded = os.path.expanduser(path)
        if self.root is not None:
            expanded = os.path.join(self.root, expanded)
        return os.path.normpath(expanded)

    def _is_error(self, conversation: Conversation, index: int) -> bool:
        return conversation.result_at(conversation.results[index]).is_error

    def _mark(self, conversation: Conversation, index: int, why: str) -> None:
        if index in self._stale:
            return
        block = conversation.result_at(conversation.results[index])
        if block.state == ResultState.CLEARED:
            return
        self._stale[index] = why
        self._set_estimate(index, self._freeable(block))

    def _set_estimate(self, index: int, chars: int) -> None:
        self._estimated_total += chars - self._estimates.get(index, 0)
        self._estimates[index] = chars

    def _forget(self, index: int) -> None:
        self._stale.pop(index, None)
        self._estimated_total -= self._estimates.pop(index, 0)
