"""Transcript lines are what rewinds name: numbered by newlines only, replayed along rewinds."""

from __future__ import annotations

from pathlib import Path

from mini_claude.conversation import Message, TextBlock
from mini_claude.transcript import Transcript, load_session, read_records


def test_a_message_holding_unicode_line_separators_stays_one_line(tmp_path: Path) -> None:
    transcript = Transcript.create(tmp_path, "s1", {"cwd": str(tmp_path)})
    text = "first\u2028second\u0085third\x1cfourth"
    transcript.message(Message("user", [TextBlock(text)]))
    transcript.close()
    assert len(read_records(transcript.path)) == 2
    loaded = load_session(transcript.path)
    assert loaded.warnings == []
    assert loaded.conversation.messages[0].text == text


def test_rewinds_replay_to_the_line_they_name_and_back(tmp_path: Path) -> None:
    transcript = Transcript.create(tmp_path, "s1", {"cwd": str(tmp_path)})
    for word in ("one", "two", "three"):
        transcript.message(Message("user", [TextBlock(word)]))
        transcript.message(Message("assistant", [TextBlock(f"ok {word}")]))
    transcript.write({"type": "rewind", "id": "r1", "to_line": 4, "conversation": True})
    assert [m.text for m in load_session(transcript.path).conversation.messages] == [
        "one", "ok one"]
    transcript.write({"type": "rewind", "id": "r2", "to_line": 8, "conversation": True})
    transcript.close()  # the second rewind undoes the first: line 8 is the first rewind
    assert [m.text for m in load_session(transcript.path).conversation.messages] == [
        "one", "ok one", "two", "ok two", "three", "ok three"]
