"""The context strategies compared: one agent, four sets of settings.

Each strategy is expressed only through :class:`Settings`, so every row of the
table runs the same tiers; a strategy switches tiers off by moving their
thresholds out of reach.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from mini_claude.settings import Settings

UNREACHABLE_PCT = 9.9  # a utilization no prompt ever reaches
NEVER_SECONDS = 10.0**9
HUGE_BYTES = 1 << 40
HUGE_TOKENS = 1 << 40
LEARN_CLAUDE_CODE_THRESHOLD = 50_000
CLAUDE_CODE_MAX_OUTPUT = 20_000  # min(the model's max output, 20K) for Sonnet-class models
CLAUDE_CODE_BUFFER = 13_000
CLAUDE_CODE_PERSIST_CHARS = 50_000
CLAUDE_CODE_IDLE_SECONDS = 3_600.0
# Codex keeps about 10K bytes of each tool output for models other than its own; its
# documented tool_output_token_limit replaces that with 4 bytes a token (codex-rs truncate.rs).
# The outputs here are ASCII, so bytes are characters.
CODEX_TRUNCATE_CHARS = 10_000
CODEX_BYTES_PER_TOKEN = 4
SERVER_COMPACTION_DEFAULT_TRIGGER = 150_000
SERVER_COMPACTION_MIN_TRIGGER = 50_000
# The best of the API's documented settings for this workload, found by `mini-claude bench
# --tune-peers` on the tuning sessions only (bench/sessions.py; docs/bench/tuning.md): the
# cheapest that meets the quality bar (bench/tuning.py), the trigger searched from its 50K
# minimum, with and without clear_tool_uses.
SERVER_COMPACTION_TRIGGER = 50_000
SERVER_CLEAR_TOOL_USES = False
CLEAR_TOOL_USES_KEEP = 3  # clear_tool_uses_20250919 keeps the newest 3 tool uses by default
CLAUDE_CODE_FLOOR_WINDOW = 100_000  # CLAUDE_CODE_AUTO_COMPACT_WINDOW cannot go below it
# Found the same way: Claude Code's CLAUDE_CODE_AUTO_COMPACT_WINDOW (None: unset), the
# cheapest that meets the quality bar (bench/tuning.py) on the tuning sessions.
CLAUDE_CODE_AUTO_COMPACT_WINDOW: int | None = 100_000
# Codex's model_auto_compact_token_limit (None: unset, 90% of the window) with its
# tool_output_token_limit (None: unset, its 10K bytes), by the window searched: at 200K the
# cheapest that meets the bar (a 50K limit costs less but loses 7% of the needed facts on a
# tuning session); at 32K none meets it and this loses least. A window between takes the
# setting of the nearer one searched.
CODEX_BEST: dict[int, tuple[int | None, int | None]] = {
    200_000: (100_000, 5_000),
    32_000: (None, 5_000),
}
# tool_output_token_limit as a user would try it: unset (10K bytes), and values its users set.
CODEX_TOOL_OUTPUT_CANDIDATES: tuple[int | None, ...] = (None, 5_000, 8_000, 12_000)
SERVER_FLOOR_WINDOW = 64_000  # the 50K minimum trigger plus an output reserve


@dataclass(frozen=True, slots=True)
class Strategy:
    key: str
    title: str
    description: str
    configure: Callable[[Settings], Settings]
    ours: bool = False
    ablation: bool = False  # a variant of ours with one tier off: explains, is not judged
    # The product's own summary prompt (a template of bench/prompts/); None: the agent's own.
    summary_prompt: str | None = None
    # The smallest window the real product can run this policy at; None: not a product.
    real_from_window: int | None = None


def _tiers_off(settings: Settings) -> Settings:
    """Only a summary is left: no cheap tier, and none of our own departures from the plain
    tiers (summarizing after an idle gap, clearing before a second summary in one turn,
    asking the summary for every path and command, the ledger; the runner also leaves out
    search_history)."""
    return settings.with_overrides(
        budget_low_pct=UNREACHABLE_PCT,
        budget_high_pct=UNREACHABLE_PCT,
        snip_pct=UNREACHABLE_PCT,
        microcompact_idle_seconds=NEVER_SECONDS,
        persist_threshold_bytes=HUGE_BYTES,
        idle_compact_min_tokens=HUGE_TOKENS,
        summary_min_work=0,
        summary_keep_pointers=False,
        ledger_tokens=0,
        session_memory=False,
        # our own defaults that a peer's published policy does not have
        autocompact_max_tokens=HUGE_TOKENS,
        post_compact_target_pct=0.30,
        post_compact_threshold_share=1.0,
        relief_max_tokens=HUGE_TOKENS,  # their cheap tiers act wherever their policy says
        read_page_window_share=0.0,  # reads as before: big ones saved like any output
        compact_spares_unread=False,  # a summary cuts the newest results like the rest
        cache_keepalive_pings=0,  # none of them reads its cache again while the user is away
    )


def _summary_alone(settings: Settings) -> Settings:
    """Everything before the summary is dropped: no kept tail, no user text, no file."""
    return settings.with_overrides(compact_tail_share=0.0, kept_user_tokens=0,
                                   reattach_max_files=0)


def _pct_of_effective(settings: Settings, tokens: float) -> float:
    return min(1.0, tokens / settings.effective_window)


def _claude_code(settings: Settings) -> Settings:
    """Claude Code: summary at window - min(max output, 20K) - 13K, 5 files re-attached.

    With its auto-compact window at 100K that is 67K (where the real CLI compacted). Below
    the 100K it can be set to, the formula goes negative, so the extrapolation caps the
    output share at a quarter of the window and scales the 13K buffer by the window
    (32K - 8K - 2.1K = 21.9K, 68%). Results over 50,000 characters are saved to
    a file with a 2 KB preview; old results are cleared only after an hour idle,
    keeping the last 5 (the prompt cache's longest life). The summary replaces
    the whole history (no tail, no verbatim user messages).
    """
    return claude_code_with(CLAUDE_CODE_AUTO_COMPACT_WINDOW)(settings)


def claude_code_with(auto_compact_window: int | None) -> Callable[[Settings], Settings]:
    """Claude Code with CLAUDE_CODE_AUTO_COMPACT_WINDOW set: its threshold formula applied to
    that window. Unset, the CLI (2.1.332, measured in ``real_claude``) does not enforce its
    threshold on its model's own window: it sends requests until the API refuses one as too
    long and compacts then (its auto-compact state calls this reactive), so the model
    compacts only when the next request would not fit the window."""

    def configure(settings: Settings) -> Settings:
        if auto_compact_window is None:
            return _claude_code_at(settings, settings.window, reactive=True)
        return _claude_code_at(settings, min(settings.window, auto_compact_window))

    return configure


def _claude_code_threshold(window: int) -> float:
    """Where Claude Code summarizes on ``window``; the buffer is scaled only below the
    smallest window the CLI runs at (an extrapolation)."""
    buffer = (CLAUDE_CODE_BUFFER if window >= CLAUDE_CODE_FLOOR_WINDOW
              else CLAUDE_CODE_BUFFER * window / 200_000)
    return window - min(CLAUDE_CODE_MAX_OUTPUT, window // 4) - buffer


def _claude_code_at(settings: Settings, window: int, *, reactive: bool = False) -> Settings:
    base = _tiers_off(settings).with_overrides(
        persist_threshold_bytes=CLAUDE_CODE_PERSIST_CHARS,
        microcompact_idle_seconds=CLAUDE_CODE_IDLE_SECONDS,
        keep_recent_results=5,
        reattach_max_files=5,
        reattach_file_tokens=5_000,
        reattach_total_tokens=50_000,
    )
    # reactive: no threshold; the agent compacts only where the request would not fit
    autocompact_pct = (UNREACHABLE_PCT if reactive
                       else _pct_of_effective(base, _claude_code_threshold(window)))
    return base.with_overrides(compact_tail_share=0.0, kept_user_tokens=0,
                               autocompact_pct=autocompact_pct)


def _mini_late(settings: Settings) -> Settings:
    """Ours with the threshold uncapped (85% of the window): the trade-off on a 1M window."""
    return settings.with_overrides(autocompact_max_tokens=HUGE_TOKENS)


def _codex(settings: Settings) -> Settings:
    return codex_with(*codex_best_for(settings.window))(settings)


def codex_best_for(window: int) -> tuple[int | None, int | None]:
    """Codex's tuned (token limit, tool output limit) for the searched window nearest this one
    (by ratio: 100K is nearer 200K than 32K)."""
    nearest = min(CODEX_BEST, key=lambda searched: abs(math.log(window / searched)))
    return CODEX_BEST[nearest]


def codex_with(token_limit: int | None,
               tool_output_tokens: int | None = None) -> Callable[[Settings], Settings]:
    """Codex CLI with model_auto_compact_token_limit set (None: unset, 90% of the window) and
    tool_output_token_limit set (None: unset, 10K bytes of each output)."""

    def configure(settings: Settings) -> Settings:
        return _codex_at(settings, token_limit, tool_output_tokens)

    return configure


def codex_output_chars(tool_output_tokens: int | None) -> int:
    """How much of each tool output Codex keeps for a model other than its own."""
    if tool_output_tokens is None:
        return CODEX_TRUNCATE_CHARS
    return tool_output_tokens * CODEX_BYTES_PER_TOKEN


def _codex_at(settings: Settings, token_limit: int | None,
              tool_output_tokens: int | None) -> Settings:
    """Codex CLI: a handoff summary at 90% of the window, checked after every call; beside it
    up to 20K tokens of the user's own messages and nothing else; results cut when recorded
    (10K bytes for models other than its own unless tool_output_token_limit says otherwise)."""
    base = _summary_alone(_tiers_off(settings)).with_overrides(
        output_reserve=settings.window // 10,
        truncate_chars=codex_output_chars(tool_output_tokens),
        kept_user_tokens=20_000,
    )
    limit = 0.9 * base.window if token_limit is None else min(token_limit, 0.9 * base.window)
    return base.with_overrides(autocompact_pct=_pct_of_effective(base, limit))


def server_compaction(trigger: int, clear_tool_uses: bool) -> Callable[[Settings], Settings]:
    """Server-side compact_20260112 at ``trigger`` input tokens (scaled down with a window too
    small for it, which no real deployment can do), a summary by the same model, billed as an
    extra call, everything before it dropped; with ``clear_tool_uses`` also the API's
    clear_tool_uses_20250919, modelled as all but the newest 3 results cleared before a call."""

    def configure(settings: Settings) -> Settings:
        base = _summary_alone(_tiers_off(settings))
        scaled = min(trigger, int(0.75 * base.window))
        base = base.with_overrides(autocompact_pct=_pct_of_effective(base, scaled))
        if clear_tool_uses:
            base = base.with_overrides(microcompact_idle_seconds=0.0,
                                       keep_recent_results=CLEAR_TOOL_USES_KEEP)
        return base

    return configure


_anthropic_compaction = server_compaction(SERVER_COMPACTION_TRIGGER, SERVER_CLEAR_TOOL_USES)


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
             "summary above 50,000 tokens", _learn_claude_code,
             summary_prompt="learn_claude_code"),
    Strategy("summary", "summary only", "a full summary at 85% of the window, nothing else",
             _summary_only),
    Strategy("claude-code", "Claude Code",
             "Claude Code's published policy at its best setting here "
             "(CLAUDE_CODE_AUTO_COMPACT_WINDOW=100000): summary at 100K - 20K - 13K = 67K, 5 "
             "files re-attached, results over 50,000 chars saved with a preview, old results "
             "cleared only after an hour idle (the cheapest setting that meets the quality bar on "
             "the tuning sessions)", _claude_code, summary_prompt="claude_code",
             real_from_window=CLAUDE_CODE_FLOOR_WINDOW),
    Strategy("codex", "Codex CLI",
             "Codex CLI's published policy at its best setting here (at 200K "
             "model_auto_compact_token_limit=100000 and tool_output_token_limit=5000, the cheapest "
             "that meets the quality bar on the tuning sessions; at 32K the limit unset, 90% of "
             "the window, and tool_output_token_limit=5000, which loses least there): a "
             "handoff summary, checked after every call, plus up to 20K tokens of the user's "
             "own messages; results cut when recorded", _codex, summary_prompt="codex",
             real_from_window=8_000),
    Strategy("server", "Anthropic compaction",
             f"server-side compact_20260112: a summary by the same model at "
             f"{SERVER_COMPACTION_TRIGGER:,} input tokens (75% of the window below that), "
             f"everything before it dropped"
             + ("; clear_tool_uses keeping 3" if SERVER_CLEAR_TOOL_USES else ""),
             _anthropic_compaction, summary_prompt="anthropic_api",
             real_from_window=SERVER_FLOOR_WINDOW),
    Strategy("mini", "mini-claude",
             "the full pipeline with default settings (persist, budget, snip, microcompact, "
             "session notes, auto-compact) and keep-alive pings while the user is away",
             _mini_claude, ours=True),
)


def _without(**changes: object) -> Callable[[Settings], Settings]:
    def configure(settings: Settings) -> Settings:
        return settings.with_overrides(**changes)

    return configure


# Compared on a 1M window only: the capped threshold against a late one.
LATE_THRESHOLD = Strategy("mini-late", "mini-claude, threshold uncapped",
                          "the full pipeline with the summary threshold at 85% of the window "
                          f"instead of capped at {Settings().autocompact_max_tokens // 1000}K",
                          _mini_late, ablation=True)

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
    Strategy("mini-no-keepalive", "mini-claude without keep-alive pings",
             "the cache expires while the user is away",
             _without(cache_keepalive_pings=0), ablation=True),
    Strategy("mini-thinking", "mini-claude with thinking",
             "extended thinking on (2,048-token budget): thinking blocks sent back intact, no "
             "history edit inside a tool loop with thinking, earlier turns' thinking cleared",
             _without(thinking_tokens=2_048), ablation=True),
)


def strategy_named(key: str) -> Strategy:
    for strategy in (*STRATEGIES, *ABLATIONS, LATE_THRESHOLD):
        if strategy.key == key:
            return strategy
    raise KeyError(key)


def _variant(key: str, label: str, configure: Callable[[Settings], Settings]) -> Strategy:
    base = strategy_named(key)
    return replace(base, title=f"{base.title} ({label})", configure=configure)


def peer_candidates() -> dict[str, list[Strategy]]:
    """Each real product's documented settings for this workload, as a user tuning it would
    try them: what `mini-claude bench --tune-peers` plays on the tuning sessions."""
    server = [_variant("server", f"trigger {t // 1000}K" + (", clear_tool_uses" if c else ""),
                       server_compaction(t, c))
              for t, c in ((50_000, False), (72_000, False), (100_000, False), (150_000, False),
                           (50_000, True))]
    claude = [_variant("claude-code", f"auto-compact window {w // 1000}K" if w else "default",
                       claude_code_with(w)) for w in (None, 100_000)]
    codex = [_variant("codex", _codex_label(t, o), codex_with(t, o))
             for t in (None, 50_000, 100_000) for o in CODEX_TOOL_OUTPUT_CANDIDATES]
    return {"server": server, "claude-code": claude, "codex": codex}


# mini-claude's own summary thresholds for `mini-claude bench --frontier`, each with old
# results cleared inside a turn (relief) at that threshold too, on both sides of the default.
FRONTIER_THRESHOLDS = (60_000, 48_000, 40_000, 32_000, 20_000)
# The default until the rebuild kept unread results whole: 60K, no clearing inside a turn.
PREVIOUS_THRESHOLD = 60_000


def own_candidates() -> list[Strategy]:
    """mini-claude's defaults, the previous default, and other thresholds with clearing
    inside a turn: where the cost goal and the quality bar part."""
    others = [_variant("mini", f"threshold {cap // 1000}K, clearing inside a turn",
                       _without(autocompact_max_tokens=cap, relief_max_tokens=cap))
              for cap in FRONTIER_THRESHOLDS]
    previous = _variant("mini", f"threshold {PREVIOUS_THRESHOLD // 1000}K, no clearing inside a "
                        "turn (the previous default)",
                        _without(autocompact_max_tokens=PREVIOUS_THRESHOLD))
    return [_variant("mini", "defaults", _mini_claude), previous, *others]


def _codex_label(token_limit: int | None, tool_output_tokens: int | None) -> str:
    if token_limit is None and tool_output_tokens is None:
        return "default"
    parts = [f"token limit {token_limit // 1000}K"] if token_limit else []
    if tool_output_tokens is not None:
        parts.append(f"tool output {tool_output_tokens:,} tokens")
    return ", ".join(parts)
