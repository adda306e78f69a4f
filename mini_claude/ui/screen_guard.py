"""Nothing printed through the REPL's console can drive the terminal.

Rich keeps ESC in text (it drops BEL, which leaves an OSC sequence open), so a file, a
command or a model reply could erase a line, move the cursor or set the window title.
A render hook sits on the console: every segment of text passes through
:func:`mini_claude.visible.visible` on its way out, while rich's own control segments
(cursor moves of the live view) and styles are left alone. One place, every renderer:
permission boxes, approval panels, tool lines, todo lists, thinking, and text.
"""

from __future__ import annotations

from rich.console import (
    Console,
    ConsoleOptions,
    ConsoleRenderable,
    RenderableType,
    RenderHook,
    RenderResult,
)
from rich.segment import Segment

from mini_claude.visible import has_hidden, visible


class _Visible:
    """A renderable whose text segments show control characters as stand-ins."""

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for segment in console.render(self.inner, options):
            if segment.control or not has_hidden(segment.text):
                yield segment
            else:
                yield Segment(visible(segment.text), segment.style)


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
