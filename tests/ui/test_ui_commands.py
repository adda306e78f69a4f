"""Slash-command parsing and suggestions; permission wording; input completion."""

from __future__ import annotations

import asyncio

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from mini_claude.permissions.asking import PermissionRequest
from mini_claude.ui.commands import COMMANDS, find_command, parse_command, suggest
from mini_claude.ui.permissions import NOT_ATTACHED, TerminalApprover, answer_labels
from mini_claude.ui.prompt_input import SlashCommandCompleter


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("/help", ("help", "")),
        ("  /Compact keep the API notes  ", ("compact", "keep the API notes")),
        ("/compact\nkeep this\nand that", ("compact", "keep this\nand that")),
        ("/usr/bin/env is missing", None),
        ("please run /help", None),
        ("/", None),
        ("plain text", None),
    ],
)
def test_commands_are_recognised_only_at_the_start(text: str,
                                                   parsed: tuple[str, str] | None) -> None:
    assert parse_command(text) == parsed


def test_aliases_reach_the_same_command() -> None:
    assert find_command("new") is find_command("clear")
    assert find_command("quit") is find_command("exit")
    assert find_command("nope") is None


@pytest.mark.parametrize(("typo", "meant"),
                         [("contxt", "context"), ("cots", "cost"), ("hlep", "help"),
                          ("compcat", "compact"), ("resum", "resume")])
def test_typos_get_the_closest_command(typo: str, meant: str) -> None:
    assert suggest(typo) == meant


def test_nonsense_gets_no_suggestion() -> None:
    assert suggest("zzzzzz") is None


def test_completion_offers_commands_only_at_the_start() -> None:
    completer = SlashCommandCompleter([(c.name, c.summary) for c in COMMANDS])

    def complete(text: str) -> list[str]:
        return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]

    assert complete("/co") == ["/compact", "/context", "/cost", "/config"]
    assert complete("/cl") == ["/clear"]
    assert complete("/compact now") == []
    assert complete("hello /co") == []


def test_permission_answers_name_what_would_be_remembered() -> None:
    shell = PermissionRequest("run_shell", "npm test", "run_shell:npm test")
    edit = PermissionRequest("edit_file", "edit a.py", "edit_file", detail="@@ -1 +1 @@")
    assert answer_labels(shell) == [
        "Yes",
        "Yes, and don't ask again for `npm test` this session",
        "No, and tell the agent what to do differently",
    ]
    assert answer_labels(edit)[1] == "Yes, and don't ask again for edit_file this session"


def test_an_approver_without_a_terminal_refuses() -> None:
    decision = asyncio.run(TerminalApprover()(PermissionRequest("run_shell", "ls", "ls")))
    assert not decision.allowed
    assert decision.reason == NOT_ATTACHED
