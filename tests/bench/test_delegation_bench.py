"""The inline-versus-task measurement runs end to end and shows the parent's context stay small."""

from __future__ import annotations

from mini_claude.bench.delegation import run, table


def test_delegating_the_exploration_keeps_the_parents_context_small() -> None:
    inline = run("inline", "anthropic", files=3, lines=80, follow_ups=2)
    task = run("task", "anthropic", files=3, lines=80, follow_ups=2)
    # The same exploration ran in both: 3 reads, a listing, a search, an answer.
    assert inline.requests == task.requests - 2  # the parent's own delegate-and-answer calls
    assert inline.parent_requests == 6 + 3 and task.parent_requests == 2 + 3
    # Inline, every read stays in the parent's prompt; delegated, only the answer does. Both
    # carry the same system prompt and tool schemas (about 2K tokens, and the project's path
    # in them), so the factor is on the whole prompt, not the reads alone.
    assert task.parent_peak_tokens * 2.5 < inline.parent_peak_tokens
    assert task.parent_last_tokens < inline.parent_last_tokens
    assert inline.dollars > 0 and task.dollars > 0
    assert "| anthropic | task |" in table([inline, task])
