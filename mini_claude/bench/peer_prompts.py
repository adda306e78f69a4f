"""Each peer row asks for its summaries with its own product's published prompt.

The agent builds its summary request as always; on the way to the server the
instruction is swapped for the row's template (under ``prompts/``, each naming
its source), so the simulated model reads, and the row pays for, that
product's words. The heading stays: it is how the simulator tells a summary
request from a turn. Session-notes requests are left as they are.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import replace
from functools import cache
from importlib import resources

from mini_claude.conversation import Message, TextBlock
from mini_claude.prompts import NOTES_LINE, SUMMARY_HEADING
from mini_claude.protocol import ModelRequest, Provider, StreamEvent

PROMPT_PACKAGE = "mini_claude.bench.prompts"
SOURCE_COMMENT = re.compile(r"\A\s*<!--(?P<source>.*?)-->\s*", re.DOTALL)


@cache
def template(name: str) -> str:
    """The prompt text of ``prompts/<name>.md``, without the comment naming its source."""
    text = resources.files(PROMPT_PACKAGE).joinpath(f"{name}.md").read_text(encoding="utf-8")
    return SOURCE_COMMENT.sub("", text, count=1).strip()


@cache
def source_of(name: str) -> str:
    """Where the template comes from, in one line."""
    text = resources.files(PROMPT_PACKAGE).joinpath(f"{name}.md").read_text(encoding="utf-8")
    found = SOURCE_COMMENT.match(text)
    return " ".join(found.group("source").split()) if found else ""


def is_summary_instruction(message: Message) -> bool:
    """The compaction request's last message (not a session-notes request)."""
    text = message.text
    return (message.role == "user" and text.lstrip().startswith(SUMMARY_HEADING)
            and NOTES_LINE not in text)


def with_prompt(request: ModelRequest, prompt: str) -> ModelRequest:
    """The same request with its summary instruction replaced by ``prompt``."""
    if not request.messages or not is_summary_instruction(request.messages[-1]):
        return request
    instruction = Message("user", [TextBlock(f"{SUMMARY_HEADING}\n\n{prompt}")])
    return replace(request, messages=[*request.messages[:-1], instruction])


class PromptedProvider:
    """A provider whose summary requests carry a given product's prompt."""

    def __init__(self, inner: Provider, prompt_name: str) -> None:
        self.inner = inner
        self.name = inner.name
        self.prompt = template(prompt_name)

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return self.inner.stream(with_prompt(request, self.prompt))

    async def close(self) -> None:
        await self.inner.close()
