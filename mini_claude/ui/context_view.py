"""`/context`: what fills the context window, in parts that add up to the meter's reading.

Parts are measured in characters (what the conversation knows exactly) and
then scaled so that they sum to ``agent.status().tokens``, the estimate the
status bar and the auto-compact trigger use. The split between parts is
therefore proportional, the total is exact to the token.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from mini_claude.conversation import (
    Message,
    SummaryBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    block_chars,
)
from mini_claude.protocol import ContextStatus, ToolSpec
from mini_claude.text import format_tokens
from mini_claude.ui.statusbar import percent, pressure

BAR_WIDTH = 60
PART_COLOURS = (
    "bright_black", "magenta", "cyan", "blue", "bright_cyan",
    "yellow", "green", "bright_green", "bright_yellow", "bright_magenta", "bright_blue",
)
FREE_STYLE = "grey23"
RESERVE_STYLE = "grey39"
PRESSURE_STYLES = {"calm": "green", "steady": "cyan", "warning": "yellow", "alert": "bold red"}


@dataclass(frozen=True, slots=True)
class Part:
    label: str
    chars: int
    tokens: int = 0


@dataclass(frozen=True, slots=True)
class ContextBreakdown:
    parts: list[Part]  # what is in the prompt; tokens sum to status.tokens
    status: ContextStatus

    @property
    def total(self) -> int:
        return sum(p.tokens for p in self.parts)

    @property
    def free(self) -> int:
        return max(0, self.status.effective_window - self.status.tokens)

    @property
    def reserve(self) -> int:
        return self.status.window - self.status.effective_window


def measure_parts(system_prompt: str, tools: Sequence[ToolSpec],
                  messages: Iterable[Message]) -> list[Part]:
    """Characters per part, in the order the request sends them."""
    schemas = json.dumps([asdict(t) for t in tools], ensure_ascii=False)
    sizes: dict[str, int] = {"system prompt": len(system_prompt), "tool schemas": len(schemas)}
    for label, chars in _message_parts(messages):
        sizes[label] = sizes.get(label, 0) + chars
    return [Part(label, chars) for label, chars in sizes.items() if chars > 0]


def _message_parts(messages: Iterable[Message]) -> Iterable[tuple[str, int]]:
    for message in messages:
        for block in message.blocks:
            if isinstance(block, SummaryBlock):
                yield "summaries", block_chars(block)
            elif isinstance(block, ToolResultBlock):
                yield f"tool results: {block.tool_name or 'unknown'}", block_chars(block)
            elif isinstance(block, ToolUseBlock):
                yield "tool calls", block_chars(block)
            elif isinstance(block, TextBlock):
                who = "user messages" if message.role == "user" else "assistant text"
                yield who, block_chars(block)
            else:
                yield "thinking", block_chars(block)


def scale_to(parts: Sequence[Part], total_tokens: int) -> list[Part]:
    """Share ``total_tokens`` among parts by characters; the shares sum exactly to the total."""
    chars = sum(p.chars for p in parts)
    if chars <= 0 or total_tokens <= 0:
        return [Part(p.label, p.chars, 0) for p in parts]
    exact = [p.chars * total_tokens / chars for p in parts]
    tokens = [int(x) for x in exact]
    leftover = total_tokens - sum(tokens)
    by_remainder = sorted(range(len(parts)), key=lambda i: exact[i] - tokens[i], reverse=True)
    for i in by_remainder[:leftover]:
        tokens[i] += 1
    return [Part(p.label, p.chars, t) for p, t in zip(parts, tokens, strict=True)]


def breakdown(status: ContextStatus, system_prompt: str, tools: Sequence[ToolSpec],
              messages: Iterable[Message]) -> ContextBreakdown:
    parts = measure_parts(system_prompt, tools, messages)
    ordered = _fixed_first(scale_to(parts, status.tokens))
    return ContextBreakdown(ordered, status)


def _fixed_first(parts: list[Part]) -> list[Part]:
    """System prompt and schemas first, then the rest largest first."""
    fixed = [p for p in parts if p.label in ("system prompt", "tool schemas")]
    rest = sorted((p for p in parts if p not in fixed), key=lambda p: p.tokens, reverse=True)
    return fixed + rest


def segment_widths(amounts: Sequence[int], width: int) -> list[int]:
    """Cells per amount on a bar of ``width``; any non-zero amount gets at least one cell."""
    total = sum(amounts)
    if total <= 0:
        return [0 for _ in amounts]
    exact = [a * width / total for a in amounts]
    cells = [max(1, int(x)) if a > 0 else 0 for a, x in zip(amounts, exact, strict=True)]
    while sum(cells) > width:
        widest = max(range(len(cells)), key=lambda i: cells[i])
        cells[widest] -= 1
    order = sorted(range(len(cells)), key=lambda i: exact[i] - cells[i], reverse=True)
    for i in order[: width - sum(cells)]:
        cells[i] += 1
    return cells


def render_breakdown(view: ContextBreakdown, model: str,
                     loop_guard: str | None = None) -> RenderableType:
    """The bar, the table and how to read them; ``loop_guard`` is the guard's line, if any."""
    status = view.status
    band = pressure(status.utilization)
    colours = {p.label: PART_COLOURS[i % len(PART_COLOURS)] for i, p in enumerate(view.parts)}
    amounts = [p.tokens for p in view.parts] + [view.free, view.reserve]
    styles = [colours[p.label] for p in view.parts] + [FREE_STYLE, RESERVE_STYLE]
    bar = Text()
    for cells, style in zip(segment_widths(amounts, BAR_WIDTH), styles, strict=True):
        bar.append("█" * cells, style=style)

    headline = Text()
    headline.append("Context ", style="bold")
    if status.autocompact_at:
        headline.append(f"{percent(status.utilization)} of the way to auto-compact",
                        style=PRESSURE_STYLES[band])
        headline.append(f" · {status.tokens:,} of {status.autocompact_at:,} tokens · "
                        f"{percent(status.window_utilization)} of the "
                        f"{status.effective_window:,}-token effective window · {model}")
    else:
        headline.append(f"{percent(status.utilization)} used", style=PRESSURE_STYLES[band])
        headline.append(f" · {status.tokens:,} of {status.effective_window:,} tokens · {model}")

    table = Table(box=None, show_header=True, header_style="bold", padding=(0, 2, 0, 0))
    table.add_column("")
    table.add_column("part")
    table.add_column("tokens", justify="right")
    table.add_column("of window", justify="right")
    for part in view.parts:
        table.add_row(Text("█", style=colours[part.label]), part.label, f"{part.tokens:,}",
                      _share(part.tokens, status.window))
    table.add_row("", Text("in the prompt", style="bold"), Text(f"{view.total:,}", style="bold"),
                  _share(view.total, status.window))
    table.add_row(Text("█", style=FREE_STYLE), "free space", f"{view.free:,}",
                  _share(view.free, status.window))
    table.add_row(Text("█", style=RESERVE_STYLE), "output reserve", f"{view.reserve:,}",
                  _share(view.reserve, status.window))
    guard = [Text(loop_guard, style="yellow")] if loop_guard else []
    return Group(headline, bar, table, *guard, _explanation(view))


def _share(tokens: int, window: int) -> str:
    return f"{tokens / window * 100:.1f}%" if window else "-"


def _explanation(view: ContextBreakdown) -> Text:
    status = view.status
    anchor = ("anchored on the server's last token count" if status.anchored
              else "estimated from characters (no server count yet)")
    window = (f"effective window {status.effective_window:,} = {status.window:,} window − "
              f"{view.reserve:,} output reserve")
    if not status.autocompact_at:
        measure = f"The percentage is prompt tokens / {window}; auto-compact is off."
    else:
        hold = f" Now: {status.autocompact_hold}." if status.autocompact_hold else ""
        measure = (
            f"The percentage is prompt tokens / the auto-compact threshold "
            f"({status.autocompact_at:,} tokens, "
            f"{format_tokens(status.until_autocompact or 0)} from now): 100% means the next "
            f"summary is due ({window}).{hold}"
        )
    return Text(
        f"{measure} The status bar and the auto-compact trigger read the same number; {anchor}. "
        "Parts are shared out by characters.",
        style="dim",
    )
