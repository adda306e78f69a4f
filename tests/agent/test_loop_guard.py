"""The loop guard's detector on call histories: each kind of loop is found when the newest call
completes it, and the work that looks like it (polling output that changes, re-reading a file
that changed, fixing until a test passes) is not."""

from __future__ import annotations

import itertools
from typing import Any

from mini_claude.agent.loop_guard import CallRecord, LoopGuard, Thresholds, find_repetition

_ids = itertools.count()


def call(name: str, result: str = "ok", is_error: bool = False, **args: Any) -> CallRecord:
    return CallRecord(f"toolu_{next(_ids)}", name, args, result, is_error)


def read(path: str, content: str = "alpha\n") -> CallRecord:
    return call("read_file", content, path=path)


def shell(command: str, output: str, failed: bool = False) -> CallRecord:
    return call("run_shell", output, failed, command=command)


def edit(path: str, old: str, new: str) -> CallRecord:
    return call("edit_file", "edited", path=path, old=old, new=new)


def first_finding(calls: list[CallRecord], **limits: Any) -> str | None:
    """The rule of the first repetition found as the calls come in, one by one."""
    thresholds = Thresholds(**limits)
    for end in range(1, len(calls) + 1):
        found = find_repetition(calls[:end], thresholds)
        if found is not None:
            return found.rule
    return None


def test_the_same_call_with_the_same_result_three_times_is_a_loop() -> None:
    grep = [call("grep_search", "a.py:1: x", pattern="x") for _ in range(3)]
    assert first_finding(grep[:2]) is None
    assert first_finding(grep) == "same call"


def test_polling_a_test_run_whose_output_changes_is_not() -> None:
    polls = [shell("pytest -q", f"{n} passed, {5 - n} running") for n in range(5)]
    assert first_finding(polls) is None


def test_the_same_call_after_a_change_is_checking_not_looping() -> None:
    calls = [shell("pytest -q", "5 passed"), edit("a.py", "x", "y"),
             shell("pytest -q", "5 passed"), edit("a.py", "y", "z"),
             shell("pytest -q", "5 passed")]
    assert first_finding(calls) is None


def test_the_same_command_failing_with_the_same_error_is_a_loop_edits_or_not() -> None:
    error = "FAILED test_x.py::test_port - assert 8080 == 80\n1 failed in {t}s"
    calls = [shell("pytest -q", error.format(t="0.41"), True), edit("a.py", "x", "y"),
             shell("pytest -q", error.format(t="0.52"), True), edit("a.py", "y", "z"),
             shell("pytest -q", error.format(t="0.47"), True)]
    assert first_finding(calls) == "failing command"


def test_fixing_until_the_tests_pass_is_not() -> None:
    calls = [shell("pytest -q", "FAILED test_a - NameError: port", True), edit("a.py", "a", "b"),
             shell("pytest -q", "FAILED test_a - assert 8080 == 80", True),
             edit("a.py", "b", "c"),
             shell("pytest -q", "FAILED test_b - KeyError: 'host'", True),
             edit("a.py", "c", "d"), shell("pytest -q", "7 passed")]
    assert first_finding(calls) is None


def test_a_file_read_again_unchanged_is_a_loop() -> None:
    calls = [read("a.py"), call("list_files", "a.py", path="."), read("a.py"), read("a.py")]
    assert first_finding(calls) == "re-read"


def test_re_reading_a_file_that_changed_is_not() -> None:
    calls = [read("a.py", "v1"), read("a.py", "v2"), read("a.py", "v3"), read("a.py", "v4")]
    assert first_finding(calls) is None
    edited = [read("a.py"), edit("a.py", "x", "y"), read("a.py"), edit("a.py", "y", "x"),
              read("a.py")]
    assert first_finding(edited) is None


def test_re_reading_what_left_the_context_is_not() -> None:
    calls = [read("a.py"), read("a.py"), read("a.py")]
    cleared = {calls[0].id, calls[1].id}
    assert find_repetition(calls, Thresholds(), lambda i: i not in cleared) is None
    assert find_repetition(calls, Thresholds()) is not None


def test_an_edit_undone_and_made_again_is_a_loop() -> None:
    calls = [edit("a.py", "port = 80", "port = 8080"), edit("a.py", "port = 8080", "port = 80"),
             edit("a.py", "port = 80", "port = 8080")]
    assert first_finding(calls[:2]) is None
    assert first_finding(calls) == "edit undone"
    writes = [call("write_file", "written", path="b.py", content=c) for c in ("X", "Y", "X")]
    assert first_finding(writes) == "edit undone"


def test_a_threshold_of_zero_turns_its_check_off() -> None:
    grep = [call("grep_search", "same", pattern="x") for _ in range(5)]
    assert first_finding(grep, same_call=0) is None
    assert first_finding(grep, same_call=5) == "same call"


def test_the_user_is_told_only_when_it_goes_on_after_a_reminder() -> None:
    guard = LoopGuard(Thresholds(), reminders_before_notice=1)
    grep = [call("grep_search", "same", pattern="x") for _ in range(6)]
    assert guard.observe(grep[:2]) is None
    found = guard.observe(grep[2:3])
    assert found is not None
    reminder, notice = guard.respond(found)
    assert reminder is not None and "grep_search" in reminder and notice is None
    again = guard.observe(grep[3:4])
    assert again is not None
    reminder, notice = guard.respond(again)
    assert notice is not None and "going in circles" in notice
    assert guard.respond(guard.observe(grep[4:5]) or found) == (None, None)  # told once
    guard.start_turn()  # a new request: the last turn's repetition is no loop of this one
    assert guard.observe(grep[5:6]) is None


def test_a_command_whose_effect_shows_in_the_reads_between_is_not_a_loop() -> None:
    append = "echo more >> a.txt"
    calls = [read("a.txt", "v1"), shell(append, ""), read("a.txt", "v2"), shell(append, ""),
             read("a.txt", "v3"), shell(append, "")]
    assert first_finding(calls) is None
