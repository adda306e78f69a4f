"""The context strategies compared: one agent, four sets of settings.

Each strategy is expressed only through :class:`Settings`, so every row of the
table runs the same tiers; a strategy switches tiers off by moving their
thresholds out of reach.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mini_claude.settings import Settings

UNREACHABLE_PCT = 9.9  # a utilization no prompt ever reaches
NEVER_SECONDS = 10.0**9
HUGE_BYTES = 1 << 40
LEARN_CLAUDE_CODE_THRESHOLD = 50_000


@dataclass(frozen=True, slots=True)
class Strategy:
    key: str
    title: str
    description: str
    configure: Callable[[Settings], Settings]
    ours: bool = False
    ablation: bool = False  # a variant of ours with one tier off: explains, is not judged


def _tiers_off(settings: Settings) -> Settings:
    return settings.with_overrides(
        budget_low_pct=UNREACHABLE_PCT,
        budget_high_pct=UNREACHABLE_PCT,
        snip_pct=UNREACHABLE_PCT,
        microcompact_idle_seconds=NEVER_SECONDS,
        persist_threshold_bytes=HUGE_BYTES,
    )


def _no_compaction(settings: Settings) -> Settings:
    return _tiers_off(settings).with_overrides(auto_compact=False)


def _learn_claude_code(settings: Settings) -> Settings:
    """Placeholders for all but the last 3 results before every call; a summary above 50K."""
    base = _tiers_off(settings)
    return base.with_overrides(
        microcompact_idle_seconds=0.0,
        keep_recent_results=3,
        autocompact_pct=LEARN_CLAUDE_CODE_THRESHOLD / base.effective_window,
    )


def _summary_only(settings: Settings) -> Settings:
    return _tiers_off(settings).with_overrides(autocompact_pct=0.85)


def _mini_claude(settings: Settings) -> Settings:
    return settings


STRATEGIES: tuple[Strategy, ...] = (
    Strategy("none", "no compaction",
             "every tier off and no summary: the history only grows", _no_compaction),
    Strategy("learn", "learn-claude-code",
             "all but the last 3 tool results become placeholders before every call; a full "
             "summary above 50,000 tokens", _learn_claude_code),
    Strategy("summary", "summary only", "a full summary at 85% of the window, nothing else",
             _summary_only),
    Strategy("mini", "mini-claude",
             "the full pipeline with default settings (persist, budget, snip, microcompact, "
             "auto-compact)", _mini_claude, ours=True),
)


def _without(**changes: object) -> Callable[[Settings], Settings]:
    def configure(settings: Settings) -> Settings:
        return settings.with_overrides(**changes)

    return configure


ABLATIONS: tuple[Strategy, ...] = (
    Strategy("mini-no-persist", "mini-claude without persist",
             "large results stay in context whole", _without(persist_threshold_bytes=HUGE_BYTES),
             ablation=True),
    Strategy("mini-no-budget", "mini-claude without budget", "no head-and-tail trimming",
             _without(budget_low_pct=UNREACHABLE_PCT, budget_high_pct=UNREACHABLE_PCT),
             ablation=True),
    Strategy("mini-no-snip", "mini-claude without snip", "stale results are never cleared",
             _without(snip_pct=UNREACHABLE_PCT), ablation=True),
    Strategy("mini-no-micro", "mini-claude without microcompact",
             "idle gaps clear nothing", _without(microcompact_idle_seconds=NEVER_SECONDS),
             ablation=True),
)


def strategy_named(key: str) -> Strategy:
    for strategy in (*STRATEGIES, *ABLATIONS):
        if strategy.key == key:
            return strategy
    raise KeyError(key)
