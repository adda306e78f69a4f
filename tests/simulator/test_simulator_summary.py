"""The simulated model's summary: short, selective, seeded; and the poor mode."""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest

from mini_claude.prompts import SUMMARY_HEADING
from mini_claude.simulator import (
    Reply,
    ScriptedPolicy,
    SimConversation,
    SimMessage,
    Simulator,
    SummaryStyle,
    TextPart,
    ToolResultPart,
    ToolUsePart,
    build_summary,
    count_tokens,
)
from mini_claude.simulator.summary import POOR, REALISTIC
from mini_claude.simulator.tokens import shared_counter


def instruction(focus: str = "") -> SimMessage:
    text = f"{SUMMARY_HEADING}\n\nWrite a structured summary of the session."
    if focus:
        text += f"\n\nFocus: {focus}"
    return SimMessage("user", [TextPart(text)])


def exchange(
    call_id: str, name: str, args: dict[str, Any], output: str, error: bool = False
) -> list[SimMessage]:
    return [
        SimMessage("assistant", [ToolUsePart(call_id, name, args)]),
        SimMessage("user", [ToolResultPart(call_id, output, error)]),
    ]


def session(focus: str = "") -> SimConversation:
    messages = [
        SimMessage("user", [TextPart("Fix the failing login test in auth/session.py")]),
        *exchange(
            "t1",
            "read_file",
            {"path": "auth/session.py"},
            "1 def login(): ...\n2 # FACT-port the dev server listens on 8123",
        ),
        *exchange(
            "t2",
            "run_shell",
            {"command": "pytest tests/test_login.py"},
            "FAILED test_login - KeyError: 'token'",
            error=True,
        ),
        *exchange("t3", "edit_file", {"path": "auth/session.py", "old": "a", "new": "b"}, "edited"),
        *exchange("t4", "grep_search", {"pattern": "def login"}, "auth/session.py:1:def login"),
        SimMessage(
            "assistant", [TextPart("The test passes now; next I will update the changelog.")]
        ),
        SimMessage("user", [TextPart("Thanks. Remember FACT-owner_name is Dana Whitfield.")]),
        instruction(focus),
    ]
    return SimConversation("anthropic", "sim", "system", messages, tool_names=["read_file"])


def summary_of(conv: SimConversation) -> str:
    return build_summary(conv, shared_counter())


def test_summary_has_analysis_then_summary_tags() -> None:
    text = summary_of(session())
    assert text.startswith("<analysis>\n") and text.endswith("\n</summary>")
    assert text.index("</analysis>") < text.index("<summary>")


def test_summary_keeps_requests_files_commands_errors_state_and_facts() -> None:
    text = summary_of(session())
    assert "Fix the failing login test in auth/session.py" in text
    files_read = text.split("## Files read")[1].split("##")[0]
    files_changed = text.split("## Files changed")[1].split("##")[0]
    assert "auth/session.py" in files_read and "auth/session.py" in files_changed
    assert "pytest tests/test_login.py" in text
    assert "run_shell(pytest tests/test_login.py): FAILED test_login - KeyError: 'token'" in text
    assert "update the changelog" in text.split("## Current state and next step")[1]
    assert "FACT-port the dev server listens on 8123" in text
    assert "FACT-owner_name is Dana Whitfield." in text
    assert SUMMARY_HEADING not in text  # the instruction itself is not a request


def test_focus_is_echoed() -> None:
    text = summary_of(session(focus="the database migration"))
    assert "## Focus\n- the database migration" in text
    assert "## Focus" not in summary_of(session())  # the instruction itself is no focus
    conv = session()
    conv.messages[-1] = SimMessage("user", [TextPart(f"{SUMMARY_HEADING}: the API client")])
    assert "## Focus\n- the API client" in summary_of(conv)


OUR_BOUNDARY = (
    "[This session was compacted: earlier messages were replaced by the summary below.]\n\n"
    "## User requests\n- Set up CI for the project\n"
    "## Details from tool output\n- FACT-ci_runner is buildkite"
)
# Claude Code opens the history after a compaction in its own words, with a ``Summary:`` label.
CLAUDE_CODE_CONTINUATION = (
    "This session is being continued from a previous conversation that ran out of "
    "context. The summary below covers the earlier portion of the conversation.\n\n"
    "<system-reminder>\nsomething of the client's own\n</system-reminder>\nSummary:\n"
    "## User requests\n- Set up CI for the project\n"
    "## Details from tool output\n- FACT-ci_runner is buildkite"
)


@pytest.mark.parametrize("boundary", [OUR_BOUNDARY, CLAUDE_CODE_CONTINUATION])
def test_earlier_summary_is_carried_forward(boundary: str) -> None:
    """Whichever product wrote the message that carries it, the model reads the earlier
    summary as such: its items go on, older than the history's; its wrapper is no request."""
    conv = session()
    conv.messages.insert(0, SimMessage("user", [TextPart(boundary)]))
    text = summary_of(conv)
    requests = text.split("## User requests")[1].split("\n## ")[0]
    assert requests.index("Set up CI for the project") < requests.index("Fix the failing login")
    assert "FACT-ci_runner is buildkite" in text.split("## Details from tool output")[1]
    assert "This session was compacted" not in text
    assert "continued from a previous conversation" not in text
    assert "something of the client's own" not in text
    assert text.count("## User requests") == 1


