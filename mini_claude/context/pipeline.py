"""Tiers 1-3 in order, run before every model call; none of them costs an API call.

Budget goes first so that snip weighs results at their trimmed size; microcompact
goes last because it only fires after an idle gap and clears nearly everything.
Each tier sees the utilization left by the one before. The pipeline only ever
swaps tool result content, so the system prompt, the tool schemas and the
tool_use / tool_result pairing are out of its reach.
"""

from __future__ import annotations

from pathlib import Path

from mini_claude.context.base import ResultStore
from mini_claude.context.budget import BudgetTier
from mini_claude.context.meter import TokenMeter
from mini_claude.context.microcompact import MicrocompactTier
from mini_claude.context.snip import SnipTier
from mini_claude.context.tier import PassContext, Tier
from mini_claude.conversation import Conversation
from mini_claude.protocol import TierReport
from mini_claude.settings import Settings


class ContextPipeline:
    """Owns one instance of each tier, so their incremental indexes live across passes."""

    def __init__(
        self,
        settings: Settings,
        store: ResultStore,
        meter: TokenMeter,
        *,
        root: Path | None = None,
    ) -> None:
        self.settings = settings
        self.meter = meter
        self.budget = BudgetTier(settings, store)
        self.snip = SnipTier(settings, store, root=root)
        self.microcompact = MicrocompactTier(settings, store)
        self.tiers: tuple[Tier, ...] = (self.budget, self.snip, self.microcompact)

    def run(
        self, conversation: Conversation, *, now: float, last_call_at: float | None
    ) -> list[TierReport]:
        """One pass; returns a report for each tier that changed something, in order."""
        reports: list[TierReport] = []
        for tier in self.tiers:
            utilization = self.meter.utilization(conversation)  # after what earlier tiers freed
            report = tier.run(conversation, PassContext(self.meter, utilization, now, last_call_at))
            if report is not None:
                reports.append(report)
        return reports

    def relieve_pressure(self, conversation: Conversation) -> TierReport | None:
        """Inside a turn that is about to need a summary: clear old results first.

        A summary costs an API call and rewrites the whole prompt; clearing old
        results (their text stays on disk) costs neither and often makes the
        summary unnecessary.
        """
        target = self.settings.post_compact_target(round(self.meter.fixed_tokens))
        # Results of the newest message have not been sent yet: the model reads each whole once.
        unseen = len(conversation.last.tool_results) if conversation.last else 0
        report = self.microcompact.clear_all_but_recent(
            conversation, self.meter, "context pressure inside a turn", stop_at_tokens=target,
            keep=max(self.settings.relief_keep_results, unseen),
        )
        if self.meter.estimate(conversation) <= self.settings.autocompact_tokens:
            return report
        # Still too full: results the model has already seen go too (a summary would drop
        # them as well); only the newest message's results, not yet read, keep their text.
        more = self.microcompact.clear_all_but_recent(
            conversation, self.meter, "context pressure inside a turn", stop_at_tokens=target,
            keep=unseen,
        )
        return _merged(report, more)


def _merged(first: TierReport | None, second: TierReport | None) -> TierReport | None:
    if first is None or second is None:
        return first or second
    return TierReport(
        first.tier,
        first.results_touched + second.results_touched,
        first.chars_freed + second.chars_freed,
        first.tokens_freed + second.tokens_freed,
        first.detail,
    )
