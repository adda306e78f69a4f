"""What a transcript record must look like before it is replayed.

Transcripts are plain files: a hand edit, a crash mid-write or another program can
leave a record that parses as JSON but holds the wrong shapes (a tool input that is
a string, a result whose content is a number, a role that is a number, nesting ten
thousand deep). Each record is checked here before replay; one that fails is
skipped and counted, so ``--continue`` always gets a history the APIs accept.
"""

from __future__ import annotations

import json
import re
from dataclasses import MISSING, fields
from enum import IntEnum
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

from mini_claude.conversation import BLOCK_TYPES

MAX_RECORD_DEPTH = 200  # a message nests a few levels; tool inputs are bounded at 100
ROLES = ("user", "assistant")

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")

JsonTypes = tuple[type, ...]


def _json_types(hint: Any) -> JsonTypes:
    """The JSON value types a field of this Python type is written as."""
    if isinstance(hint, type) and issubclass(hint, IntEnum):
        return (int,)
    origin = get_origin(hint)
    if origin in (Union, UnionType):
        return tuple(t for arg in get_args(hint) for t in _json_types(arg))
    if origin is not None:
        return (origin,)  # dict[str, Any] -> dict, list[...] -> list
    if hint is type(None) or hint is None:
        return (type(None),)
    if isinstance(hint, type):
        return (hint,)
    raise TypeError(f"a block field of type {hint!r} has no JSON form")


def _fields_of(cls: type[Any]) -> dict[str, JsonTypes]:
    hints = get_type_hints(cls)
    return {f.name: _json_types(hints[f.name]) for f in fields(cls) if f.name != "kind"}


def _required_of(cls: type[Any]) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls) if f.name != "kind"
                 and f.default is MISSING and f.default_factory is MISSING)


# Each block kind: its fields and the JSON types they may hold, and the fields it must have;
# read off the block dataclasses, the same ones the transcript is written from.
BLOCK_FIELDS: dict[str, dict[str, JsonTypes]] = {
    kind: _fields_of(cls) for kind, cls in BLOCK_TYPES.items()}
REQUIRED: dict[str, tuple[str, ...]] = {
    kind: _required_of(cls) for kind, cls in BLOCK_TYPES.items()}


class DamagedRecord(ValueError):
    """A record that cannot be replayed; the message says why, in a few words."""


def nesting_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON text (strings skipped)."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub("", text)):
        if match.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(depth - 1, 0)
    return deepest


def check_line(line: str) -> None:
    """Refuse a line nested too deep to parse safely."""
    if nesting_depth(line) > MAX_RECORD_DEPTH:
        raise DamagedRecord(f"nested more than {MAX_RECORD_DEPTH} levels")


def check_record(record: Any) -> dict[str, Any]:
    if not isinstance(record, dict) or not isinstance(record.get("type"), str):
        raise DamagedRecord("not a record object with a type")
    return record


def check_message(data: Any) -> dict[str, Any]:
    """``data`` when it is a message of a known role whose blocks all check."""
    if not isinstance(data, dict):
        raise DamagedRecord("a message that is not an object")
    if data.get("role") not in ROLES:
        raise DamagedRecord(f"a message role {data.get('role')!r} that is not user or assistant")
    blocks = data.get("blocks")
    if not isinstance(blocks, list):
        raise DamagedRecord("message blocks that are not a list")
    for block in blocks:
        check_block(block)
    return data


def check_block(data: Any) -> dict[str, Any]:
    """``data`` when it is a block of a known kind with fields of the right types."""
    if not isinstance(data, dict):
        raise DamagedRecord("a block that is not an object")
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in BLOCK_FIELDS:
        raise DamagedRecord(f"a block of unknown kind {kind!r}")
    fields = BLOCK_FIELDS[kind]
    for name in REQUIRED[kind]:
        if name not in data:
            raise DamagedRecord(f"a {kind} block without {name!r}")
    for name, value in data.items():
        if name == "kind":
            continue
        allowed = fields.get(name)
        if allowed is None:
            raise DamagedRecord(f"a {kind} block with an unknown field {name!r}")
        if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
            raise DamagedRecord(f"a {kind} block whose {name!r} is {type(value).__name__}")
    return data


def read_record(line: str) -> dict[str, Any] | None:
    """One line as a record object, or None when it is not one (never raises)."""
    try:
        check_line(line)
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
