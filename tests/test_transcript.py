import json
import os
import stat
from pathlib import Path

from mini_claude.conversation import (
    Message,
    ResultState,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    user_text,
    validate,
)
from mini_claude.transcript import Transcript, list_sessions, load_session


def test_replay_applies_edits_and_compactions(tmp_path: Path) -> None:
    t = Transcript.create(tmp_path, "s1", {"cwd": "/proj"})
    original = ToolResultBlock("t1", "full text " * 50, tool_name="read_file")
    t.message(user_text("read it"))
    t.message(Message("assistant", [ToolUseBlock("t1", "read_file", {"path": "a.py"})]))
    t.message(Message("user", [original]))
    t.edit(
        "cleared",
        ToolResultBlock("t1", "[snipped]", tool_name="read_file", state=ResultState.CLEARED),
    )
    t.close()
    loaded = load_session(tmp_path / "s1.jsonl")
    assert loaded.conversation.messages[2].tool_results[0].content == "[snipped]"
    assert loaded.original_messages[2].tool_results[0].content == original.content
    t2 = Transcript(tmp_path / "s1.jsonl")
    t2.compaction("auto", "sum", 100, 10, [user_text("summary here")])
    t2.message(Message("assistant", [TextBlock("ok")]))
    t2.close()
    again = load_session(tmp_path / "s1.jsonl")
    assert [m.text for m in again.conversation.messages] == ["summary here", "ok"]


def test_torn_last_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    t = Transcript.create(tmp_path, "s2", {"cwd": "/p"})
    t.message(user_text("hello"))
    t.close()
    with (tmp_path / "s2.jsonl").open("a") as f:
        f.write('{"type": "message", "message": {"role": "assis')
    loaded = load_session(tmp_path / "s2.jsonl")
    assert [m.text for m in loaded.conversation.messages] == ["hello"]
    assert loaded.warnings and "last line" in loaded.warnings[0]


def test_dangling_tool_use_is_closed_on_load(tmp_path: Path) -> None:
    t = Transcript.create(tmp_path, "s3", {"cwd": "/p"})
    t.message(user_text("run"))
    t.message(Message("assistant", [ToolUseBlock("t9", "run_shell", {"command": "sleep 100"})]))
    t.close()
    loaded = load_session(tmp_path / "s3.jsonl")
    assert validate(loaded.conversation.messages) == []
    assert loaded.repair is not None
    assert "interrupted" in loaded.repair.tool_results[0].content


def test_files_are_owner_only_and_secrets_redacted(tmp_path: Path) -> None:
    t = Transcript.create(tmp_path / "tr", "s4", {"cwd": "/p"}, secrets=["sk-ant-topsecret-123"])
    t.message(user_text("my key is sk-ant-topsecret-123"))
    t.close()
    path = tmp_path / "tr" / "s4.jsonl"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "tr").st_mode) == 0o700
    assert "topsecret" not in path.read_text()


def test_list_sessions_filters_by_folder_newest_first(tmp_path: Path) -> None:
    for sid, cwd in (("a", "/x"), ("b", "/y"), ("c", "/x")):
        t = Transcript.create(tmp_path, sid, {"cwd": cwd})
        t.message(user_text(f"prompt {sid}"))
        t.close()
    os.utime(tmp_path / "a.jsonl", (1, 1))
    found = list_sessions(tmp_path, Path("/x"))
    assert [s.session_id for s in found] == ["c", "a"]
    assert found[0].first_prompt == "prompt c"
    assert all(
        json.loads((tmp_path / f"{s}.jsonl").read_text().splitlines()[0])["type"] == "session"
        for s in "abc"
    )


def test_a_session_that_never_got_a_message_is_not_listed(tmp_path: Path) -> None:
    for sid in ("started-and-left", "used"):
        t = Transcript.create(tmp_path, sid, {"cwd": "/x"})
        t.event("mcp", note="a server connected")
        if sid == "used":
            t.message(user_text("a real question"))
        t.close()
    assert [s.session_id for s in list_sessions(tmp_path, Path("/x"))] == ["used"]


def _main_call(t: Transcript, reply: str, tokens: int, **extra: object) -> None:
    """A reply appended, then its usage, as the agent records a model call."""
    t.message(Message("assistant", [TextBlock(reply)]))
    t.event("usage", model="m", input_tokens=0, cache_read_tokens=tokens - 100,
            cache_write_tokens=100, output_tokens=7, **extra)


def test_the_last_prompt_is_kept_only_while_the_history_has_only_grown(tmp_path: Path) -> None:
    t = Transcript.create(tmp_path, "s2", {"cwd": "/proj"})
    t.message(user_text("first"))
    _main_call(t, "one", 1_000, fixed_chars=5_000)
    t.message(user_text("second"))
    _main_call(t, "two", 1_400, fixed_chars=5_200)
    t.event("usage", model="m", input_tokens=9_999, summary=True)  # a notes update: not it
    t.close()
    last = load_session(tmp_path / "s2.jsonl").last_prompt
    assert last is not None
    assert (last.tokens, last.messages, last.fixed_chars) == (1_400, 3, 5_200)

    t = Transcript(tmp_path / "s2.jsonl")
    t.compaction("auto", "sum", 100, 10, [user_text("summary here")])
    t.close()
    assert load_session(tmp_path / "s2.jsonl").last_prompt is None  # the history was rebuilt

    t = Transcript(tmp_path / "s2.jsonl")
    t.message(user_text("third"))
    _main_call(t, "three", 900)  # written before fixed_chars was recorded: not trusted
    t.close()
    assert load_session(tmp_path / "s2.jsonl").last_prompt is None
