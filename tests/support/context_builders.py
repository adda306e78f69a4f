"""Hand-built conversations and settings for the context-pipeline tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, SupportsIndex, TypeVar, overload

import pytest

from mini_claude.context.meter import TokenMeter
from mini_claude.context.store import DiskResultStore
from mini_claude.context.tier import PassContext
from mini_claude.conversation import (
    Conversation,
    Message,
    ResultRef,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    target_of,
    user_text,
)
from mini_claude.settings import Settings

T = TypeVar("T")


def isolated_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **changes: Any) -> Settings:
    """Settings whose home is a temp folder, also exported as MINI_CLAUDE_HOME."""
    home = tmp_path / "home"
    monkeypatch.setenv("MINI_CLAUDE_HOME", str(home))
    return Settings(home=home, context_window=100_000, output_reserve=20_000).with_overrides(
        **changes
    )


def tier_pass(
    settings: Settings,
    utilization: float = 0.0,
    *,
    now: float = 0.0,
    last_call_at: float | None = None,
) -> PassContext:
    """One pipeline pass as a tier sees it, at a chosen utilization, with a fresh meter."""
    return PassContext(TokenMeter(settings, fixed_chars=0), utilization, now, last_call_at)


def blocked_settings(settings: Settings, tmp_path: Path) -> Settings:
    """Settings whose home lies under a regular file, so every write to it fails."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where a folder should be")
    return settings.with_overrides(home=blocker / "home")


def store_for(settings: Settings, session_id: str = "session-1") -> DiskResultStore:
    return DiskResultStore(settings, session_id, clock=lambda: 1_700_000_000.0)


def saved_files(settings: Settings) -> list[Path]:
    root = settings.tool_results_dir
    return sorted(p for p in root.rglob("*.txt")) if root.exists() else []


def numbered_lines(n: int, prefix: str = "line") -> str:
    """Distinct, recognisable lines so a test can tell head, middle and tail apart."""
    return "".join(f"{prefix} {i:06d} of the output\n" for i in range(n))


class Session:
    """Builds a valid conversation one tool call at a time."""

    def __init__(self, conversation: Conversation | None = None) -> None:
        self.conversation = conversation if conversation is not None else Conversation()
        if not len(self.conversation):
            self.conversation.append(user_text("please help with the project"))
        self._next_id = 0

    def call(
        self,
        name: str,
        content: str,
        *,
        is_error: bool = False,
        saved_path: str | None = None,
        **tool_input: Any,
    ) -> ResultRef:
        """Append an assistant tool_use and its result; returns the result's index entry."""
        self._next_id += 1
        use = ToolUseBlock(f"toolu_{self._next_id:05d}", name, dict(tool_input))
        result = ToolResultBlock(
            use.id,
            content,
            is_error=is_error,
            tool_name=name,
            target=target_of(use),
            original_chars=len(content),
            original_lines=content.count("\n") + (0 if content.endswith("\n") else 1),
            saved_path=saved_path,
        )
        self.conversation.append(Message("assistant", [TextBlock("working on it"), use]))
        self.conversation.append(Message("user", [result]))
        return self.conversation.results[-1]

    def read(self, path: str, content: str, **extra: Any) -> ResultRef:
        return self.call("read_file", content, path=path, **extra)

    def grep(self, pattern: str, content: str, **extra: Any) -> ResultRef:
        return self.call("grep_search", content, pattern=pattern, **extra)

    def shell(self, command: str, content: str, **extra: Any) -> ResultRef:
        return self.call("run_shell", content, command=command, **extra)

    def result(self, ref: ResultRef) -> ToolResultBlock:
        return self.conversation.result_at(ref)

    def use(self, ref: ResultRef) -> ToolUseBlock:
        use = self.conversation.tool_use_for(ref)
        assert use is not None
        return use


class CountingList(list[T]):
    """A list that counts element reads, to prove a pass does not walk the history."""

    reads = 0

    @overload
    def __getitem__(self, index: SupportsIndex) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: SupportsIndex | slice) -> T | list[T]:
        if isinstance(index, slice):
            picked = super().__getitem__(index)
            CountingList.reads += len(picked)
            return picked
        CountingList.reads += 1
        return super().__getitem__(index)

    def __iter__(self) -> Iterator[T]:
        for item in super().__iter__():
            CountingList.reads += 1
            yield item


def count_reads(conversation: Conversation) -> None:
    """Make every read of the conversation's message list and result index countable."""
    conversation.messages = CountingList(conversation.messages)
    conversation.results = CountingList(conversation.results)
    CountingList.reads = 0
