"""The bottom status line: how full the context is, what it costs, what the agent is doing.

The same text is drawn under the input prompt and under the live turn view,
so the numbers never change meaning between the two. Every number comes from
``agent.status()``, the reading the auto-compact trigger uses too. The percentage
and the bar measure the way to the compaction point: 100% means the next summary
is due (the window itself is shown beside it while there is room).
"""

from __future__ import annotations

from typing import Literal

from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.styles import Style
from prompt_toolkit.utils import get_cwidth

from mini_claude.permissions.mode_table import MODES
from mini_claude.pricing import CostTracker
from mini_claude.protocol import ContextStatus
from mini_claude.text import format_tokens

Pressure = Literal["calm", "steady", "warning", "alert"]

# Shares of the way to the compaction point.
CALM_BELOW = 0.50
WARNING_FROM = 0.75
ALERT_FROM = 0.90
METER_WIDTH = 10

# Shared by the prompt, the live turn view and the choice menus.
UI_STYLE = Style.from_dict(
    {
        "bottom-toolbar": "noreverse bg:#262626 #c0c0c0",
        "bottom-toolbar.text": "",
        "status": "#c0c0c0",
        "status.sep": "#6c6c6c",
        "status.calm": "#5fd75f bold",
        "status.steady": "#5fafd7 bold",
        "status.warning": "#ffd75f bold",
        "status.alert": "#ff5f5f bold",
        "status.activity": "#d787ff",
        "status.mode": "#5fd7ff bold",
        "status.mode.plan": "#5fafaf bold",
        "status.mode.bypass": "noreverse bg:#870000 #ffffff bold",
        "spinner": "#d787ff bold",
        "spinner.hint": "#808080",
        "tail": "",
        "prompt": "#d787ff bold",
        "choice.selected": "#5fd7ff bold",
        "choice.number": "#808080",
        "choice.hint": "#808080",
    }
)


def pressure(utilization: float) -> Pressure:
    """Colour band for a utilization; the alert band starts just before the summary is due."""
    if utilization >= ALERT_FROM:
        return "alert"
    if utilization >= WARNING_FROM:
        return "warning"
    if utilization >= CALM_BELOW:
        return "steady"
    return "calm"


def meter_bar(utilization: float, width: int = METER_WIDTH) -> str:
    """A bar of ``width`` cells, never fully empty once anything is used, full at 100% or above."""
    clamped = min(1.0, max(0.0, utilization))
    filled = round(clamped * width)
    if clamped > 0 and filled == 0:
        filled = 1
    return "█" * filled + "░" * (width - filled)


def short_tokens(n: int) -> str:
    """``180k`` rather than ``180.0k``: the status line has little room."""
    return format_tokens(n).replace(".0k", "k").replace(".0M", "M")


def format_money(dollars: float) -> str:
    if dollars < 0.01:
        return f"${dollars:.4f}"
    if dollars < 100:
        return f"${dollars:.2f}"
    return f"${dollars:,.0f}"


def cost_label(costs: CostTracker) -> str:
    """Session cost; models without a known price are counted in tokens only."""
    if not costs.priced:
        if costs.dollars == 0:
            return "price unknown"
        return f"{format_money(costs.dollars)}+ (some usage unpriced: price unknown)"
    return format_money(costs.dollars)


def autocompact_label(status: ContextStatus) -> str:
    if status.autocompact_hold:
        return status.autocompact_hold
    remaining = status.until_autocompact
    if remaining is None:
        return "auto-compact off"
    if remaining == 0:
        return "auto-compact due"
    return f"auto-compact in {short_tokens(remaining)} tokens"


def percent(utilization: float) -> str:
    return f"{utilization * 100:.0f}%"


def over_window_reason(status: ContextStatus, activity: str | None) -> str:
    """What happens to a reading above 100%; said next to the number, never a false promise."""
    if activity and activity.startswith("compacting"):
        return "compacting"
    if not status.autocompact_at:
        return "over the window"
    if status.autocompact_hold:
        return "/compact to summarize"
    if activity:
        return "trimmed before the next call"
    return "compacts on the next message"


