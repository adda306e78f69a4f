"""What a tool is, as the tool declares it, and the view that answers "which tools read,
edit, …" so that rules, plan mode and the Claude Code name table never list tool names.

Each tool class carries a :class:`ToolTraits`; the registry declares the built-in tools
here, and a tool added later (an MCP server's, a test's) is declared when it is added.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ToolKind = Literal["read", "edit", "shell", "search", "web", "other"]
# What a rule's specifier means for the tool: a command, a path, a URL's domain, a name.
SpecifierKind = Literal["command", "path", "domain", "name"]
# Kinds whose tools read files: a rule on reading covers every one of them.
READING_KINDS: tuple[ToolKind, ...] = ("read", "search")
# Kinds whose tools name one file in a call (read it, edit it, write it).
FILE_KINDS: tuple[ToolKind, ...] = ("read", "edit")


@dataclass(frozen=True, slots=True)
class ToolTraits:
    kind: ToolKind = "other"
    rule_kind: SpecifierKind | None = None  # None: rules name the tool alone, with no specifier
    rule_argument: str = ""  # the argument a rule's specifier is matched against
    claude_names: tuple[str, ...] = ()  # Claude Code's names for this tool (``Read``, ``Bash``)
    plan_mode: bool = False  # runs in plan mode (it changes nothing)
    concurrent: bool = False  # neighbouring calls in one reply run together
    streams_output: bool = False  # its output is shown while it runs
    # Its output is a page of a file that stays on disk, bounded by the tool itself, and
    # its ``offset`` argument says where the page starts.
    pages_itself: bool = False
    from_history: bool = False  # its output is drawn from the conversation itself
    is_work: bool = True  # a call counts as progress (compacting the history does not)

    @property
    def reads_files(self) -> bool:
        return self.kind in READING_KINDS

    @property
    def file_argument(self) -> str | None:
        """The argument naming the one file a call reads or edits; None for other tools."""
        if self.kind in FILE_KINDS and self.rule_kind == "path":
            return self.rule_argument
        return None


OTHER = ToolTraits()


class ToolKinds:
    """Tool name -> traits, for every tool the process knows."""

    def __init__(self) -> None:
        self._traits: dict[str, ToolTraits] = {}

    def declare(self, name: str, traits: ToolTraits) -> None:
        """A name keeps the traits it was first declared with: a tool added later cannot
        give a built-in's name another meaning for the rules."""
        self._traits.setdefault(name, traits)

    def forget(self, name: str) -> None:
        self._traits.pop(name, None)

    def traits(self, name: str) -> ToolTraits:
        """What the tool declared; an unknown tool is of kind ``other``."""
        return self._traits.get(name, OTHER)

    def of_kind(self, *kinds: ToolKind) -> tuple[str, ...]:
        """The tools of these kinds, in the order they were declared."""
        return tuple(name for name, traits in self._traits.items() if traits.kind in kinds)

    def called(self, claude_name: str, *, ignore_case: bool = True) -> tuple[str, ...]:
        """Our tools that Claude Code calls ``claude_name``."""

        def same(name: str) -> bool:
            return name.lower() == claude_name.lower() if ignore_case else name == claude_name

        return tuple(name for name, traits in self._traits.items()
                     if any(same(c) for c in traits.claude_names))

    def claude_names(self) -> tuple[str, ...]:
        """Every Claude Code name some tool answers to."""
        names = (c for traits in self._traits.values() for c in traits.claude_names)
        return tuple(dict.fromkeys(names))


_KNOWN = ToolKinds()


def known_tools() -> ToolKinds:
    """The process's view. The built-in tools are in it once the tool registry is loaded
    (``declare_builtin_tools``): each front end loads it before it reads a rule."""
    return _KNOWN


def declare(name: str, traits: ToolTraits) -> None:
    """A tool the process now knows (a built-in, an MCP server's, a sub-agent runner)."""
    _KNOWN.declare(name, traits)


def forget(name: str) -> None:
    _KNOWN.forget(name)
