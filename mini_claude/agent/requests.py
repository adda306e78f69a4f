"""What goes out with a model call: the next request, and what a summary call needs.

Both carry the same system prompt, tools and thinking settings as every other call,
so the cached prefix of the conversation stays valid.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from mini_claude.agent.metered import MeteredProvider
from mini_claude.context.cache_anchor import stable_prefix_end
from mini_claude.context.compact import SummaryContext
from mini_claude.context.thinking import max_tokens_for, thinking_config
from mini_claude.conversation import Message
from mini_claude.pricing import CostTracker
from mini_claude.protocol import ModelRequest, Provider, ToolSpec, Usage
from mini_claude.settings import Settings
from mini_claude.transcript import Transcript


def fixed_chars(system: str, tools: list[ToolSpec]) -> int:
    """Characters sent with every request besides the messages."""
    schemas = json.dumps([asdict(t) for t in tools], ensure_ascii=False)
    return len(system) + len(schemas)


def next_request(
    settings: Settings, system: str, tools: list[ToolSpec], messages: Sequence[Message],
    *, planning: bool = False,
) -> ModelRequest:
    thinking = thinking_config(settings)
    return ModelRequest(
        model=(settings.plan_model if planning else None) or settings.model,
        system=system,
        messages=list(messages),
        tools=tools,
        max_tokens=max_tokens_for(thinking, min(settings.max_output_tokens, settings.reserve)),
        thinking=thinking,
        cache_anchor=stable_prefix_end(messages),
    )


def summary_context(
    *,
    provider: Provider,
    costs: CostTracker,
    settings: Settings,
    system: str,
    tools: list[ToolSpec],
    root: Path,
    transcript: Transcript,
) -> SummaryContext:
    """A summary call is metered as one, and its usage recorded for resume."""

    def record(model: str, usage: Usage) -> None:
        transcript.event("usage", model=model, summary=True, **asdict(usage))

    return SummaryContext(
        provider=MeteredProvider(provider, costs, summary=True, record=record),
        model=settings.compact_model or settings.model,
        system=system,
        tools=tools,
        root=root,
        transcript_path=str(transcript.path),
        thinking=thinking_config(settings) if not settings.compact_model else None,
    )