def window_label(status: ContextStatus) -> str | None:
    """The model's window, when the percentage measures something smaller."""
    if not status.autocompact_at:
        return None
    return f"window {short_tokens(status.window)}"


# Fields of the status line, most important first: the narrowest terminal keeps the top.
_FIELD_ORDER = (
    "percent", "activity", "shells", "cost", "model", "autocompact", "tokens", "bar", "window"
)


def status_fragments(
    status: ContextStatus,
    costs: CostTracker,
    model: str,
    activity: str | None,
    width: int | None = None,
    mode: str = "",
    shells: str | None = None,
) -> StyleAndTextTuples:
    """The status line as prompt_toolkit fragments (plain text plus style classes).

    Whole fields are left out, least important first, until the line fits in
    ``width`` columns: a field is shown complete or not at all. The permission
    mode's marker (``mode``, empty in the default mode) is never left out.
    """
    band = pressure(status.utilization)
    reading = percent(status.utilization)
    if status.utilization > 1:
        reading += f" ({over_window_reason(status, activity)})"
    fields: dict[str, StyleAndTextTuples] = {
        "percent": [(f"class:status.{band}", reading)],
        "bar": [(f"class:status.{band}", meter_bar(status.utilization))],
        "tokens": [("class:status",
                    f"{short_tokens(status.tokens)}/{short_tokens(status.compaction_point)}")],
        "autocompact": [("class:status", autocompact_label(status))],
        "cost": [("class:status", cost_label(costs))],
        "model": [("class:status", model)],
    }
    window = window_label(status)
    if window is not None:
        fields["window"] = [("class:status", window)]
    if activity:
        fields["activity"] = [("class:status.activity", activity)]
    if shells:
        fields["shells"] = [("class:status.activity", shells)]
    shown = [name for name in _FIELD_ORDER if name in fields]
    marker = _mode_marker(mode)
    if width is not None and _width(marker + _layout(fields, shown[:1])) > width:
        marker = _mode_marker(_without_hint(mode))  # the mode stays, its key hint goes
    while width is not None and len(shown) > 1 and _width(marker + _layout(fields, shown)) > width:
        shown.pop()
    return marker + _layout(fields, shown)


def _without_hint(mode: str) -> str:
    """``⏵⏵ accept edits on (shift+tab to cycle)`` without its parenthesized key hint."""
    head, sep, _hint = mode.rpartition(" (")
    return head if sep and mode.endswith(")") else mode


def _mode_marker(mode: str) -> StyleAndTextTuples:
    """``⏸ plan mode on (shift+tab to cycle)``-style text before the context reading."""
    if not mode:
        return []
    style = next((row.style for row in MODES.values() if row.label and row.label in mode),
                 "class:status.mode")
    return [(style, f" {mode} "), ("class:status.sep", " ·")]


def _layout(fields: dict[str, StyleAndTextTuples], shown: list[str]) -> StyleAndTextTuples:
    """``context 40% ████░ 24k/60k · window 1M · auto-compact in … · $0.12 · model · activity``."""
    sep = ("class:status.sep", " · ")
    out: StyleAndTextTuples = [("class:status", " context ")]
    out += fields["percent"]
    for name in ("bar", "tokens"):
        if name in shown:
            out += [("class:status", " "), *fields[name]]
    for name in ("window", "autocompact", "cost", "model", "shells", "activity"):
        if name in shown:
            out += [sep, *fields[name]]
    return out


def _width(fragments: StyleAndTextTuples) -> int:
    return sum(get_cwidth(text) for _style, text, *_ in fragments)


def status_text(status: ContextStatus, costs: CostTracker, model: str, activity: str | None,
                width: int | None = None, mode: str = "") -> str:
    """The status line as plain text (for logs and tests)."""
    fragments = status_fragments(status, costs, model, activity, width, mode)
    return "".join(text for _style, text, *_ in fragments)
