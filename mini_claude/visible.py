"""Text from a model, a tool, a file or a project, made safe to show on a terminal.

A terminal obeys what it is sent: ``ESC[2K`` erases the line a permission box just
drew, ``ESC]0;…BEL`` sets the window title, a bidi override shows ``txt.exe`` as
``exe.txt``. Shown text therefore never carries a control character: each one is
replaced by a visible stand-in, so the user sees that it is there and what it is.

- C0 controls (but newline and tab) and DEL become their Unicode control pictures
  (ESC shows as ``␛``, BEL as ``␇``, a lone CR as ``␍``);
- C1 controls (U+0080..U+009F, e.g. the one-byte CSI U+009B) become ``<U+009B>``;
- bidi embeddings, overrides, isolates and marks, line and paragraph separators and
  other invisible format characters become ``<U+202E>`` and the like.

Every renderer uses :func:`visible` (the REPL's console does it for everything it
prints, see ``ui/screen_guard.py``); print mode uses it for what goes to a terminal.
"""

from __future__ import annotations

import re

_CONTROL_PICTURE_BASE = 0x2400
_DEL_PICTURE = "\u2421"

# Invisible characters that reorder or hide text (ZWJ U+200D stays: emoji need it).
_FORMAT = (
    "\u061c\u200b\u200c\u200e\u200f\u2028\u2029"
    "\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064"
    "\u2066\u2067\u2068\u2069\u206a\u206b\u206c\u206d\u206e\u206f\ufeff\ufff9\ufffa\ufffb"
)
_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f{_FORMAT}]")
_UNSAFE_ONE_LINE = re.compile(f"[\x00-\x1f\x7f\x80-\x9f{_FORMAT}]")


def _stand_in(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if code < 0x20:
        return chr(_CONTROL_PICTURE_BASE + code)
    if code == 0x7F:
        return _DEL_PICTURE
    return f"<U+{code:04X}>"


def visible(text: str, *, one_line: bool = False) -> str:
    """``text`` with every control and invisible format character shown as a stand-in.

    Newlines and tabs are kept (``one_line`` shows them too); CRLF is a newline.
    """
    if text.isprintable() and not one_line:
        return text
    if "\r\n" in text and not one_line:
        text = text.replace("\r\n", "\n")
    pattern = _UNSAFE_ONE_LINE if one_line else _UNSAFE
    return pattern.sub(_stand_in, text)


def has_hidden(text: str) -> bool:
    """True when :func:`visible` would change ``text`` (newlines and tabs aside)."""
    return _UNSAFE.search(text) is not None
