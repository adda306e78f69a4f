"""The ledger: entries from the history, its bound, and merging across boundaries."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from mini_claude.context.ledger import (
    COMMANDS_HEADING,
    FILES_HEADING,
    SAVED_HEADING,
    SOURCE,
    TITLE,
    Ledger,
    ledger_body,
    ledger_header,
    ledger_tokens,
    parse_ledger,
)
from mini_claude.context.reattach import Reattachment
from mini_claude.context.rebuild import ACK_TEXT, boundary_message
from mini_claude.conversation import Message, ResultState, TextBlock, ToolResultBlock
from tests.support.compact import call, exchange, read, reply, settings_for, shell, user


def saved(messages: list[Message], path: str) -> list[Message]:
    """The exchange with its result persisted at ``path`` (as tier 0 leaves it)."""
    assistant, results = messages
    block = results.blocks[0]
    assert isinstance(block, ToolResultBlock)
    notice = f"[Output too large for the context: saved in full to {path}]"
    new = replace(block, content=notice, saved_path=path, state=ResultState.BUDGETED)
    return [assistant, Message("user", [new])]


def failed(messages: list[Message]) -> list[Message]:
    assistant, results = messages
    block = results.blocks[0]
    assert isinstance(block, ToolResultBlock)
    return [assistant, Message("user", [replace(block, is_error=True)])]


def compacted(history: list[Message], body: str, tail: list[Message]) -> list[Message]:
    """What the rebuild leaves: a boundary carrying the ledger, then the tail."""
    ledger = Reattachment(SOURCE, TITLE, body)
    boundary = boundary_message("summary: the user asked for the port", "/t.jsonl", len(history),
                                [], [], [ledger])
    return [boundary, Message("assistant", [TextBlock(ACK_TEXT)]), *tail]


def section(body: str, heading: str) -> list[str]:
    """The rows under a heading (the saved results' heading names their folder)."""
    lines = body.splitlines()
    prefix = heading.split("{")[0]
    starts = [i for i, line in enumerate(lines) if line == heading or
              ("{" in heading and line.startswith(prefix))]
    if not starts:
        return []
    out: list[str] = []
    for line in lines[starts[0] + 1:]:
        if not line.startswith("- "):
            break
        out.append(line)
    return out


def test_files_saved_results_and_failed_commands_are_indexed_newest_first() -> None:
    history = [
        user("find the port"),
        *read("notes/a.md", "line\nFACT port 8443"),
        *saved(shell("cat logs/big.log", "x\n" * 19999 + "x"),
               "/home/r/tool-results/s/1-run_shell.txt"),
        *failed(shell("pytest -x", "E   assert 1 == 2\n[exit code 1]")),
        *exchange(call("edit_file", path="notes/a.md", old_string="a", new_string="b")),
        *shell("ls", "a\nb"),  # a quiet success: not a command that mattered
        reply("done"),
    ]
    body = ledger_body(history, 10_000)
    assert body is not None
    assert body.startswith("Through tool call 5 (id ")
    files = section(body, FILES_HEADING)
    assert files == ['- call 4 · "notes/a.md" · edit_file, read_file · 2 lines read']
    assert section(body, SAVED_HEADING) == [
        '- call 2 · run_shell "cat logs/big.log" · 20,000 lines, 39.1 KB · 1-run_shell.txt'
    ]
    assert "Saved tool results in /home/r/tool-results/s:" in body
    commands = section(body, COMMANDS_HEADING)
    assert commands[0] == '- call 3 · "pytest -x" · failed (exit code 1): "E assert 1 == 2"'
    assert commands[1].startswith(
        '- call 2 · "cat logs/big.log" · long output (20,000 lines) saved'
    )
    assert "ls" not in "\n".join(commands)
    quiet = [user("go"), *saved(shell("cat small.log", "short"), "/r/2-run_shell.txt")]
    body = ledger_body(quiet, 10_000)
    assert body is not None and COMMANDS_HEADING not in body  # saved later, but not long


def test_a_failed_read_is_not_a_file_seen_and_a_later_success_forgets_a_failure() -> None:
    history = [
        user("go"),
        *failed(read("missing.txt", "missing.txt does not exist")),
        *failed(shell("make test", "boom\n[exit code 2]")),
        *shell("make test", "all passed\n[exit code 0]"),
    ]
    assert ledger_body(history, 10_000) is None  # nothing worth a line
    history += read("present.txt", "here")
    body = ledger_body(history, 10_000)
    assert body is not None
    assert "present.txt" in body
    assert "missing.txt" not in body
    assert "make test" not in body  # it failed, then passed: nothing left to warn about


def test_render_stays_within_the_bound_and_keeps_the_newest() -> None:
    history: list[Message] = [user("read everything")]
    for i in range(200):
        history.extend(read(f"src/module_{i:03d}.py", "x\n" * (i + 1)))
    for limit in (400, 1_000, 3_000):
        body = ledger_body(history, limit)
        assert body is not None
        text = f"{ledger_header()}\n{body}"
        assert len(text) <= limit
        files = section(body, FILES_HEADING)
        assert files and files[0].startswith('- call 200 · "src/module_199.py"')
        numbers = [int(line.split(" · ")[0].removeprefix("- call ")) for line in files]
        assert numbers == sorted(numbers, reverse=True)
        assert numbers == list(range(200, 200 - len(numbers), -1))  # an unbroken newest run


def test_the_bound_is_a_small_share_of_the_window(tmp_path: Path) -> None:
    small = settings_for(tmp_path, window=20_000)  # effective 15K
    assert ledger_tokens(small) == int(small.effective_window * 0.03)
    large = settings_for(tmp_path, window=200_000)
    assert ledger_tokens(large) == 1_500
    assert ledger_tokens(replace(large, ledger_tokens=0)) == 0
    assert Ledger(replace(large, ledger_tokens=0), lambda: 4.0).reattachments(
        [user("x"), *read("a.py")]
    ) == []


def test_successive_compactions_merge_without_nesting_or_renumbering() -> None:
    first_part = [user("start"), *read("a.py", "1\n2"), *read("b.py", "3")]
    tail = [user("next"), *read("c.py", "4")]
    first = ledger_body([*first_part, *tail], 10_000)
    assert first is not None
    assert section(first, FILES_HEADING)[0].startswith('- call 3 · "c.py"')

    # The rebuild kept the tail (c.py, call 3); new work follows it.
    history = compacted(first_part, first, tail)
    history += [*read("a.py", "1\n2\n3"), *saved(shell("dump", "y\n" * 9), "/r/9-run_shell.txt")]
    second = ledger_body(history, 10_000)
    assert second is not None
    assert second.count(FILES_HEADING) == 1 and ledger_header() not in second
    files = section(second, FILES_HEADING)
    assert files == [
        '- call 4 · "a.py" · read_file · 3 lines read',
        '- call 3 · "c.py" · read_file · 1 line read',
        '- call 2 · "b.py" · read_file · 1 line read',
    ]
    assert section(second, SAVED_HEADING)[0].endswith(" · 9-run_shell.txt")
    assert parse_ledger(f"{ledger_header()}\n{second}").saved
    assert second.startswith("Through tool call 5 ")

    # A third compaction that kept nothing: the saved result stays named, numbers go on.
    third_history = [*compacted([], second, [user("more")]), *read("d.py", "z")]
    third = ledger_body(third_history, 10_000)
    assert third is not None
    assert {e.path for e in parse_ledger(f"{ledger_header()}\n{third}").saved.values()} == {
        "/r/9-run_shell.txt"
    }
    assert section(third, FILES_HEADING)[0].startswith('- call 6 · "d.py"')
    assert parse_ledger(f"{ledger_header()}\n{third}").last_call == 6


def test_parse_round_trips_odd_paths_and_commands() -> None:
    history = [
        user("go"),
        *read('dir with · dots/"quoted" file.txt', "a\n"),
        *failed(shell('grep -c "x" a | sort · uniq', 'weird " output · here\n[exit code 1]')),
        *saved(shell("cat a | tee b", "q\n" * 3), "/tmp/x y/1-run_shell.txt"),
    ]
    body = ledger_body(history, 10_000, long_chars=5)
    assert body is not None
    state = parse_ledger(f"{ledger_header()}\n{body}")
    assert set(state.files) == {'dir with · dots/"quoted" file.txt'}
    assert set(state.commands) == {'grep -c "x" a | sort · uniq', "cat a | tee b"}
    assert [e.path for e in state.saved.values()] == ["/tmp/x y/1-run_shell.txt"]
    again = ledger_body([*compacted([], body, []), user("x")], 10_000, long_chars=5)
    assert again is not None
    assert again.splitlines()[1:] == body.splitlines()[1:]


def test_damaged_ledger_lines_are_skipped() -> None:
    text = "\n".join([
        ledger_header(),
        "Through tool call 7 (id toolu_x).",
        FILES_HEADING,
        '- call 7 · "good.py" · read_file · 3 lines read',
        '- call x · "bad.py" · read_file',
        '- call 6 · "unterminated.py · read_file',
    ])
    state = parse_ledger(text)
    assert list(state.files) == ["good.py"]
    assert state.last_call == 7


def test_repeated_runs_keep_only_their_newest_saved_copy() -> None:
    history: list[Message] = [user("watch the log")]
    for i in range(5):
        history += saved(shell("cat logs/big.log", f"run {i}"), f"/r/{i}-run_shell.txt")
    history += saved(shell("cat other.log", "o"), "/r/9-run_shell.txt")
    body = ledger_body(history, 10_000)
    assert body is not None
    rows = section(body, SAVED_HEADING)
    assert [row.rsplit(" · ", 1)[1] for row in rows] == ["9-run_shell.txt", "4-run_shell.txt"]


def test_a_run_of_newer_saved_outputs_leaves_room_for_the_files_read_before_it() -> None:
    history: list[Message] = [user("read the notes, then run the checks")]
    for i in range(3):
        history.extend(read(f"notes/note-{i:02d}.md", "fact\n" * 20))
    for i in range(30):
        history.extend(saved(shell(f"cat work/w{i}.py", "x\n" * 9999 + "x"),
                             f"/home/r/tool-results/s/{i + 4}-run_shell.txt"))
    limit = 1_350  # about 450 dense tokens: a 20K window's bound
    body = ledger_body(history, limit)
    assert body is not None
    assert len(f"{ledger_header()}\n{body}") <= limit
    files = section(body, FILES_HEADING)
    assert files and files[0].startswith('- call 3 · "notes/note-02.md"')
    assert section(body, SAVED_HEADING)[0].startswith('- call 33 · run_shell "cat work/w29.py"')
