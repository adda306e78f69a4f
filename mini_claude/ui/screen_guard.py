"""Nothing printed through the REPL's console can drive the terminal.

Rich keeps ESC in text (it drops BEL, which leaves an OSC sequence open), so a file, a
command or a model reply could erase a line, move the cursor or set the window title.
A render hook sits on the console: every segment of text passes through
:func:`mini_claude.visible.visible` on its way out, while rich's own control segments
(cursor moves of the live view) and styles are left alone. One place, every renderer:
permission boxes, approval panels, tool lines, todo lists, thinking, and text.

A stand-in is wider than what it stands for (ESC measures 0 cells, ``␛`` 1, a C1
control's ``<U+009B>`` 8), so text is shown as it will be displayed *before* rich
lays it out: a panel's right border stays where the widest line ends. Only what
that first pass cannot reach is replaced after layout.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from rich.console import (
    Console,
    ConsoleOptions,
    ConsoleRenderable,
    RenderableType,
    RenderHook,
    RenderResult,
)
from rich.segment import Segment
from rich.text import Span, Text

from mini_claude.visible import has_hidden, visible

# Objects whose attributes may hold text to show: rich's renderables and ours.
_WALKED_MODULES = ("rich.", "mini_claude.")


class _Visible:
    """A renderable whose text segments show control characters as stand-ins."""

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        segments = list(console.render(self.inner, options))
        if any(not s.control and has_hidden(s.text) for s in segments):
            shown = shown_as_displayed(self.inner)
            if shown is not None:
                segments = list(console.render(shown, options))
        for segment in segments:
            if segment.control or not has_hidden(segment.text):
                yield segment
            else:
                yield Segment(visible(segment.text), segment.style)


def shown_as_displayed(renderable: RenderableType) -> RenderableType | None:
    """A copy of ``renderable`` whose text holds the stand-ins already, so rich measures
    what the terminal will show; None when it cannot be copied."""
    try:
        shown = copy.deepcopy(renderable)
    except Exception:  # a renderable holding a lock or a stream: replaced after layout
        return None
    if isinstance(shown, str):
        return visible(shown)
    _show(shown, set())
    return shown


def _show(node: Any, seen: set[int]) -> Any:
    """``node`` with its text made visible: strings replaced, the rest changed in place."""
    if isinstance(node, str):
        return visible(node)
    if id(node) in seen:
        return node
    seen.add(id(node))
    if isinstance(node, Text):
        _show_text(node)
    elif isinstance(node, list):
        node[:] = [_show(item, seen) for item in node]
    elif isinstance(node, tuple):
        return tuple(_show(item, seen) for item in node)
    elif isinstance(node, dict):
        for key, value in node.items():
            node[key] = _show(value, seen)
    elif type(node).__module__.startswith(_WALKED_MODULES):
        for name in _attribute_names(node):
            value = getattr(node, name, None)
            shown = _show(value, seen)
            if shown is not value:  # read-only: what it holds is replaced after layout
                with contextlib.suppress(AttributeError, TypeError):
                    setattr(node, name, shown)
    return node


def _attribute_names(node: Any) -> list[str]:
    names = list(getattr(node, "__dict__", {}))
    for cls in type(node).__mro__:
        names += [n for n in getattr(cls, "__slots__", ()) if isinstance(n, str)]
    return names


def _show_text(text: Text) -> None:
    """A Text with its stand-ins in place, its styles kept on the same characters."""
    plain = text.plain
    if not has_hidden(plain):
        return
    pieces: list[str] = []
    offsets = [0]
    for char in plain:
        shown = visible(char)
        pieces.append(shown)
        offsets.append(offsets[-1] + len(shown))
    last = len(plain)
    spans = [Span(offsets[min(s.start, last)], offsets[min(s.end, last)], s.style)
             for s in text.spans]
    text.plain = "".join(pieces)
    text.spans = spans


class VisibleControls(RenderHook):
    """The render hook: wraps whatever is printed."""

    def process_renderables(
        self, renderables: list[ConsoleRenderable]
    ) -> list[ConsoleRenderable]:
        return [r if isinstance(r, _Visible) else _Visible(r) for r in renderables]


def guard_console(console: Console) -> Console:
    """Put the hook on ``console`` once; returns it."""
    if not getattr(console, "_mini_claude_guarded", False):
        console.push_render_hook(VisibleControls())
        console._mini_claude_guarded = True  # type: ignore[attr-defined]
    return console
