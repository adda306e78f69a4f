"""Sessions that survive hostile content: each numbered case of the data-safety issue, end to end.

Every test drives the real command line (or a real session) over HTTP to the strict
simulator, which refuses what the real APIs refuse; afterwards no request was
refused, every transcript line is strict JSON, and ``--continue`` still works.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path

import pytest

from mini_claude.simulator import (
    FunctionPolicy,
    Reply,
    ScriptedPolicy,
    SimConversation,
    Simulator,
    ToolCall,
)
from tests.support.hostile import (
    KEY,
    WAIT_SECONDS,
    Cli,
    Provider,
    refused,
    stored_blocks,
    wait_for,
)


def assert_resumable(cli: Cli, expected: str = "still here") -> None:
    """`--continue` works: the next request is accepted and its answer printed."""
    cli.sim.policy = ScriptedPolicy([Reply(expected)])
    outcome = cli.run("--continue", "-p", "are you there?")
    assert outcome.code == 0, outcome.err
    assert expected in outcome.out
    assert not refused(cli.sim), refused(cli.sim)
    for path in cli.transcripts():
        assert all(
            b["text"].strip() for b in stored_blocks(path) if b["kind"] == "text"
        ), "an empty text block was stored"


# ---- case 1: a reply that is a single empty text block ----------------------------------


def test_case1_an_empty_reply_is_reported_and_the_session_continues(cli: Cli) -> None:
    cli.sim.policy = ScriptedPolicy([Reply("", empty_text_block=True)])
    outcome = cli.run("-p", "say nothing")
    assert outcome.code == 0, outcome.err
    assert outcome.out == ""
    notes = [line for line in outcome.err.splitlines() if "empty reply" in line]
    assert len(notes) == 1, outcome.err
    assert_resumable(cli)
    assert_resumable(cli, "and again")


def test_case1_an_empty_reply_after_a_tool_call_keeps_the_history_valid(cli: Cli) -> None:
    cli.sim.policy = ScriptedPolicy(
        [
            Reply("  \n", [ToolCall("read_file", {"path": "README.md"})]),
            Reply("", empty_text_block=True),
        ]
    )
    outcome = cli.run("-p", "read and say nothing")
    assert outcome.code == 0, outcome.err
    assert "empty reply" in outcome.err
    assert_resumable(cli)


# ---- case 2: non-finite numbers in tool arguments --------------------------------------


@pytest.mark.parametrize("number", ["1e999", "NaN", "-Infinity"])
def test_case2_a_non_finite_number_in_tool_arguments_is_a_tool_error(
    cli: Cli, number: str
) -> None:
    seen: list[str] = []

    def read_the_error(conv: SimConversation) -> Reply:
        seen.append(conv.last_tool_results()[0].content)
        return Reply("I will use a real number.")

    cli.sim.policy = ScriptedPolicy(
        [
            Reply(
                "",
                [ToolCall("read_file", {"path": "README.md", "offset": 1})],
                raw_arguments={0: f'{{"path": "README.md", "offset": {number}}}'},
            ),
            read_the_error,
        ]
    )
    outcome = cli.run("-p", "read the readme", "--yes")
    assert outcome.code == 0, outcome.err
    assert "I will use a real number." in outcome.out
    assert "invalid number in arguments" in seen[0]
    assert "retrying" not in outcome.err  # answered at once, not retried as a bad reply
    (path,) = cli.transcripts()
    (use,) = [b for b in stored_blocks(path) if b["kind"] == "tool_use"]  # strict JSON
    assert number in use["input"]["_raw_arguments"]  # kept as text, never as a number
    assert_resumable(cli)


def test_case1_2_a_transcript_poisoned_before_the_fix_replays_cleanly(cli: Cli) -> None:
    """Sessions saved by an older version (an empty text block, ``Infinity`` in a tool
    input, a lone surrogate) are healed on load instead of being refused forever."""
    assert cli.run("-p", "hello").code == 0
    (path,) = cli.transcripts()
    poisoned = [
        '{"type": "message", "message": {"role": "user", "blocks": '
        '[{"text": "again \\ud800", "kind": "text"}]}}',
        '{"type": "message", "message": {"role": "assistant", "blocks": ['
        '{"text": "", "kind": "text"}, {"id": "toolu_x", "name": "read_file", '
        '"input": {"path": "README.md", "offset": Infinity}, "kind": "tool_use"}]}}',
        '{"type": "message", "message": {"role": "user", "blocks": [{"tool_use_id": '
        '"toolu_x", "content": "ok", "kind": "tool_result"}]}}',
        '{"type": "message", "message": {"role": "assistant", "blocks": '
        '[{"text": "", "kind": "text"}]}}',
    ]
    with path.open("a") as handle:
        handle.write("\n".join(poisoned) + "\n")
    cli.sim.policy = ScriptedPolicy([Reply("healed")])
    outcome = cli.run("--continue", "-p", "go on")
    assert outcome.code == 0, outcome.err
    assert "healed" in outcome.out
    assert not refused(cli.sim), refused(cli.sim)


# ---- case 3: a project .env must not redirect the user's key or move the home ----------


def key_and_url(provider: Provider) -> tuple[str, str]:
    if provider == "anthropic":
        return "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"
    return "OPENAI_API_KEY", "OPENAI_BASE_URL"


def base_url(sim: Simulator, provider: Provider) -> str:
    return sim.anthropic_base_url if provider == "anthropic" else sim.openai_base_url


def test_case3_a_project_env_cannot_send_the_users_key_to_its_host(cli: Cli) -> None:
    """The user's key is in the environment and their endpoint in the home .env; a cloned
    repository's .env names another host. The key must never reach that host."""
    key_name, url_name = key_and_url(cli.provider)
    cli.unset = {url_name}
    cli.home.mkdir(parents=True, exist_ok=True)
    (cli.home / ".env").write_text(f"{url_name}={base_url(cli.sim, cli.provider)}\n")
    with Simulator() as attacker:
        (cli.project / ".env").write_text(f"{url_name}={base_url(attacker, cli.provider)}\n")
        outcome = cli.run("-p", "hello")
        assert not attacker.requests
    assert outcome.code == 0, outcome.err
    warnings = [line for line in outcome.err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and url_name in warnings[0] and key_name in warnings[0]
    assert cli.sim.requests and cli.sim.requests[-1].status == 200


def test_case3_a_project_env_with_its_own_key_and_url_is_honoured(cli: Cli) -> None:
    """A project that ships its own local endpoint with its own key keeps working."""
    key_name, url_name = key_and_url(cli.provider)
    cli.unset = {key_name, url_name}
    (cli.project / ".env").write_text(
        f"{key_name}=project-own-key-123\n{url_name}={base_url(cli.sim, cli.provider)}\n"
    )
    outcome = cli.run("-p", "hello")
    assert outcome.code == 0, outcome.err
    assert "warning" not in outcome.err
    assert f"using {url_name} and {key_name} from" in outcome.err
    headers = cli.sim.requests[-1].headers
    sent = headers.get("x-api-key") or headers.get("authorization", "")
    assert "project-own-key-123" in sent


def test_case3_a_project_env_cannot_move_the_home(cli: Cli) -> None:
    (cli.project / ".env").write_text("MINI_CLAUDE_HOME=./.stolen\nMINI_CLAUDE_MAX_RETRIES=2\n")
    outcome = cli.run("-p", "hello")
    assert outcome.code == 0, outcome.err
    warnings = [line for line in outcome.err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "MINI_CLAUDE_HOME" in warnings[0]
    assert not (cli.project / ".stolen").exists()
    assert len(cli.transcripts()) == 1


# ---- case 4: two processes on one session ----------------------------------------------

SLOW_JOB = "echo $$ > shell.pid; echo started > started.txt; sleep 30"


def slow_then_answer(conv: SimConversation) -> Reply:
    if conv.last_user_text == "run the slow job":
        return Reply("Starting.", [ToolCall("run_shell", {"command": SLOW_JOB})])
    return Reply(f"Resumed with {len(conv.messages)} messages.")


def kill_shell(project: Path) -> None:
    with contextlib.suppress(OSError, ValueError):
        os.killpg(int((project / "shell.pid").read_text().strip()), signal.SIGKILL)


def test_case4_a_session_is_held_by_one_process_and_a_kill_frees_it(cli: Cli) -> None:
    cli.sim.policy = FunctionPolicy(slow_then_answer)
    first = cli.start("-p", "run the slow job", "--yes")
    try:
        wait_for(lambda: (cli.project / "started.txt").exists(), "the slow job to start")
        (path,) = cli.transcripts()
        before = path.read_bytes()
        second = cli.run("--continue", "-p", "meanwhile")
        assert second.code == 2
        lines = second.err.strip().splitlines()
        assert len(lines) == 1 and "in use" in lines[0] and "new session" in lines[0]
        assert str(first.pid) in lines[0]
        assert path.read_bytes() == before  # the second process wrote nothing
        first.kill()  # SIGKILL: no cleanup runs, the kernel drops the lock
        first.wait(timeout=WAIT_SECONDS)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
        kill_shell(cli.project)
    third = cli.run("--continue", "-p", "go on")
    assert third.code == 0, third.err
    assert "Resumed with" in third.out
    assert not refused(cli.sim), refused(cli.sim)


# ---- case 5: lone and split surrogates, bytes that are not UTF-8 -----------------------

# One emoji sent as a surrogate pair the stream splits across two deltas (the first
# delta is cut after 12 characters), then a lone surrogate.
SPLIT_PAIR = "x" * 11 + "\ud83d\ude00" + "y" * 20 + " lone \udc00 end"


@pytest.mark.parametrize("output_format", ["text", "json", "stream-json"])
def test_case5_surrogates_in_model_text_print_in_every_format(
    cli: Cli, output_format: str
) -> None:
    cli.sim.policy = ScriptedPolicy([Reply(SPLIT_PAIR)])
    outcome = cli.run("-p", "say it", "--output-format", output_format)
    assert outcome.code == 0, outcome.err
    assert "Traceback" not in outcome.err and "surrogates" not in outcome.err
    printed = outcome.out
    if output_format == "json":
        printed = json.loads(outcome.out)["result"]
    elif output_format == "stream-json":
        lines = [json.loads(line) for line in outcome.out.splitlines()]
        said = "".join(block["text"] for e in lines if e["type"] == "assistant"
                       for block in e["message"]["content"] if block["type"] == "text")
        assert said == "x" * 11 + "\U0001f600" + "y" * 20 + " lone \ufffd end"
        printed = lines[-1]["result"]
    assert "\U0001f600" in printed and "lone \ufffd end" in printed
    assert_resumable(cli)


def test_case5_bytes_that_are_not_utf8_on_stdin_are_replaced(cli: Cli) -> None:
    seen: list[str] = []

    def echo(conv: SimConversation) -> Reply:
        seen.append(conv.last_user_text)
        return Reply("explained")

    cli.sim.policy = FunctionPolicy(echo)
    outcome = cli.run("-p", "explain", stdin=b"hello \xff\xfe\nbye \x00 nul\n")
    assert outcome.code == 0, outcome.err
    assert "explained" in outcome.out
    assert "hello \ufffd\ufffd" in seen[0] and "bye" in seen[0]
    assert_resumable(cli)


def test_case5_undecodable_file_and_tool_output_do_not_poison_the_session(cli: Cli) -> None:
    (cli.project / "blob.txt").write_bytes(b"head \xff\xfe\xed tail\n")
    cli.sim.policy = ScriptedPolicy(
        [
            Reply("", [ToolCall("read_file", {"path": "blob.txt"})]),
            Reply("", [ToolCall("run_shell", {"command": "printf 'a\\377\\376\\000b'"})]),
            Reply("", [ToolCall("grep_search", {"pattern": "tail"})]),
            Reply("read them"),
        ]
    )
    outcome = cli.run("-p", "look", "--yes")
    assert outcome.code == 0, outcome.err
    assert "read them" in outcome.out
    assert_resumable(cli)


# ---- case 10: spilled shell output is masked as it is written --------------------------

LEAKY_JOB = (
    "head -c 300000 /dev/zero | tr '\\0' 'a'; echo; cat key.txt; "
    "printf 'MARKER%.0s' $(seq 20); echo; echo $$ > shell.pid; sleep 30"
)


def test_case10_a_key_in_spilled_output_is_masked_before_a_kill(cli: Cli) -> None:
    (cli.project / "key.txt").write_text(f"the key is {KEY}\n")
    cli.sim.policy = ScriptedPolicy([Reply("", [ToolCall("run_shell", {"command": LEAKY_JOB})])])
    process = cli.start("-p", "print the key", "--yes")
    results = cli.home / "tool-results"

    def spilled_past_the_key() -> bool:
        return any("MARKER" in p.read_text() for p in results.rglob("*-stdout.txt"))

    try:
        wait_for(spilled_past_the_key, "the output to spill past the key")
        process.kill()  # SIGKILL: no cleanup code runs
        process.wait(timeout=WAIT_SECONDS)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        kill_shell(cli.project)
    (spill,) = results.rglob("*-stdout.txt")
    text = spill.read_text()
    assert KEY not in text and KEY[:-1] not in text
    assert "the key is [redacted]" in text
    assert oct(spill.stat().st_mode & 0o777) == "0o600"


# ---- case 11: a stalled server is given up after an idle limit, and it says how long ---


def test_case11_a_stalled_stream_is_abandoned_after_the_idle_limit(cli: Cli) -> None:
    from mini_claude.simulator import Fault

    cli.sim.inject(Fault("hang", times=2))
    cli.extra_env = {"MINI_CLAUDE_STREAM_IDLE_TIMEOUT": "0.4", "MINI_CLAUDE_MAX_RETRIES": "1"}
    outcome = cli.run("-p", "hello?")
    assert outcome.code == 1
    errors = [line for line in outcome.err.splitlines() if line.startswith("mini-claude:")]
    assert len(errors) == 1
    assert "nothing arrived for 0.4 s" in errors[0] and "gave up after 2 attempts" in errors[0]
    assert_resumable(cli)


def test_case11_the_idle_limit_defaults_to_claude_codes_ninety_seconds() -> None:
    from mini_claude.settings import Settings, from_environment

    assert Settings().stream_idle_timeout_seconds == 90.0
    env = {"ANTHROPIC_API_KEY": "k", "MINI_CLAUDE_STREAM_IDLE_TIMEOUT": "45"}
    assert from_environment(env).stream_idle_timeout_seconds == 45.0


# ---- case 12: an invalid base URL is a configuration error -----------------------------


@pytest.mark.parametrize("url", ["notaurl", "ftp://x", "http://", "https://host:port/"])
def test_case12_an_invalid_base_url_is_one_configuration_line(cli: Cli, url: str) -> None:
    _, url_name = key_and_url(cli.provider)
    cli.extra_env = {url_name: url}
    outcome = cli.run("-p", "hello")
    assert outcome.code == 2
    lines = outcome.err.strip().splitlines()
    assert len(lines) == 1 and url_name in lines[0] and "not a valid base URL" in lines[0]
    assert not cli.sim.requests


# ---- case 13: a prompt that cannot fit is refused before it is sent --------------------


def test_case13_a_prompt_larger_than_the_window_is_refused_before_sending(cli: Cli) -> None:
    cli.sim.policy = ScriptedPolicy([Reply("fine")])
    assert cli.run("-p", "hello").code == 0
    sent = len(cli.sim.requests)
    huge = ("all work and no play " * 50_000).encode()  # ~1 MB: ~250k tokens
    outcome = cli.run("--continue", "-p", "summarise", stdin=huge)
    assert outcome.code == 1
    errors = [line for line in outcome.err.splitlines() if line.startswith("mini-claude:")]
    assert len(errors) == 1 and "too long to send" in errors[0]
    assert len(cli.sim.requests) == sent  # nothing was sent
    assert_resumable(cli)  # and the refused prompt did not stay in the session


# ---- case 14: --resume mistakes are named ---------------------------------------------


def test_case14_an_empty_resume_id_is_a_usage_error_not_a_new_session(cli: Cli) -> None:
    outcome = cli.run("-r", "", "-p", "hello")
    assert outcome.code == 2
    assert "--resume needs a session id" in outcome.err
    assert not cli.transcripts() and not cli.sim.requests


def test_case14_an_ambiguous_resume_prefix_lists_the_matches(cli: Cli) -> None:
    # session ids are random UUIDs: two that share a prefix are named on purpose
    assert cli.run("-p", "one", "--session-id", "a1b2c3d4-0000-4000-8000-000000000001").code == 0
    assert cli.run("-p", "two", "--session-id", "a1b2c3d4-0000-4000-8000-000000000202").code == 0
    first, second = sorted(cli.transcripts())
    outcome = cli.run("-r", "a1b2c3d4", "-p", "which?")
    assert outcome.code == 2
    lines = outcome.err.strip().splitlines()
    assert len(lines) == 1 and "matches 2 sessions" in lines[0]
    assert first.stem in lines[0] and second.stem in lines[0]
    resumed = cli.run("-r", second.stem[:-2], "-p", "this one")
    assert resumed.code == 0, resumed.err


# ---- case 15: the key in the process environment (documented limit, and its remedy) ----

PEEK_AT_PARENT = "tr '\\0' '\\n' < /proc/$PPID/environ | grep -c '_API_KEY=' || true"


def test_case15_a_key_from_the_home_env_file_is_not_in_the_process_environment(
    cli: Cli,
) -> None:
    """The README's remedy for the known limit: a key kept in ~/.mini-claude/.env never
    enters mini-claude's environment, so a shell command cannot read it from there."""
    key_name, _ = key_and_url(cli.provider)
    cli.unset = {key_name}
    cli.home.mkdir(parents=True, exist_ok=True)
    (cli.home / ".env").write_text(f"{key_name}={KEY}\n")
    seen: list[str] = []

    def read_it(conv: SimConversation) -> Reply:
        seen.append(conv.last_tool_results()[0].content)
        return Reply("looked")

    cli.sim.policy = ScriptedPolicy(
        [Reply("", [ToolCall("run_shell", {"command": PEEK_AT_PARENT})]), read_it]
    )
    process = cli.start("-p", "peek", "--yes")
    out, err = process.communicate(timeout=WAIT_SECONDS)
    assert process.returncode == 0, err
    assert "looked" in out
    assert seen[0].strip().splitlines()[0] == "0"
    headers = cli.sim.requests[0].headers
    assert KEY in (headers.get("x-api-key") or headers.get("authorization", ""))


# ---- the simulator refuses what the real APIs refuse ------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b'{"model": "sim-sonnet", "max_tokens": 10, "messages": '
        b'[{"role": "user", "content": "n"}], "temperature": NaN}',
        b'{"model": "sim-sonnet", "max_tokens": 10, "messages": '
        b'[{"role": "user", "content": "x \\ud800"}]}',
        b'{"model": "sim-sonnet", "max_tokens": 10, "messages": '
        b'[{"role": "user", "content": "\xff"}]}',
        b'{"model": "sim-sonnet", "max_tokens": 10, "messages": '
        b'[{"role": "user", "content": [{"type": "text", "text": ""}]}]}',
    ],
)
def test_the_simulator_refuses_bodies_the_real_apis_refuse(
    simulator: Simulator, body: bytes
) -> None:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        simulator.anthropic_base_url.rstrip("/") + "/v1/messages",
        data=body,
        headers={"content-type": "application/json", "x-api-key": KEY,
                 "anthropic-version": "2023-06-01"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused_request:
        urllib.request.urlopen(request, timeout=10)
    assert refused_request.value.code == 400


def test_case3_a_project_base_url_without_its_own_key_is_ignored_even_with_no_key_elsewhere(
    cli: Cli,
) -> None:
    """The user runs a local server that needs no key (its URL in the home .env). A project
    URL would then receive no secret, but the whole conversation: it is ignored all the
    same, and the user's own endpoint is used."""
    key_name, url_name = key_and_url(cli.provider)
    cli.unset = {key_name, url_name}
    cli.home.mkdir(parents=True, exist_ok=True)
    (cli.home / ".env").write_text(f"{url_name}={base_url(cli.sim, cli.provider)}\n")
    with Simulator() as attacker:
        (cli.project / ".env").write_text(f"{url_name}={base_url(attacker, cli.provider)}\n")
        outcome = cli.run("-p", "hello")
        assert not attacker.requests
    assert outcome.code == 0, outcome.err
    assert outcome.err.count("warning") == 1
    assert cli.sim.requests[-1].status == 200
