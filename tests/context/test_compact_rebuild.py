"""The rebuilt history, on hand-made conversations: shape, budgets, escalation."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mini_claude.context.compact import Compactor
from mini_claude.context.rebuild import (
    ACK_TEXT,
    USER_TEXT_LABEL,
    FileRef,
    RebuildError,
    assemble,
    boundary_message,
    clear_tail_results,
    cut_points,
    history_problems,
    read_attachment,
    recent_files,
    select_user_texts,
    trim_tail_results,
    unread_start,
    user_texts,
)
from mini_claude.conversation import (
    Conversation,
    Message,
    ResultState,
    SummaryBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    validate,
)
from tests.support.compact import (
    call,
    exchange,
    make_compactor,
    planner,
    read,
    reply,
    settings_for,
    shell,
    user,
    words,
)


def boundary_of(messages: list[Message]) -> Message:
    first = messages[0]
    assert isinstance(first.blocks[0], SummaryBlock)
    return first


def kept_texts(boundary: Message) -> list[str]:
    prefix = USER_TEXT_LABEL + "\n"
    return [b.text[len(prefix):] for b in boundary.blocks
            if isinstance(b, TextBlock) and b.text.startswith(prefix)]


def attached(boundary: Message) -> list[str]:
    return [b.text for b in boundary.blocks
            if isinstance(b, TextBlock) and b.text.startswith("[File re-attached")]


def result_blocks(messages: list[Message]) -> list[ToolResultBlock]:
    return [b for m in messages for b in m.blocks if isinstance(b, ToolResultBlock)]


# ---- where the tail may start --------------------------------------------------------


def test_tail_never_starts_at_a_tool_result_and_keeps_the_pending_request() -> None:
    history = [user("one"), *read("a.py"), reply("done"), user("two")]
    # 0 user, 1 call, 2 result, 3 reply, 4 user
    assert cut_points(history) == [1, 3, 4]


def test_mid_turn_tail_keeps_at_least_the_last_exchange() -> None:
    history = [user("go"), *read("a.py"), *read("b.py")]
    # 0 user, 1 call, 2 result, 3 call, 4 result
    assert cut_points(history) == [1, 3]


def test_finished_turn_may_keep_an_empty_tail() -> None:
    history = [user("go"), *read("a.py"), reply("done")]
    assert cut_points(history)[-1] == len(history)


def test_running_tool_calls_stay_last() -> None:
    history = [user("go"), *read("a.py"), Message("assistant", [call("compact")])]
    assert cut_points(history)[-1] == len(history) - 1


def test_consecutive_pending_user_messages_are_all_kept() -> None:
    history = [user("one"), reply("hi"), user("two"), user("three")]
    assert cut_points(history)[-1] == 2


def test_something_new_must_be_compacted_after_an_earlier_boundary() -> None:
    boundary = boundary_message("old", "", 3, [], [])
    history = assemble(boundary, [user("next")])
    assert cut_points(history) == []
    history += [reply("answer"), user("again")]
    assert cut_points(history) == [3, 4]


# ---- the user's own words ---------------------------------------------------------------


def test_user_texts_newest_first_within_budget_kept_in_order() -> None:
    texts = ["a" * 50, "b" * 30, "c" * 30, "d" * 30]
    assert select_user_texts(texts, 95) == ["b" * 30, "c" * 30, "d" * 30]
    assert select_user_texts(texts, 59) == ["d" * 30]


def test_oversized_newest_text_keeps_head_and_tail() -> None:
    text = "HEAD" + "x" * 5_000 + "TAIL"
    [kept] = select_user_texts([text], 1_000)
    assert kept.startswith("HEAD") and kept.endswith("TAIL")
    assert "characters of this message left out" in kept
    assert len(kept) <= 1_000


def test_user_texts_from_an_earlier_boundary_carry_forward() -> None:
    old = boundary_message("old summary", "", 4, ["first request"], [])
    history = assemble(old, [user("second request"), reply("ok")])
    assert user_texts(history) == ["first request", "second request"]


# ---- files --------------------------------------------------------------------------------


def test_recent_files_newest_first_one_per_path() -> None:
    history = [user("go"), *read("a.py"), *read("./b.py", offset=40), *read("a.py"),
               *exchange(call("edit_file", path="c.py", old="x", new="y"))]
    assert recent_files(history) == [FileRef("c.py"), FileRef("a.py"), FileRef("./b.py", 40)]


def test_attachment_is_numbered_capped_and_resumes_at_the_offset(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text("".join(f"line {i}\n" for i in range(1, 501)))
    whole = read_attachment(tmp_path, FileRef("big.py"), 200)
    assert whole is not None
    assert len(whole.text) < 200 + 200  # header and continuation note on top of the cap
    assert "     1\tline 1" in whole.text
    assert "read_file with offset=" in whole.text
    later = read_attachment(tmp_path, FileRef("big.py", 300), 10_000)
    assert later is not None and "   300\tline 300" in later.text and "line 299\n" not in later.text


def test_attachment_skips_what_is_not_a_project_text_file(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "secret.txt").write_text("outside")
    (project / "blob.bin").write_bytes(b"\x00\x01\x02")
    assert read_attachment(project, FileRef("../secret.txt"), 1_000) is None
    assert read_attachment(project, FileRef(str(tmp_path / "secret.txt")), 1_000) is None
    assert read_attachment(project, FileRef("blob.bin"), 1_000) is None
    assert read_attachment(project, FileRef("missing.py"), 1_000) is None


# ---- whole plans -------------------------------------------------------------------------


def test_turn_boundary_plan_keeps_the_new_request_and_a_valid_history(tmp_path: Path) -> None:
    compactor = make_compactor(settings_for(tmp_path / "home"))
    history = [user("fix the parser"), *read("p.py", "x" * 2_000), reply("fixed"),
               user("now the lexer")]
    plan = planner(compactor, history, tmp_path).plan()
    messages = plan.messages
    assert validate(messages) == []
    assert messages[-1].text == "now the lexer"
    assert messages[1].text == ACK_TEXT or messages[1].role == "assistant"
    assert plan.compacted + plan.kept == len(history)
    roles = [m.role for m in messages]
    assert all(a != b for a, b in itertools.pairwise(roles))


def test_mid_turn_plan_drops_the_ack_and_keeps_the_current_request(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "home", window=60_000)  # effective 40K, tail 6K tokens
    compactor = make_compactor(settings)
    history = [user("old task"), reply("done"), user("review every file")]
    for i in range(30):
        history += read(f"f{i}.py", f"contents of file {i}\n" * 150)
    plan = planner(compactor, history, tmp_path).plan()
    messages = plan.messages
    assert history_problems(messages) == []
    assert messages[1].role == "assistant" and messages[1].text != ACK_TEXT
    assert "review every file" in kept_texts(boundary_of(messages))
    assert messages[-1] is not history[-1] and messages[-1].blocks == history[-1].blocks
    assert plan.tokens <= compactor.limits().target_tokens


def test_kept_user_text_respects_its_budget_and_skips_the_tail(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "home", kept_user_tokens=100)  # 400 chars
    compactor = make_compactor(settings)
    history: list[Message] = []
    for i in range(8):
        history += [user(f"request {i} " + "w" * 80), reply(f"answer {i}")]
    history.append(user("the newest request"))
    plan = planner(compactor, history, tmp_path).plan()
    texts = kept_texts(boundary_of(plan.messages))
    assert sum(len(t) for t in texts) <= 400
    compacted = [m.text for m in history[:plan.compacted] if m.role == "user"]
    assert len(compacted) > len(texts) >= 3
    assert texts == compacted[len(compacted) - len(texts):]
    assert "the newest request" not in texts
    assert plan.messages[-1].text == "the newest request"


def test_reattached_files_are_recent_fresh_and_capped(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "home", window=200_000, reattach_max_files=3,
                            reattach_file_tokens=250)
    compactor = make_compactor(settings)
    for name in "abcdef":
        (tmp_path / f"{name}.py").write_text(f"# {name} as it is now\n" + "code\n" * 2_000)
    history = [user("go")]
    for name in "abcdef":
        history += read(f"{name}.py", "stale copy")
    history += [reply("read them"), user("continue")]
    plan = planner(compactor, history, tmp_path).plan()
    files = attached(boundary_of(plan.messages))
    compacted_reads = [u.input["path"] for m in history[:plan.compacted] for u in m.tool_uses]
    assert len(compacted_reads) >= 4
    assert plan.files == compacted_reads[::-1][:3]
    assert len(files) == 3
    assert all("as it is now" in text for text in files)
    assert all(len(text) <= 250 * 4 + 200 for text in files)


def test_reattached_files_total_stays_near_a_tenth_of_a_small_window(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "home", window=32_000)  # effective 24K
    compactor = make_compactor(settings)
    for name in "abcde":
        (tmp_path / f"{name}.py").write_text("x = 1\n" * 5_000)
    history = [user("go")]
    for name in "abcde":
        history += read(f"{name}.py")
    history += [reply("ok"), user("next")]
    plan = planner(compactor, history, tmp_path).plan()
    total = sum(len(t) for t in attached(boundary_of(plan.messages)))
    assert 0 < total <= 24_000 * 0.10 * 4 + 600


def test_file_read_again_in_the_tail_is_not_reattached(tmp_path: Path) -> None:
    compactor = make_compactor(settings_for(tmp_path / "home"))
    (tmp_path / "a.py").write_text("a = 1\n")
    (tmp_path / "b.py").write_text("b = 2\n")
    history = [user("go"), *read("a.py"), *read("b.py"), reply("ok"), user("again"),
               *read("a.py")]
    plan = planner(compactor, history, tmp_path).plan()
    assert "a.py" not in plan.files


def summary_over_target(compactor: Compactor, history: list[Message], root: Path,
                        over_by: int) -> str:
    """A summary that puts the un-escalated plan ``over_by`` tokens above the target."""
    base = planner(compactor, history, root, summary="short").plan()
    assert not base.escalations
    needed = compactor.limits().target_tokens - base.tokens + over_by
    return words(max(1, needed))


def tokens_of(compactor: Compactor, messages: list[Message]) -> int:
    probe = Conversation(messages)
    probe.epoch = -1
    return compactor.meter.estimate(probe) - compactor.meter.estimate(Conversation())


def test_escalation_clears_older_tail_results_first(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "home", window=60_000)
    compactor = make_compactor(settings)
    history = [user("audit the logs")]
    for i in range(12):
        history += exchange(call("run_shell", command=f"cat a{i}"),
                            call("run_shell", command=f"cat b{i}"),
                            output=f"log line {i}\n" * 200)
    history += [reply("audited"), user("summarize findings")]
    summary = summary_over_target(compactor, history, tmp_path, over_by=200)
    plan = planner(compactor, history, tmp_path, summary=summary).plan()
    assert plan.tokens <= compactor.limits().target_tokens
    results = result_blocks(plan.messages)
    cleared = [b for b in results if b.state == ResultState.CLEARED]
    assert cleared and len(results) - len(cleared) == settings.keep_recent_results
    assert results[-1].state == ResultState.FULL
    assert plan.escalations == [
        f"cleared {len(cleared)} older tool results in the kept messages (full text saved)"
    ]
    for block in cleared:
        assert block.saved_path and Path(block.saved_path).is_file()
        assert "log line" in Path(block.saved_path).read_text()
        assert block.saved_path in block.content
    assert all(b.state == ResultState.FULL for b in result_blocks(history))  # originals untouched


def test_escalation_keeps_fewer_messages_when_clearing_is_not_enough(tmp_path: Path) -> None:
    compactor = make_compactor(settings_for(tmp_path / "home", window=60_000))
    history = [user("write the report")]
    for i in range(12):
        history += [*read(f"r{i}.md"), reply(words(600))]  # long replies cannot be cleared
        history.append(user(f"and section {i}"))
    summary = summary_over_target(compactor, history, tmp_path, over_by=300)
    plan = planner(compactor, history, tmp_path, summary=summary).plan()
    assert plan.tokens <= compactor.limits().target_tokens
    assert any(note.startswith("kept the newest") for note in plan.escalations)
    assert plan.messages[-1].text == "and section 11"
    assert history_problems(plan.messages) == []


def notes_beyond_the_tail(notes: list[str]) -> list[str]:
    """Escalations after the tail was shortened (the tail here is a short reply at most)."""
    return [n for n in notes if not n.startswith("kept the newest")]


TEXTS = [f"{name} " + words(1_000) for name in ("first", "second", "third")]


def _files_and_texts_history(root: Path) -> list[Message]:
    for name in ("a.py", "b.py"):
        (root / name).write_text("stuff = 1\n" * 250)
    return [user(TEXTS[0]), *read("a.py"), *read("b.py"), reply("ok"), user(TEXTS[1]),
            reply("ok"), user(TEXTS[2]), reply("ok"), user("newest")]


def test_escalation_drops_reattached_files_before_user_text(tmp_path: Path) -> None:
    compactor = make_compactor(settings_for(tmp_path / "home", window=40_000))
    history = _files_and_texts_history(tmp_path)
    summary = summary_over_target(compactor, history, tmp_path, over_by=300)
    plan = planner(compactor, history, tmp_path, summary=summary).plan()
    assert plan.tokens <= compactor.limits().target_tokens
    assert notes_beyond_the_tail(plan.escalations) == ["re-attached 1 of 2 recent files"]
    assert plan.files == ["b.py"]  # the most recent read stays
    assert kept_texts(boundary_of(plan.messages)) == TEXTS


def test_escalation_then_keeps_only_the_newest_user_text(tmp_path: Path) -> None:
    compactor = make_compactor(settings_for(tmp_path / "home", window=40_000))
    history = _files_and_texts_history(tmp_path)
    base = planner(compactor, history, tmp_path, summary="short").plan()
    files = sum(tokens_of(compactor, [user(t)]) for t in attached(boundary_of(base.messages)))
    summary = summary_over_target(compactor, history, tmp_path, over_by=files + 300)
    plan = planner(compactor, history, tmp_path, summary=summary).plan()
    assert plan.tokens <= compactor.limits().target_tokens
    assert plan.files == []
    assert kept_texts(boundary_of(plan.messages)) == TEXTS[1:]
    assert notes_beyond_the_tail(plan.escalations) == [
        "re-attached 0 of 2 recent files", "kept 2 of 3 earlier user messages word for word"]
    assert plan.messages[-1].text == "newest"


def test_newest_results_too_big_for_the_target_are_cut_not_cleared(tmp_path: Path) -> None:
    compactor = make_compactor(settings_for(tmp_path / "home", window=24_000))  # target 9K
    history = [user("review every file"), *read("a.py", "a" * 4_000)]
    history += exchange(call("read_file", path="huge.py"), call("read_file", path="big.py"),
                        output="HEAD\n" + "x = 1\n" * 6_000 + "TAIL\n")  # 2 x 9K tokens
    plan = planner(compactor, history, tmp_path).plan()
    assert plan.tokens <= compactor.limits().target_tokens
    newest = result_blocks(plan.messages)[-2:]
    for block in newest:
        assert block.state == ResultState.BUDGETED
        assert block.content.startswith("HEAD") and block.content.rstrip().endswith("TAIL")
        assert block.saved_path and "x = 1" in Path(block.saved_path).read_text()
        assert block.saved_path in block.content
    assert any(n.startswith("cut 2 of the newest tool results") for n in plan.escalations)
    assert history_problems(plan.messages) == []


def test_a_summary_that_leaves_no_headroom_is_refused(tmp_path: Path) -> None:
    compactor = make_compactor(settings_for(tmp_path / "home", window=40_000))
    history = [user("go"), *read("a.py"), reply("ok"), user("next")]
    with pytest.raises(RebuildError, match="does not leave enough room"):
        planner(compactor, history, tmp_path, summary=words(15_000)).plan()


def test_a_summary_over_the_target_is_kept_when_the_history_ends_smaller(tmp_path: Path) -> None:
    compactor = make_compactor(settings_for(tmp_path / "home", window=40_000))
    history = [user("go"), *read("a.py"), reply("ok"), user("next")]
    over = planner(compactor, history, tmp_path, summary=words(15_000))
    over.limits = replace(over.limits, accept_below=over.limits.target_tokens + 20_000)
    plan = over.plan()
    assert over.limits.target_tokens < plan.tokens < over.limits.accept_below
    assert any("above the" in note and "target" in note for note in plan.escalations)
    over.limits = replace(over.limits, accept_below=plan.tokens)  # not smaller: refused
    with pytest.raises(RebuildError, match="does not leave enough room"):
        over.plan()


def test_nothing_to_compact_is_an_error(tmp_path: Path) -> None:
    compactor = make_compactor(settings_for(tmp_path / "home"))
    with pytest.raises(RebuildError, match="nothing to compact"):
        planner(compactor, [user("hello")], tmp_path).plan()


# ---- invariants on many shapes -----------------------------------------------------------


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """Valid histories: turns of exchanges, ending at a boundary, mid-turn, or pending."""
    history: list[Message] = []
    turns = draw(st.integers(1, 6))
    for turn in range(turns):
        history.append(user(f"request {turn} " + "u" * draw(st.integers(0, 3_000))))
        for _ in range(draw(st.integers(0, 6))):
            size = draw(st.integers(1, 12_000))
            calls = draw(st.integers(1, 3))
            history += exchange(*[call("run_shell", command=f"c{turn}") for _ in range(calls)],
                                output="o" * size)
        if turn < turns - 1 or draw(st.booleans()):
            history.append(reply(f"finished {turn}"))
    ending = draw(st.sampled_from(["as is", "pending", "running"]))
    if ending == "pending" and history[-1].role == "assistant":
        history.append(user("next request"))
    elif ending == "running" and history[-1].role == "user":
        history.append(Message("assistant", [call("compact")]))
    return history


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(history=histories(), window=st.sampled_from([32_000, 60_000, 200_000]),
       summary_share=st.floats(0.0, 1.1))
def test_rebuild_invariants(
    tmp_path: Path, history: list[Message], window: int, summary_share: float
) -> None:
    """``summary_share`` is the summary's size as a share of the headroom target."""
    compactor = make_compactor(settings_for(tmp_path / "home", window=window))
    summary = words(max(1, int(summary_share * compactor.limits().target_tokens)))
    try:
        plan = planner(compactor, history, tmp_path, summary=summary).plan()
    except RebuildError:
        return
    messages = plan.messages
    assert history_problems(messages) == []
    assert plan.tokens <= compactor.limits().target_tokens
    assert Conversation(messages).total_chars > 0
    tail = messages[1:] if messages[1].role == "assistant" and messages[1].text != ACK_TEXT \
        else messages[2:]
    assert len(tail) == plan.kept
    for kept, original in zip(tail, history[plan.compacted:], strict=True):
        assert kept.role == original.role
        assert [type(b) for b in kept.blocks] == [type(b) for b in original.blocks]
    if history[-1].role == "user":
        assert messages[-1].blocks == history[-1].blocks or messages[-1].tool_results
    if tail:
        assert (messages[1].text == ACK_TEXT) == (tail[0].role == "user")


