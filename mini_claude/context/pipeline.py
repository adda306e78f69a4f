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

    def run(
        self, conversation: Conversation, *, now: float, last_call_at: float | None
    ) -> list[TierReport]:
        """One pass; returns a report for each tier that changed something, in order."""
        meter = self.meter
        reports: list[TierReport | None] = []
        utilization = meter.utilization(conversation)
        ratio = meter.chars_per_token
        reports.append(
            self.budget.run(conversation, utilization, chars_per_token=ratio, meter=meter)
        )
        utilization = meter.utilization(conversation)  # after what budget freed
        reports.append(
            self.snip.run(conversation, utilization, chars_per_token=ratio, meter=meter)
        )
        reports.append(
            self.microcompact.run(
                conversation,
                now=now,
                last_call_at=last_call_at,
                chars_per_token=ratio,
                meter=meter,
            )
        )
        return [report for report in reports if report is not None]

    def relieve_pressure(self, conversation: Conversation) -> TierReport | None:
        """Inside a turn that is about to need a summary: clear old results first.

        A summary costs an API call and rewrites the whole prompt; clearing old
        results (their text stays on disk) costs neither and often makes the
        summary unnecessary.
        """
        target = int(self.settings.effective_window * self.settings.post_compact_target_pct)
        return self.microcompact.clear_all_but_recent(
            conversation,
            self.meter.chars_per_token,
            self.meter,
            "context pressure inside a turn",
            stop_at_tokens=target,
        )
