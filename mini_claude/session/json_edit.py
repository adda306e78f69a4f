"""Adding to a JSON file the user also edits by hand, leaving the rest of its text as it was.

Re-serialising a settings file would reorder keys, change indentation and drop the
user's layout; instead the one list or object that changes is found by position and
the new text is spliced in, in the file's own indentation.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")


class JsonEditError(ValueError):
    """The text is not a JSON object, or the value at the path is not what was expected."""


@dataclass(frozen=True, slots=True)
class _Span:
    start: int
    end: int  # one past the value's last character


@dataclass(frozen=True, slots=True)
class _Member:
    key: str
    key_start: int
    value: _Span


def append_to_list(text: str, path: tuple[str, ...], item: Any) -> str:
    """``text`` with ``item`` appended to the list at ``path`` (objects and the list are
    created when missing); unchanged when the list already holds it."""
    json.loads(text)  # invalid JSON is refused before anything is spliced
    unit = _indent_unit(text)
    start = _skip(text, 0)
    if start >= len(text) or text[start] != "{":
        raise JsonEditError("the file does not hold a JSON object")
    span = _value(text, start)
    for depth, key in enumerate(path):
        members, close = _members(text, span)
        found = next((m for m in members if m.key == key), None)
        if found is None:
            rest: Any = [item]
            for inner in reversed(path[depth + 1:]):
                rest = {inner: rest}
            return _insert_member(text, span, members, close, key, rest, unit)
        span = found.value
        if depth < len(path) - 1 and text[span.start] != "{":
            raise JsonEditError(f'"{".".join(path[:depth + 1])}" is not an object')
    if text[span.start] != "[":
        raise JsonEditError(f'"{".".join(path)}" is not a list')
    if item in json.loads(text[span.start:span.end]):
        return text
    return _insert_item(text, span, item)


def _insert_item(text: str, span: _Span, item: Any) -> str:
    elements = _elements(text, span)
    rendered = json.dumps(item, ensure_ascii=False)
    if not elements:
        return text[:span.start] + f"[{rendered}]" + text[span.end:]
    last = elements[-1]
    before = elements[-2].end if len(elements) > 1 else span.start + 1
    gap = text[before:last.start].lstrip(",")
    return text[:last.end] + "," + gap + rendered + text[last.end:]


def _insert_member(text: str, span: _Span, members: list[_Member], close: int, key: str,
                   value: Any, unit: str) -> str:
    if members:
        last = members[-1]
        before = members[-2].value.end if len(members) > 1 else span.start + 1
        gap = text[before:last.key_start].lstrip(",")
        indent = gap.rsplit("\n", 1)[-1] if "\n" in gap else ""
        entry = _render_member(key, value, indent, unit if "\n" in gap else "")
        return text[:last.value.end] + "," + gap + entry + text[last.value.end:]
    outer = _line_indent(text, span.start)
    inner = outer + unit
    entry = _render_member(key, value, inner, unit)
    return text[:span.start] + "{\n" + inner + entry + "\n" + outer + "}" + text[close + 1:]


def _render_member(key: str, value: Any, indent: str, unit: str) -> str:
    if not unit:
        return f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}"
    rendered = json.dumps(value, ensure_ascii=False, indent=len(unit.expandtabs()))
    if "\t" in unit:
        rendered = re.sub(r"(?m)^( +)", lambda m: "\t" * (len(m.group(1)) // 8), rendered)
    lines = rendered.split("\n")
    return f"{json.dumps(key)}: " + "\n".join([lines[0], *(indent + line for line in lines[1:])])


def _indent_unit(text: str) -> str:
    """The file's indentation step (the first indented line's), two spaces by default."""
    found = re.search(r"\n([ \t]+)\S", text)
    return found.group(1) if found else "  "


def _line_indent(text: str, position: int) -> str:
    line_start = text.rfind("\n", 0, position) + 1
    match = re.match(r"[ \t]*", text[line_start:position])
    return match.group(0) if match else ""


# ---- a scanner that knows where each value is ------------------------------------------


def _skip(text: str, index: int) -> int:
    match = _WHITESPACE.match(text, index)
    return match.end() if match else index


def _value(text: str, index: int) -> _Span:
    char = text[index]
    if char == '"':
        _string, end = scanstring(text, index + 1)
        return _Span(index, end)
    if char == "{":
        _members_list, close = _members(text, _Span(index, index))
        return _Span(index, close + 1)
    if char == "[":
        return _Span(index, _list_close(text, index) + 1)
    match = _SCALAR.match(text, index)
    if match is None:
        raise JsonEditError(f"unexpected {char!r} at {index}")
    return _Span(index, match.end())


def _members(text: str, span: _Span) -> tuple[list[_Member], int]:
    """The members of the object starting at ``span.start``, and its closing brace."""
    members: list[_Member] = []
    index = _skip(text, span.start + 1)
    while text[index] != "}":
        key, after_key = scanstring(text, index + 1)
        colon = _skip(text, after_key)
        value = _value(text, _skip(text, colon + 1))
        members.append(_Member(key, index, value))
        index = _skip(text, value.end)
        if text[index] == ",":
            index = _skip(text, index + 1)
    return members, index


def _elements(text: str, span: _Span) -> list[_Span]:
    elements: list[_Span] = []
    index = _skip(text, span.start + 1)
    while text[index] != "]":
        element = _value(text, index)
        elements.append(element)
        index = _skip(text, element.end)
        if text[index] == ",":
            index = _skip(text, index + 1)
    return elements


def _list_close(text: str, start: int) -> int:
    elements = _elements(text, _Span(start, start))
    return _skip(text, elements[-1].end if elements else start + 1)