def test_the_last_resort_cut_spares_results_the_model_has_not_read(tmp_path: Path) -> None:
    """A result that came back after the last model call is cut only when nothing else fits:
    its middle would be gone before the model saw it once."""
    from tests.support.context_builders import store_for

    store = store_for(settings_for(tmp_path))
    old_text, fresh_text = words(4_000), words(4_000)
    tail = [user("go"), *shell("cat old.log", old_text), *shell("tail worker.log", fresh_text)]
    assert unread_start(tail) == len(tail) - 1
    spared, trimmed = trim_tail_results(tail, 2_000, store, "t.jsonl", spare_unread=True)
    assert trimmed == 1
    assert spared[2].blocks[0].content != old_text  # type: ignore[union-attr]
    assert spared[-1].blocks[0].content == fresh_text  # type: ignore[union-attr]
    both, trimmed = trim_tail_results(tail, 2_000, store, "t.jsonl")
    assert trimmed == 2 and both[-1].blocks[0].content != fresh_text  # type: ignore[union-attr]


def test_a_summarized_range_never_splits_a_call_from_its_result() -> None:
    from mini_claude.context.rebuild import pair_safe_range, summarized_range
    from mini_claude.conversation import (
        Message,
        SummaryBlock,
        TextBlock,
        ToolResultBlock,
        ToolUseBlock,
        validate,
    )

    call = Message("assistant", [ToolUseBlock("c1", "read_file", {"path": "a.txt"})])
    result = Message("user", [ToolResultBlock("c1", "alpha")])
    messages = [Message("user", [TextBlock("one")]), call, result,
                Message("assistant", [TextBlock("done")]), Message("user", [TextBlock("two")]),
                Message("assistant", [TextBlock("ok")])]
    assert pair_safe_range(messages, 2, 2) == (0, 3)  # start back to the turn, end past result
    start, end = pair_safe_range(messages, 0, 2)
    assert (start, end) == (0, 3)
    boundary = Message("user", [SummaryBlock("s")])
    rebuilt = summarized_range(messages, start, end, boundary)
    assert rebuilt[0] is boundary and rebuilt[1:] == messages[3:]  # the reply follows it
    assert validate(rebuilt) == []
    from_here = summarized_range(messages, 4, len(messages), boundary)
    assert from_here[:4] == messages[:4] and from_here[4] is boundary
    assert validate(from_here) == []


