"""The flags that shape a headless run, read once from the command line."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from mini_claude.permissions.rules import Rule, flag_rules
from mini_claude.safe_read import read_limited

MAX_SYSTEM_PROMPT_CHARS = 100_000


@dataclass(frozen=True, slots=True)
class HeadlessOptions:
    max_turns: int | None = None
    allowed_tools: tuple[str, ...] = ()
    disallowed_tools: tuple[str, ...] = ()
    append_system_prompt: str = ""
    system_prompt_file: str | None = None
    system_prompt: str = ""  # --system-prompt: empty means the built-in instructions

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> HeadlessOptions:
        return cls(
            max_turns=getattr(args, "max_turns", None),
            allowed_tools=tuple(getattr(args, "allowed_tools", None) or ()),
            disallowed_tools=tuple(getattr(args, "disallowed_tools", None) or ()),
            append_system_prompt=getattr(args, "append_system_prompt", None) or "",
            system_prompt_file=getattr(args, "system_prompt_file", None),
            system_prompt=getattr(args, "system_prompt", None) or "",
        )

    def read_system_prompt(self, cwd: Path) -> dict[str, str]:
        """Keyword arguments for ``build_system_prompt``; OSError when the file cannot be read."""
        parts: dict[str, str] = {}
        if self.system_prompt.strip():
            parts["base"] = self.system_prompt.strip()[:MAX_SYSTEM_PROMPT_CHARS] + "\n"
        if self.system_prompt_file is not None:
            path = Path(self.system_prompt_file).expanduser()
            path = path if path.is_absolute() else cwd / path
            try:
                text = read_limited(path).decode("utf-8")[:MAX_SYSTEM_PROMPT_CHARS]
            except UnicodeDecodeError as exc:
                raise OSError(f"{path} is not UTF-8 text ({exc.reason})") from None
            if not text.strip():
                raise OSError(f"{path} is empty")
            parts["base"] = text.strip() + "\n"
        if self.append_system_prompt.strip():
            parts["append"] = self.append_system_prompt.strip()
        return parts

    def flag_rules(self, cwd: Path) -> tuple[list[Rule], list[Rule]]:
        """The allow and deny rules of the flags; RuleError (a usage error) for a bad one."""
        return flag_rules(self.allowed_tools, self.disallowed_tools, cwd)
