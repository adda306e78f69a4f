"""Emoji joined with a zero-width joiner (👩‍💻) shown as their parts in the input box.

prompt_toolkit lays out one code point per cell group: 👩 (2) + ZWJ (0) + 💻 (2) is four
cells, while a terminal that joins the sequence draws one glyph two cells wide. The rest
of the line then sits two cells left of where prompt_toolkit thinks it is: gaps when a
line wraps, and a cursor in the wrong place. Shown without the joiner, the parts are
drawn as the layout counts them. Only the display changes: the text sent keeps its ZWJ.
"""

from __future__ import annotations

from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.layout.processors import Processor, Transformation, TransformationInput

ZERO_WIDTH_JOINER = "\u200d"
ZERO_WIDTH_SPACE = "\u200b"  # zero width too, so every position maps to itself


def unjoined(fragments: StyleAndTextTuples) -> StyleAndTextTuples:
    """The fragments with each joiner replaced by a character that joins nothing."""
    shown: StyleAndTextTuples = []
    for fragment in fragments:
        text = fragment[1].replace(ZERO_WIDTH_JOINER, ZERO_WIDTH_SPACE)
        if len(fragment) == 3:
            shown.append((fragment[0], text, fragment[2]))
        else:
            shown.append((fragment[0], text))
    return shown


class ShowJoinedEmojiApart(Processor):
    """The input box's processor for :func:`unjoined` (positions are unchanged)."""

    def apply_transformation(self, transformation_input: TransformationInput) -> Transformation:
        return Transformation(unjoined(transformation_input.fragments))
