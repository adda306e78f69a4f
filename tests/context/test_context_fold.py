"""Folding: old exchanges with cleared results become lines; whole exchanges only; replayable."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from mini_claude.agent.history import History
from mini_claude.context.cache_anchor import stable_prefix_end
from mini_claude.context.fold import FOLD_HEADING, FOLD_MORE, fold_exchanges, folder_of
from mini_claude.context.rebuild import assemble, boundary_message
from mini_claude.conversation import (
    Conversation,
    Message,
    ResultState,
    ThinkingBlock,
    validate,
)
from mini_claude.settings import Settings
from mini_claude.transcript import Transcript, load_session
from tests.support.compact import call, exchange, user
from tests.support.context_builders import store_for

FOLDER = "/home/u/.mini-claude/tool-results/s1"


def _cleared(messages: list[Message], name: str) -> list[Message]:
    """The exchange with its result swapped for a placeholder, as snip or microcompact leave it."""
    call_message, answer = messages
    result = answer.tool_results[0]
    saved = f"{FOLDER}/{name}"
    cleared = replace(result, content=f"[cleared: … — full text at {saved}]", saved_path=saved,
                      state=ResultState.CLEARED, original_chars=9_000, original_lines=300)
    return [call_message, Message("user", [cleared])]


def _history() -> list[Message]:
    history = [user("review the package")]
    for i in range(4):
        read = exchange(call("read_file", path=f"src/m{i}.py"), output="x" * 9_000,
                        note=f"Reading m{i}: the FACT-{i} is in here.")
        history += _cleared(read, f"{i}-read.txt")
    history += exchange(call("list_files", path="src"), output="a.py\nb.py")  # short: kept inline
    history += exchange(call("read_file", path="src/big.py"), output="y" * 9_000)  # full: stays
    history += exchange(call("read_file", path="src/new.py"), output="z" * 100)
    return history


def test_cleared_exchanges_fold_into_lines_beside_the_request() -> None:
    history = _history()
    folded = fold_exchanges(history, keep_last=2, folder=FOLDER)
    assert folded is not None and folded.exchanges == 5
    messages = folded.messages
    assert validate(messages) == []
    assert len(messages) == len(history) - 10
    head = messages[0]
    assert head.blocks[0].text == "review the package"  # type: ignore[union-attr]
    fold = head.blocks[-1].text  # type: ignore[union-attr]
    assert fold.startswith(FOLD_HEADING) and FOLDER in fold
    assert "- read_file src/m0.py, 300 lines, 9,000 chars → 0-read.txt · said: Reading m0" in fold
    assert "the FACT-3 is in here." in fold
    assert "- list_files src → a.py\nb.py" in fold
    assert messages[1].tool_uses[0].input == {"path": "src/big.py"}  # not cleared: kept whole
    assert messages[-1].tool_results[0].content == "z" * 100  # the newest are never folded
    assert folded.removed == list(range(1, 11))


def test_a_second_fold_joins_the_first_and_the_boundary_takes_none() -> None:
    history = assemble(boundary_message("earlier work", "", 10, [], []), _history()[1:])
    assert folder_of(history) == FOLDER
    folded = fold_exchanges(history, keep_last=2, folder=FOLDER)
    assert folded is not None
    assert folded.messages[0].blocks == history[0].blocks  # the summary is never a receiver
    assert validate(folded.messages) == []
    receiver = next(i for i, m in enumerate(folded.messages)
                    if any(getattr(b, "text", "").startswith(FOLD_HEADING) for b in m.blocks))
    grep = _cleared(exchange(call("grep_search", pattern="TODO"), output="t" * 5_000), "9.txt")
    more = [*folded.messages[: receiver + 1], *grep, *folded.messages[receiver + 1 :]]
    again = fold_exchanges(more, keep_last=2, folder=FOLDER)
    assert again is not None
    texts = [b.text for m in again.messages for b in m.blocks if hasattr(b, "text")]
    assert sum(t.startswith(FOLD_HEADING) for t in texts) == 1
    assert any("grep_search TODO" in t and "→ 9.txt" in t for t in texts)
    # the second fold is a block of its own after the first, which stays byte for byte:
    # the prompt cache keeps everything up to it
    first_blocks = folded.messages[receiver].blocks
    assert again.messages[receiver].blocks[: len(first_blocks)] == first_blocks
    [added] = again.messages[receiver].blocks[len(first_blocks):]
    assert added.text.startswith(FOLD_MORE) and "grep_search TODO" in added.text  # type: ignore[union-attr]
    assert stable_prefix_end(again.messages) is added
    assert stable_prefix_end(folded.messages) is first_blocks[-1]


def test_thinking_and_full_results_are_never_folded() -> None:
    history = _history()
    thought = Message("assistant", [ThinkingBlock("hmm", "sig"), *history[1].blocks])
    history[1] = thought
    folded = fold_exchanges(history, keep_last=2, folder=FOLDER)
    assert folded is not None and folded.messages[1] is thought
    assert fold_exchanges(history[:1] + history[-4:], keep_last=2, folder=FOLDER) is None


def test_a_fold_is_replayed_when_the_session_is_resumed(
    settings: Settings, tmp_path: Path
) -> None:
    path = tmp_path / "s.jsonl"
    history = History(Transcript(path), Conversation(), store_for(settings), settings)
    for message in _history():
        history.append(message)
    folded = fold_exchanges(history.conversation.messages, keep_last=2, folder=FOLDER)
    assert folded is not None
    history.fold(folded)
    history.transcript.close()
    loaded = load_session(path)
    assert loaded.conversation.messages == history.conversation.messages
    assert len(loaded.original_messages) == len(_history())  # every exchange kept as it was


def test_a_damaged_fold_record_is_skipped_and_the_rest_loads(
    settings: Settings, tmp_path: Path
) -> None:
    path = tmp_path / "s.jsonl"
    history = History(Transcript(path), Conversation(), store_for(settings), settings)
    for message in _history():
        history.append(message)
    history.transcript.fold([len(_history()) + 5], {})
    history.transcript.close()
    loaded = load_session(path)
    assert loaded.conversation.messages == loaded.original_messages  # nothing folded
    assert any("damaged" in warning for warning in loaded.warnings)
