"""Deeply nested tool arguments and damaged transcripts: a tool error or a skipped
record, never a crash; ``--continue`` keeps working. Both providers, over HTTP."""

from __future__ import annotations

import json

import pytest

from mini_claude.simulator import Reply, ScriptedPolicy, SimConversation, ToolCall
from tests.support.hostile import Cli, refused


@pytest.mark.parametrize(
    "raw",
    [
        '{"path": ' + "[" * 20_000 + "]" * 20_000 + "}",
        '{"path": "README.md", "x": ' + '{"a": ' * 5_000 + "1" + "}" * 5_000 + "}",
        '{"path": ' + "[" * 20_000,  # never closed
    ],
    ids=["arrays", "objects", "unclosed"],
)
def test_deeply_nested_arguments_are_a_tool_error(cli: Cli, raw: str) -> None:
    seen: list[str] = []

    def read_the_error(conv: SimConversation) -> Reply:
        seen.append(conv.last_tool_results()[0].content)
        return Reply("I will send flat arguments.")

    cli.sim.policy = ScriptedPolicy([
        Reply("", [ToolCall("read_file", {"path": "README.md"})], raw_arguments={0: raw}),
        read_the_error,
    ])
    outcome = cli.run("-p", "read it", "--yes")
    assert outcome.code == 0, outcome.err
    assert "Traceback" not in outcome.err and "RecursionError" not in outcome.err
    assert "I will send flat arguments." in outcome.out
    assert "levels deep" in seen[0] or "not valid JSON" in seen[0]
    assert not refused(cli.sim), refused(cli.sim)
    cli.sim.policy = ScriptedPolicy([Reply("still here")])
    again = cli.run("--continue", "-p", "go on")
    assert again.code == 0 and "still here" in again.out, again.err


DAMAGED = [
    # a tool input that is a string, a result whose content is a number
    '{"type": "message", "message": {"role": "assistant", "blocks": [{"id": "toolu_d", '
    '"name": "read_file", "input": "README.md", "kind": "tool_use"}]}}',
    '{"type": "message", "message": {"role": "user", "blocks": [{"tool_use_id": "toolu_d", '
    '"content": 42, "kind": "tool_result"}]}}',
    # a role that is a number, blocks that are not a list, a block of no known kind
    '{"type": "message", "message": {"role": 7, "blocks": [{"text": "x", "kind": "text"}]}}',
    '{"type": "message", "message": {"role": "user", "blocks": "text"}}',
    '{"type": "message", "message": {"role": "user", "blocks": [{"kind": "alien"}]}}',
    '{"type": "message", "message": "not an object"}',
    '{"type": "message"}',
    "[1, 2, 3]",
    '"just a string"',
    # 10,000-deep nesting inside a tool input
    '{"type": "message", "message": {"role": "assistant", "blocks": [{"id": "toolu_n", '
    '"name": "read_file", "input": {"path": ' + "[" * 10_000 + "]" * 10_000
    + '}, "kind": "tool_use"}]}}',
    "{" * 10_000,
]


@pytest.mark.parametrize("damaged", [DAMAGED], ids=["all"])
def test_damaged_transcript_records_are_skipped_and_counted(
    cli: Cli, damaged: list[str]
) -> None:
    assert cli.run("-p", "hello").code == 0
    (path,) = cli.transcripts()
    with path.open("a") as handle:
        handle.write("\n".join(damaged) + "\n")
    cli.sim.policy = ScriptedPolicy([Reply("recovered")])
    outcome = cli.run("--continue", "-p", "go on")
    assert outcome.code == 0, outcome.err
    assert "recovered" in outcome.out
    assert "Traceback" not in outcome.err and "internal error" not in outcome.err
    assert not refused(cli.sim), refused(cli.sim)
    notes = [line for line in outcome.err.splitlines() if "skipped" in line]
    assert notes and any(str(len(damaged)) in line for line in notes), outcome.err
    last = cli.sim.requests[-1].body
    assert "toolu_d" not in json.dumps(last) and "toolu_n" not in json.dumps(last)
