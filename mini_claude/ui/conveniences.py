"""Completions users of other agents expect: `@path` and `/model <Tab>` (the `!command`
itself lives with the session, in ``session/user_shell.py``)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from mini_claude.models import alias_names, provider_row

if TYPE_CHECKING:  # the agent chain loads after the first prompt is drawn
    pass

MAX_PATH_COMPLETIONS = 50


class PathCompleter(Completer):
    """Completes the `@path` word under the cursor from the project's files."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def get_completions(self, document: Document,
                        complete_event: CompleteEvent) -> Iterable[Completion]:
        word = document.get_word_before_cursor(WORD=True)
        if not word.startswith("@"):
            return
        typed = word[1:]
        folder, _, prefix = typed.rpartition("/")
        base = self.root / folder if folder else self.root
        try:
            entries = sorted(os.scandir(base), key=lambda e: e.name)
        except OSError:
            return
        shown = 0
        for entry in entries:
            if entry.name.startswith(".") or not entry.name.startswith(prefix):
                continue
            path = f"{folder}/{entry.name}" if folder else entry.name
            suffix = "/" if entry.is_dir() else ""
            yield Completion("@" + path + suffix, start_position=-len(word),
                             display=entry.name + suffix)
            shown += 1
            if shown >= MAX_PATH_COMPLETIONS:
                return


class ModelCompleter(Completer):
    """Completes `/model NAME` from the known models of the session's provider."""

    def __init__(self, provider: str, current: str, extra: Sequence[str] = ()) -> None:
        row = provider_row(provider)
        self.names = list(dict.fromkeys([
            row.default_model, *row.current_models, *alias_names(provider), current, *extra,
        ]))

    def get_completions(self, document: Document,
                        complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/model "):
            return
        typed = text[len("/model "):]
        if any(c.isspace() for c in typed):
            return
        for name in self.names:
            if name.startswith(typed):
                yield Completion(name, start_position=-len(typed))
