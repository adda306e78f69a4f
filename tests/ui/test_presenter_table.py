"""The presenter shows every event type the agent emits: its table misses none."""

from __future__ import annotations

from typing import get_args

from mini_claude import events as ev
from mini_claude.ui.presenter import _HANDLERS


def test_every_event_type_has_a_handler() -> None:
    assert set(_HANDLERS) == set(get_args(ev.Event))
