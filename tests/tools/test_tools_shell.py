"""run_shell: exit codes, streams, timeouts and cancellation that kill the whole group."""

from __future__ import annotations

import asyncio
import os
import re
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from mini_claude.protocol import ToolOutput
from mini_claude.secrets import MASK
from mini_claude.settings import Settings
from mini_claude.tools.base import NOTHING_TO_ASK
from mini_claude.tools.builtin.run_shell import RunShellTool, child_environment, execute
from mini_claude.tools.progress import CallProgress
from tests.support.tools import group_members, process_alive, run, tool_context, wait_until


def shell(root: Path, command: str, *, env: dict[str, str] | None = None,
          **settings: Any) -> ToolOutput:
    args: dict[str, Any] = {"command": command}
    if "timeout" in settings:
        args["timeout"] = settings.pop("timeout")
    return run(RunShellTool().run(args, tool_context(root, env=env, **settings), NOTHING_TO_ASK))


def number_after(label: str, text: str) -> int:
    """The pid a test command printed as ``label=1234``."""
    found = re.search(rf"{label}=(\d+)", text)
    assert found is not None, text
    return int(found.group(1))


def test_exit_code_and_stdout(tmp_path: Path) -> None:
    ok = shell(tmp_path, "echo hello")
    assert not ok.is_error
    assert ok.content == "hello\n[exit code 0]"
    failed = shell(tmp_path, "echo partial; exit 3")
    assert failed.is_error
    assert failed.content == "partial\n[exit code 3]"


def test_stderr_is_kept_apart(tmp_path: Path) -> None:
    out = shell(tmp_path, "echo out; echo oops >&2")
    assert out.content == "out\n[stderr]\noops\n[exit code 0]"
    assert out.display == out.content and out.display_kind == "ansi"


def test_runs_in_the_project_folder(tmp_path: Path) -> None:
    assert shell(tmp_path, "pwd").content.splitlines()[0] == str(tmp_path.resolve())


def test_stdin_is_closed_so_cat_returns_at_once(tmp_path: Path) -> None:
    started = time.monotonic()
    out = shell(tmp_path, "cat; read -r line; echo after read $?", timeout=30)
    assert out.content == "after read 1\n[exit code 0]"
    assert time.monotonic() - started < 10


def test_timeout_kills_the_command_and_its_children(tmp_path: Path) -> None:
    command = "sleep 100 & echo bg=$!; echo shell=$$; sleep 100"
    out = shell(tmp_path, command, timeout=1)
    assert out.is_error
    assert "[timed out after 1 s; the command and its children were killed]" in out.content
    background = number_after("bg", out.content)
    leader = number_after("shell", out.content)
    assert wait_until(lambda: not process_alive(background) and not group_members(leader))


def test_children_that_ignore_sigterm_are_killed_too(tmp_path: Path) -> None:
    command = "bash -c 'trap \"\" TERM; echo child=$$; sleep 100' & sleep 100"
    out = shell(tmp_path, command, timeout=1)
    child = number_after("child", out.content)
    assert wait_until(lambda: not process_alive(child))


def test_cancellation_kills_the_group_and_propagates(tmp_path: Path) -> None:
    pid_file = tmp_path / "leader.pid"

    async def cancel_midway() -> None:
        ctx = tool_context(tmp_path)
        task = asyncio.create_task(RunShellTool().run(
            {"command": f"echo $$ > {pid_file}; sleep 100 & sleep 100"}, ctx, NOTHING_TO_ASK))
        for _ in range(500):
            if pid_file.exists() and pid_file.read_text().strip():
                break
            await asyncio.sleep(0.02)
        task.cancel()
        await task

    with pytest.raises(asyncio.CancelledError):
        run(cancel_midway())
    leader = int(pid_file.read_text())
    assert wait_until(lambda: not group_members(leader))


