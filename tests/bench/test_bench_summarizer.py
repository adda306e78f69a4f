"""The simulated summarizer keeps what a request asks for by kind, whoever wrote the request;
and every peer row sends its own product's summary prompt."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from mini_claude.bench.peer_prompts import PromptedProvider, template
from mini_claude.bench.strategies import STRATEGIES
from mini_claude.context.summary_request import summary_instruction
from mini_claude.conversation import Message, TextBlock
from mini_claude.prompts import SUMMARY_HEADING
from mini_claude.protocol import ModelRequest
from mini_claude.providers import create_provider
from mini_claude.settings import Settings
from mini_claude.simulator import (
    SimConversation,
    SimMessage,
    Simulator,
    TextPart,
    ToolResultPart,
    ToolUsePart,
    build_summary,
)
from mini_claude.simulator.summary import asked_for
from mini_claude.simulator.tokens import shared_counter

TURNS = 120


def long_session(prompt: str) -> SimConversation:
    """Many turns, each with a long request, a module read and a finding: more than a
    summary of ordinary length holds, so what it keeps shows what it was asked for."""
    messages: list[SimMessage] = []
    for n in range(TURNS):
        messages.append(SimMessage("user", [TextPart(
            f"Request {n}: look into the billing totals again and " + "check the rounding " * 8)]))
        messages.append(SimMessage("assistant", [ToolUsePart(
            f"r{n}", "read_file", {"path": f"src/pkg/module_{n:03d}.py"})]))
        messages.append(SimMessage("user", [ToolResultPart(f"r{n}", "def total(): ...")]))
        messages.append(SimMessage("assistant", [TextPart(
            f"Module {n} rounds half-up before summing, which drifts by a cent per batch.")]))
    messages.append(SimMessage("user", [TextPart(f"{SUMMARY_HEADING}\n\n{prompt}")]))
    return SimConversation("anthropic", "sim", "system", messages, max_tokens=4_096)


def paths_kept(prompt: str) -> int:
    text = build_summary(long_session(prompt), shared_counter())
    return sum(f"src/pkg/module_{n:03d}.py" in text for n in range(TURNS))


FILE_ASKING = {
    "Claude Code": template("claude_code"),
    "mini-claude": summary_instruction(keep_pointers=True).split("\n\n", 1)[1],
    "plain words": "Summarize the work. List every path you read or edited.",
    "other words": "Write a handoff note; enumerate all files touched so far.",
}


@pytest.mark.parametrize("prompt", FILE_ASKING.values(), ids=FILE_ASKING.keys())
def test_a_request_asking_for_every_file_keeps_every_path_whatever_its_wording(
        prompt: str) -> None:
    assert paths_kept(prompt) == TURNS


def test_a_request_that_does_not_ask_for_files_keeps_fewer_paths() -> None:
    assert paths_kept("Summarize where things stand and the decisions made.") < TURNS // 2


def test_the_rule_reads_words_not_who_wrote_them() -> None:
    words = "Include the user's requests, every file path and the errors met."
    as_claude = asked_for(f"You are Claude Code. {words}")
    as_codex = asked_for(f"You are performing a CONTEXT CHECKPOINT COMPACTION. {words}")
    assert as_claude == as_codex
    assert {"requests", "files", "errors"} <= as_claude.kinds
    assert "files" in as_claude.complete
    assert "files" not in asked_for("Leave out every file path. Keep the errors.").kinds


def test_each_product_prompt_is_read_for_what_it_asks() -> None:
    claude_code = asked_for(template("claude_code"))
    assert {"files", "requests", "errors"} <= claude_code.complete
    codex = asked_for(template("codex"))
    assert {"findings", "requests", "state", "details"} <= codex.kinds and not codex.complete
    server = asked_for(template("anthropic_api"))
    assert {"state", "findings"} <= server.kinds and not server.complete


def test_every_peer_row_names_its_own_products_prompt() -> None:
    prompts = {s.key: s.summary_prompt for s in STRATEGIES}
    assert prompts["claude-code"] == "claude_code"
    assert prompts["codex"] == "codex"
    assert prompts["server"] == "anthropic_api"
    assert prompts["learn"] == "learn_claude_code"
    assert prompts["mini"] is None
    for name in filter(None, prompts.values()):
        assert template(name) and "<!--" not in template(name)


def test_a_peer_rows_summary_request_carries_its_products_prompt_over_the_wire(
        tmp_path: Path) -> None:
    with Simulator() as sim:
        settings = Settings(provider="anthropic", model="sim", api_keys={"anthropic": "k"},
                            base_urls={"anthropic": sim.anthropic_base_url}, home=tmp_path)
        provider = PromptedProvider(create_provider(settings), "codex")
        history = [Message("user", [TextBlock("Fix the totals.")]),
                   Message("assistant", [TextBlock("Done.")])]

        async def send(last: str) -> None:
            request = ModelRequest(model="sim", system="s", tools=[], max_tokens=2_000,
                                   messages=[*history, Message("user", [TextBlock(last)])])
            async for _ in provider.stream(request):
                pass

        async def both() -> None:
            await send(summary_instruction(keep_pointers=True))
            await send("And the tests?")
            await provider.close()

        asyncio.run(both())
        summary, turn = sim.requests[-2], sim.requests[-1]

    def last_text(body: dict[str, Any]) -> str:
        content = body["messages"][-1]["content"]
        return content if isinstance(content, str) else content[0]["text"]

    assert summary.is_summary_request
    sent = last_text(summary.body)
    assert sent.startswith(SUMMARY_HEADING) and "CONTEXT CHECKPOINT COMPACTION" in sent
    assert "Keep in full" not in sent  # the agent's own words are not sent for this row
    assert last_text(turn.body) == "And the tests?"  # a turn goes out untouched


def carried_then_new(prompt: str) -> SimConversation:
    """A history headed by an earlier summary (in another product's words), then new work."""
    earlier = ("This session is being continued from a previous conversation. The summary "
               "below covers the earlier portion.\n\n<summary>\n## Files read\n"
               "- src/pkg/old_module.py\n\n## Findings and decisions\n"
               "- FACT-old rounding is half-up\n</summary>")
    messages = [
        SimMessage("user", [TextPart(earlier)]),
        SimMessage("user", [TextPart("Now look at the new module.")]),
        SimMessage("assistant", [ToolUsePart("n1", "read_file", {"path": "src/pkg/new.py"})]),
        SimMessage("user", [ToolResultPart("n1", "FACT-new totals are cached")]),
        SimMessage("user", [TextPart(f"{SUMMARY_HEADING}\n\n{prompt}")]),
    ]
    return SimConversation("anthropic", "sim", "system", messages, max_tokens=4_096)


@pytest.mark.parametrize("asking", [
    "Write only what the messages after the summary add; list every file.",
    "Summarize the new work, without repeating what the summary already says.",
    "Summarize the new work and do not repeat the earlier summary.",
])
def test_a_request_for_only_what_is_new_leaves_out_what_the_earlier_summary_says(
    asking: str,
) -> None:
    text = build_summary(carried_then_new(asking), shared_counter())
    assert "src/pkg/new.py" in text and "FACT-new" in text
    assert "old_module.py" not in text and "FACT-old" not in text
    whole = build_summary(carried_then_new("Summarize the work; list every file."),
                          shared_counter())
    assert "old_module.py" in whole and "FACT-old" in whole
