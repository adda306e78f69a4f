"""Emoji joined with a ZWJ are drawn as their parts in the input box, and sent unchanged."""

from __future__ import annotations

from prompt_toolkit.buffer import Buffer
from prompt_toolkit.document import Document
from prompt_toolkit.layout.controls import BufferControl
from prompt_toolkit.layout.processors import TransformationInput
from prompt_toolkit.utils import get_cwidth

from mini_claude.ui.joined_emoji import ZERO_WIDTH_JOINER, ShowJoinedEmojiApart, unjoined

CODER = "\U0001f469\u200d\U0001f4bb"  # woman technologist: two emoji and a joiner


def test_the_joiner_is_not_drawn_and_every_position_stays_where_it_was() -> None:
    text = f"fix it {CODER} now"
    fragments = [("class:input", text), ("class:x", CODER, lambda event: None)]
    shown = unjoined(fragments)  # type: ignore[arg-type]
    assert [len(f[1]) for f in shown] == [len(str(f[1])) for f in fragments]
    assert all(ZERO_WIDTH_JOINER not in f[1] for f in shown)
    assert len(tuple(shown[1])) == 3  # a mouse handler is kept
    # The layout's width of the drawn text is what a terminal draws for two separate emoji.
    assert sum(get_cwidth(c) for c in shown[0][1]) == len("fix it  now") + 4


def test_the_processor_changes_only_what_is_shown() -> None:
    buffer = Buffer(document=Document(f"a{CODER}b"))
    control = BufferControl(buffer, input_processors=[ShowJoinedEmojiApart()])
    source = [("", buffer.text)]
    result = ShowJoinedEmojiApart().apply_transformation(TransformationInput(
        control, buffer.document, 0, lambda i: i, source, 80, 1))  # type: ignore[arg-type]
    assert ZERO_WIDTH_JOINER not in "".join(t for _, t, *_ in result.fragments)
    assert result.source_to_display(3) == 3 and result.display_to_source(3) == 3
    assert ZERO_WIDTH_JOINER in buffer.text  # the text itself is untouched