def test_a_cancel_while_bash_starts_still_stops_it_and_keeps_what_it_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C can land while asyncio is still starting bash, after bash has run and
    printed: the command is stopped and its output still goes to the model."""
    pid_file, printed = tmp_path / "leader.pid", tmp_path / "printed"
    command = f"echo $$ > {pid_file}; echo compiling step 1; touch {printed}; sleep 100"
    real_spawn = asyncio.create_subprocess_exec

    async def scenario() -> CallProgress:
        release = asyncio.Event()

        async def slow_spawn(*args: Any, **kwargs: Any) -> asyncio.subprocess.Process:
            process = await real_spawn(*args, **kwargs)
            await release.wait()  # asyncio is still connecting the pipes
            return process

        monkeypatch.setattr(asyncio, "create_subprocess_exec", slow_spawn)
        progress = CallProgress("call-1", "run_shell", lambda _update: None)
        task = asyncio.create_task(
            execute(command, tmp_path, dict(os.environ), 60, 10_000, progress=progress))
        while not printed.exists():
            await asyncio.sleep(0.02)
        task.cancel()
        await asyncio.sleep(0)  # the cancel lands in the wait for the spawn
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        return progress

    progress = run(scenario())
    assert progress.partial is not None and "compiling step 1" in progress.partial
    leader = int(pid_file.read_text())
    assert wait_until(lambda: not group_members(leader))


def test_background_job_holding_the_output_does_not_hang_the_call(tmp_path: Path) -> None:
    started = time.monotonic()
    out = shell(tmp_path, "echo started; sleep 100 & echo bg=$!", timeout=60)
    assert time.monotonic() - started < 20
    assert out.content.startswith("started\nbg=")
    assert "redirect its output" in out.content
    background = number_after("bg", out.content)
    assert wait_until(lambda: not process_alive(background))


def test_api_keys_are_not_in_the_child_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key values themselves are checked (never a word the machine's own environment
    may hold), and the output must not need masking: masked output would hide a leak."""
    anthropic_key = f"sk-ant-{uuid.uuid4().hex}"
    openai_key = f"sk-oai-{uuid.uuid4().hex}"
    monkeypatch.setenv("ANTHROPIC_API_KEY", anthropic_key)
    monkeypatch.setenv("OPENAI_API_KEY", openai_key)
    monkeypatch.setenv("COPIED_TOKEN", anthropic_key)
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    out = shell(tmp_path, "env",
                api_keys={"anthropic": anthropic_key, "openai": openai_key})
    assert anthropic_key not in out.content and openai_key not in out.content
    assert MASK not in out.content  # nothing had to be masked: the values were never there
    assert "ANTHROPIC_API_KEY=" not in out.content and "OPENAI_API_KEY=" not in out.content
    assert "COPIED_TOKEN" not in out.content
    assert "HARMLESS_SETTING=visible" in out.content


def test_child_environment_drops_both_key_names_even_unconfigured() -> None:
    environ = {"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "b", "PATH": "/bin"}
    assert child_environment(environ, Settings()) == {"PATH": "/bin"}


def test_the_context_environment_is_used_when_given(tmp_path: Path) -> None:
    out = shell(tmp_path, "echo ${ONLY_HERE:-missing} ${HOME:-nohome}",
                env={"ONLY_HERE": "given", "PATH": "/usr/bin:/bin"})
    assert out.content.splitlines()[0] == "given nohome"


def test_output_is_capped_keeping_head_and_tail(tmp_path: Path) -> None:
    command = "echo FIRST; head -c 300000 /dev/zero | tr '\\0' x; echo; echo LAST"
    out = shell(tmp_path, command, tool_output_cap_chars=2_000)
    assert out.content.startswith("FIRST\n")
    assert "LAST\n[exit code 0]" in out.content
    omitted = re.search(r"\[\.\.\. ([\d,]+) characters omitted; the full output is saved at ",
                        out.content)
    assert omitted is not None
    assert int(omitted.group(1).replace(",", "")) > 290_000
    assert len(out.content) < 2_000 + 200


def test_bad_timeouts_are_refused_and_large_ones_clamped(tmp_path: Path) -> None:
    assert shell(tmp_path, "true", timeout=0).is_error
    assert shell(tmp_path, "true", timeout=-5).is_error
    assert shell(tmp_path, "echo fine", timeout=100_000).content == "fine\n[exit code 0]"


def test_empty_command_is_refused(tmp_path: Path) -> None:
    out = shell(tmp_path, "   ")
    assert out.is_error


def test_permission_subject_is_the_command(tmp_path: Path) -> None:
    request = RunShellTool().permission({"command": "make test"}, tool_context(tmp_path)).request
    assert request is not None
    assert request.subject == "run_shell:make test"
    assert request.summary == "make test"
    assert request.tool_name == "run_shell"


def test_output_over_the_cap_is_spilled_whole_to_disk(tmp_path: Path) -> None:
    """Nothing is lost: the in-memory copy is head + tail, the file holds every byte."""
    import asyncio
    import re

    from mini_claude.tools.builtin.run_shell import execute

    spill = tmp_path / "spill"
    result = asyncio.run(execute("seq 1 50000", tmp_path, {"PATH": "/usr/bin:/bin"}, 30, 20_000,
                                 spill_dir=spill))
    match = re.search(r"the full output is saved at (\S+?\.txt)", result.stdout)
    assert match is not None
    saved = Path(match.group(1)).read_text()
    assert saved == "".join(f"{i}\n" for i in range(1, 50001))
    assert len(result.stdout) < 12_000
    assert oct(Path(match.group(1)).stat().st_mode & 0o777) == "0o600"


def test_a_spill_over_the_log_cap_keeps_its_head_and_tail(tmp_path: Path) -> None:
    """A foreground command printing without end fills no disk either: the saved output
    keeps its first and last bytes and says how many were dropped between."""
    out = shell(tmp_path, "seq 1 2000000", tool_output_cap_chars=2_000,
                shell_log_cap_bytes=64 * 1024)
    match = re.search(r"its first and last bytes are saved at (\S+?\.txt)", out.content)
    assert match is not None, out.content
    numbers = "".join(f"{n}\n" for n in range(1, 2_000_001)).encode()
    dropped = len(numbers) - 64 * 1024
    gap = (f"\n[... {dropped:,} bytes dropped here; the log keeps the first 32,768 and the "
           "last 32,768 bytes of the output ...]\n").encode()
    assert Path(match.group(1)).read_bytes() == numbers[:32_768] + gap + numbers[-32_768:]