def test_a_compaction_right_after_a_big_result_keeps_it_whole_while_the_history_is_taken(
    tmp_path: Path,
) -> None:
    """A summary that comes between a tool call and the model's reading of its result (the
    result pushed the history over the threshold) must not cut what the model asked for:
    a history over the target but below ``accept_below`` is taken, so the result stays."""
    compactor = make_compactor(settings_for(tmp_path / "home", window=100_000))
    target = compactor.limits().target_tokens
    fresh = words(target + 2_000)  # alone more than the target allows
    history = [user("go"), *shell("cat a.log", words(3_000)), *shell("cat b.log", words(3_000)),
               *shell("cat big.log", fresh)]
    base = planner(compactor, history, tmp_path)
    taken = replace(base, limits=replace(base.limits, accept_below=target * 3)).plan()
    assert taken.messages[-1].blocks[0].content == fresh  # type: ignore[union-attr]
    assert target < taken.tokens < target * 3
    strict = replace(base, limits=replace(base.limits, accept_below=0)).plan()
    assert strict.messages[-1].blocks[0].content != fresh  # type: ignore[union-attr]
    assert strict.tokens <= target


def test_clearing_the_tail_never_clears_results_the_model_has_not_read(tmp_path: Path) -> None:
    from tests.support.context_builders import store_for

    store = store_for(settings_for(tmp_path))
    calls = Message("assistant", [ToolUseBlock("u1", "run_shell", {"command": "a"}),
                                  ToolUseBlock("u2", "run_shell", {"command": "b"})])
    results = Message("user", [ToolResultBlock("u1", words(900)),
                               ToolResultBlock("u2", words(900))])
    tail = [user("go"), *shell("cat old.log", words(900)), calls, results]
    cleared, count = clear_tail_results(tail, 1, store, "t.jsonl")
    assert count == 1
    assert cleared[-1].blocks == results.blocks
    assert cleared[2].blocks[0].state == ResultState.CLEARED  # type: ignore[union-attr]
