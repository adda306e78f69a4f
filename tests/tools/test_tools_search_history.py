"""search_history over a real transcript and result store: origins, caps, damage, keys."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from mini_claude.context.store import DiskResultStore
from mini_claude.conversation import Message, ResultState, TextBlock, ToolResultBlock, ToolUseBlock
from mini_claude.settings import Settings
from mini_claude.tools.base import ToolContext
from mini_claude.tools.builtin.grep_search import PythonBackend
from mini_claude.tools.registry import default_registry
from mini_claude.transcript import Transcript
from tests.support.tools import run

KEY = "sk-ant-test-0123456789abcdef"


def settings() -> Settings:
    return Settings(home=Path(os.environ["MINI_CLAUDE_HOME"]), api_keys={"anthropic": KEY})


def use(use_id: str, name: str, **args: str) -> Message:
    return Message("assistant", [TextBlock(f"calling {name}"), ToolUseBlock(use_id, name, args)])


def result(use_id: str, name: str, target: str, content: str) -> Message:
    return Message("user", [ToolResultBlock(use_id, content, tool_name=name, target=target)])


class Session:
    """A transcript and a result store written the way the agent writes them."""

    def __init__(self) -> None:
        self.settings = settings()
        self.store = DiskResultStore(self.settings, "sess-1")
        self.transcript = Transcript.create(self.settings.transcripts_dir, "sess-1", {},
                                            secrets=[KEY])

    def context(self, tmp_path: Path) -> ToolContext:
        return ToolContext(root=tmp_path, settings=self.settings,
                           transcript_path=self.transcript.path,
                           results_folder=self.store.folder)

    def exchange(self, use_id: str, name: str, target: str, content: str) -> None:
        key = "command" if name == "run_shell" else "path"
        self.transcript.message(use(use_id, name, **{key: target}))
        self.transcript.message(result(use_id, name, target, content))

    def cleared(self, use_id: str, name: str, target: str, content: str) -> str:
        """The result saved to the store and replaced by a placeholder, as a tier does it."""
        path = self.store.save(name, content)
        assert path is not None
        block = ToolResultBlock(use_id, f"[cleared; saved at {path}]", tool_name=name,
                                target=target, saved_path=path, state=ResultState.CLEARED)
        self.transcript.edit("cleared", block)
        return path


def search(ctx: ToolContext, **args: object) -> str:
    registry = default_registry(PythonBackend())
    output = run(registry.execute("search_history", dict(args), ctx))
    assert not output.is_error, output.content
    return output.content


@pytest.fixture
def session(isolated_home: Path) -> Session:
    s = Session()
    s.transcript.message(Message("user", [TextBlock("find the retry limit")]))
    s.exchange("toolu_1", "read_file", "notes/n01.md", "intro\nFACT-01 the retry limit is 7\n")
    s.exchange("toolu_2", "run_shell", "cat big.log",
               "".join(f"row {i}\n" for i in range(3000)) + "FACT-02 deep in the log\n")
    s.cleared("toolu_2", "run_shell", "cat big.log",
              "".join(f"row {i}\n" for i in range(3000)) + "FACT-02 deep in the log\n")
    s.transcript.message(Message("user", [TextBlock(f"my key is {KEY}, keep it")]))
    return s


def test_matches_name_their_message_tool_call_and_line(session: Session, tmp_path: Path) -> None:
    out = search(session.context(tmp_path), query=r"FACT-0\d")
    assert 'transcript message 3, read_file result for "notes/n01.md" (call toolu_1)' in out
    assert "  line 2: FACT-01 the retry limit is 7" in out
    # The cleared result: found once, in the transcript, with where its saved copy is.
    assert out.count("FACT-02 deep in the log") == 1
    assert "line 3001: FACT-02" in out
    assert "full text also saved at " + str(session.store.folder) in out


def test_saved_results_the_transcript_lacks_are_searched(session: Session, tmp_path: Path) -> None:
    path = session.store.save("run_shell", "spilled\nFACT-03 only on disk\n")
    out = search(session.context(tmp_path), query="fact-03")
    assert f"saved result {path}:" in out
    assert "line 2: FACT-03 only on disk" in out


def test_literal_queries_and_bad_regexes(session: Session, tmp_path: Path) -> None:
    ctx = session.context(tmp_path)
    assert "No line" in search(ctx, query="limit is 7 (", literal=True)
    out = search(ctx, query="FACT-01 the retry limit is 7", literal=True)
    assert "plain text" in out and "line 2" in out
    registry = default_registry(PythonBackend())
    bad = run(registry.execute("search_history", {"query": "limit is ("}, ctx))
    assert bad.is_error and "invalid regex" in bad.content and "literal" in bad.content


def test_caps_on_matches_and_characters(session: Session, tmp_path: Path) -> None:
    ctx = session.context(tmp_path)
    out = search(ctx, query=r"^row \d+$", limit=5)
    assert out.count("  line ") == 5
    assert "showing 5 of 3,000 matching lines" in out
    wide = search(ctx, query=r"^row \d+$", limit=500)
    assert len(wide) < 21_000 and "showing" in wide


def test_torn_and_damaged_lines_are_skipped_and_reported(
    session: Session, tmp_path: Path
) -> None:
    path = session.transcript.path
    session.transcript.close()
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"type": "message", "message": {"role": "user"}}\n')  # no blocks
        handle.write("not json at all\n")
        handle.write('{"type": "message", "message": {"role": "user", "blocks": [{"kind": "te')
    out = search(session.context(tmp_path), query="retry limit")
    assert "FACT-01 the retry limit is 7" in out
    assert "skipped 3 damaged transcript lines" in out and "the last line" in out


def test_keys_never_come_back(session: Session, tmp_path: Path) -> None:
    # A key that reached a saved result by some other way is masked too.
    session.store.save("run_shell", f"export ANTHROPIC_API_KEY={KEY}\n")
    ctx = session.context(tmp_path)
    for query in ("my key is", "ANTHROPIC_API_KEY", "sk-ant", KEY):
        out = search(ctx, query=query, literal=True)
        assert KEY not in out
    assert "[redacted]" in search(ctx, query="my key is")
    assert "No line" in search(ctx, query="sk-ant-test", literal=True)


def test_long_lines_are_searched_in_pieces(session: Session, tmp_path: Path) -> None:
    line = "x" * 5_000 + " FACT-09 at the far end"
    session.exchange("toolu_9", "read_file", "min.js", line)
    out = search(session.context(tmp_path), query="FACT-09")
    assert "FACT-09 at the far end" in out
    assert all(len(row) < 600 for row in out.splitlines())


def test_no_transcript_yet(tmp_path: Path, isolated_home: Path) -> None:
    ctx = ToolContext(root=tmp_path, settings=settings(),
                      transcript_path=tmp_path / "missing.jsonl", results_folder=None)
    out = search(ctx, query="anything")
    assert out.startswith("Nothing to search yet") and "no transcript" in out


def test_the_rest_of_a_cut_result_is_found(session: Session, tmp_path: Path) -> None:
    """A budgeted result keeps head and tail in context; the middle is still searchable."""
    middle = "".join(f"entry {i}\n" for i in range(100)) + "FACT-05 in the middle\n"
    session.exchange("toolu_5", "grep_search", "def ", middle)
    block = ToolResultBlock("toolu_5", "head...tail", tool_name="grep_search", target="def ")
    session.transcript.edit("budgeted", replace(block, state=ResultState.BUDGETED))
    out = search(session.context(tmp_path), query="FACT-05")
    assert "grep_search result for \"def\"" in out and "line 101: FACT-05" in out
