"""The bottom status line: how full the context is, what it costs, what the agent is doing.

The same text is drawn under the input prompt and under the live turn view,
so the numbers never change meaning between the two. Every number comes from
``agent.status()``, the reading the auto-compact trigger uses too.
"""

from __future__ import annotations

from typing import Literal

from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.styles import Style

from mini_claude.pricing import CostTracker
from mini_claude.protocol import ContextStatus
from mini_claude.text import format_tokens

Pressure = Literal["calm", "steady", "warning", "alert"]

CALM_BELOW = 0.50
WARNING_FROM = 0.70
ALERT_FROM = 0.85
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
    """Colour band for a utilization; the alert band starts where auto-compact fires by default."""
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
    remaining = status.until_autocompact
    if remaining is None:
        return "auto-compact off"
    if remaining == 0:
        return "auto-compact due"
    return f"auto-compact in {short_tokens(remaining)}"


def percent(utilization: float) -> str:
    return f"{utilization * 100:.0f}%"


def status_fragments(
    status: ContextStatus, costs: CostTracker, model: str, activity: str | None
) -> StyleAndTextTuples:
    """The status line as prompt_toolkit fragments (plain text plus style classes)."""
    band = pressure(status.utilization)
    sep = ("class:status.sep", " · ")
    fragments: StyleAndTextTuples = [
        ("class:status", " context "),
        (f"class:status.{band}", f"{percent(status.utilization)} {meter_bar(status.utilization)}"),
        ("class:status", f" {short_tokens(status.tokens)}/{short_tokens(status.effective_window)}"),
        sep,
        ("class:status", autocompact_label(status)),
        sep,
        ("class:status", cost_label(costs)),
        sep,
        ("class:status", model),
    ]
    if activity:
        fragments += [sep, ("class:status.activity", activity)]
    return fragments


def status_text(status: ContextStatus, costs: CostTracker, model: str, activity: str | None) -> str:
    """The status line as plain text (for logs and tests)."""
    return "".join(text for _style, text, *_ in status_fragments(status, costs, model, activity))