def big_session(turns: int = 400) -> SimConversation:
    """Many turns; each reads a module (a raw fact every 20th) and states one finding."""
    messages: list[SimMessage] = []
    for n in range(turns):
        messages.append(
            SimMessage("user", [TextPart(f"Request {n}: " + "refactor the module " * 12)])
        )
        messages += exchange(
            f"r{n}",
            "read_file",
            {"path": f"pkg/module_{n}.py"},
            f"FACT-item{n} value {n}" if n % 20 == 0 else "code",
        )
        messages.append(SimMessage("assistant", [TextPart(f"Done with {n}.")]))
    messages.append(instruction())
    return SimConversation("openai", "sim", "", messages)


def test_summary_stays_within_a_realistic_budget_and_drops_old_raw_detail() -> None:
    conv = big_session()
    budget = REALISTIC.budget(conv)
    assert 1_000 <= budget <= 3_000
    text = summary_of(conv)
    assert count_tokens(text) <= budget + 120  # the analysis scratchpad and the tags
    assert "Request 399" in text and "Request 0:" not in text  # oldest detail went first
    assert "pkg/module_399.py" in text.split("## Files read")[1]
    kept = [n for n in range(0, 400, 20) if f"FACT-item{n} value {n}" in text]
    assert len(kept) < 20  # raw details do not all fit: that is the point
    # Whatever raw detail is kept is the newest: no gap below the newest fact.
    assert kept == list(range(380 - 20 * (len(kept) - 1), 400, 20))


def test_what_the_assistant_said_outlives_raw_tool_output() -> None:
    conv = big_session(200)
    said = SimMessage("assistant", [TextPart("The port is set in FACT-port: 8123, I checked.")])
    conv.messages.insert(3, said)
    text = build_summary(conv, shared_counter(), budget=1_200)
    assert "FACT-port: 8123" in text.split("## Findings and decisions")[1]
    assert "FACT-item0 value 0" not in text  # an old raw detail only a tool result showed


def test_raw_details_are_kept_newest_first_when_room_is_left() -> None:
    text = summary_of(session())  # a short session: everything fits
    assert "FACT-port the dev server listens on 8123" in text.split("## Details from tool")[1]


def test_poor_summary_keeps_only_the_user_requests() -> None:
    text = build_summary(session(), shared_counter(), POOR)
    body = text.split("<summary>\n")[1]
    assert "## User requests" in body and "Fix the failing login test" in body
    assert "FACT-owner_name is Dana Whitfield." in body  # the user said it
    headings = [line for line in body.splitlines() if line.startswith("## ")]
    assert headings == ["## User requests"]
    assert "FACT-port the dev server" not in body and "pytest tests/test_login.py" not in body


def test_budget_is_seeded() -> None:
    conv = big_session(30)
    budgets = {SummaryStyle(seed=seed).budget(conv) for seed in range(12)}
    assert all(1_000 <= b <= 3_000 for b in budgets) and len(budgets) > 3
    assert SummaryStyle(seed=5).budget(conv) == SummaryStyle(seed=5).budget(big_session(30))
    assert summary_of(conv) == summary_of(big_session(30))


def test_summary_request_through_the_server_does_not_consume_steps() -> None:
    policy = ScriptedPolicy([Reply("step one"), Reply("step two")])
    messages: list[Any] = [
        {"role": "user", "content": "Read config. FACT-region is eu-west-3"},
        {"role": "assistant", "content": "Sure."},
        {"role": "user", "content": f"{SUMMARY_HEADING}\nFocus: deployment"},
    ]
    with Simulator(policy) as sim:
        client = anthropic.Anthropic(api_key="k", base_url=sim.url, max_retries=0)
        summary = client.messages.create(model="sim", max_tokens=2_000, messages=messages)
        o_summary = openai.OpenAI(
            api_key="k", base_url=sim.openai_base_url, max_retries=0
        ).chat.completions.create(model="sim", messages=messages)
        normal = client.messages.create(model="sim", max_tokens=20, messages=messages[:1])
    text = summary.content[0].text if summary.content[0].type == "text" else ""
    assert "FACT-region is eu-west-3" in text and "deployment" in text
    assert o_summary.choices[0].message.content == text
    assert normal.content[0].type == "text" and normal.content[0].text == "step one"
    assert [r.is_summary_request for r in sim.requests] == [True, True, False]
    assert policy.remaining == 1


def test_summary_instruction_merged_after_tool_results_is_still_recognised() -> None:
    conv = session()
    last_results = ToolResultPart("t9", "output")
    conv.messages[-1] = SimMessage("user", [last_results, *conv.messages[-1].blocks])
    assert conv.is_summary_request


def test_repeated_compactions_do_not_nest_summaries() -> None:
    previous = ""
    sizes: list[int] = []
    for round_ in range(6):
        messages: list[SimMessage] = []
        if previous:
            boundary = f"[This session was compacted.]\n\n{previous}"
            messages.append(SimMessage("user", [TextPart(boundary)]))
        messages.append(SimMessage("user", [TextPart(f"Round {round_}: FACT-round{round_} done")]))
        messages += exchange(f"c{round_}", "run_shell", {"command": f"make step{round_}"}, "ok")
        messages.append(instruction())
        summary = summary_of(SimConversation("anthropic", "sim", "", messages))
        previous = summary.split("<summary>\n")[1].removesuffix("\n</summary>")
        sizes.append(count_tokens(summary))
    assert previous.count("## User requests") == 1
    assert previous.count("## Commands run") == 1
    assert all(f"FACT-round{n} done" in previous for n in range(6))
    assert "make step0" in previous  # old detail is carried, once
    assert previous.count("make step0") == 1
    assert sizes[-1] < 600
