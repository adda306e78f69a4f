"""Background shells: started at once, read incrementally from a log on disk, stopped with
their whole process group, and never left running when the session ends."""

from __future__ import annotations

import re
from pathlib import Path

from mini_claude.protocol import ToolOutput
from mini_claude.tools.background import BackgroundShells
from mini_claude.tools.base import NOTHING_TO_ASK, ToolContext
from mini_claude.tools.builtin.kill_shell import KillShellTool
from mini_claude.tools.builtin.run_shell import RunShellTool
from mini_claude.tools.builtin.shell_output import ShellOutputTool
from tests.support.tools import process_alive, run, tool_context, wait_until


def start(ctx: ToolContext, command: str) -> ToolOutput:
    return run(RunShellTool().run({"command": command, "run_in_background": True}, ctx,
                                  NOTHING_TO_ASK))


def output(ctx: ToolContext, shell_id: str, pattern: str | None = None) -> ToolOutput:
    args = {"shell_id": shell_id, **({"filter": pattern} if pattern else {})}
    return run(ShellOutputTool().run(args, ctx, NOTHING_TO_ASK))


def pid_in(text: str) -> int:
    match = re.search(r"\(pid (\d+)\)", text)
    assert match, text
    return int(match.group(1))


def test_a_background_command_returns_at_once_and_its_output_is_read_in_pieces(
    tmp_path: Path,
) -> None:
    ctx = tool_context(tmp_path)
    started = start(ctx, "echo first; sleep 0.3; echo second; sleep 30")
    assert not started.is_error
    assert started.content.startswith("Started background shell bash_1 (pid ")
    assert wait_until(lambda: "second" in ctx.shells.get("bash_1").log_path.read_text())
    first = output(ctx, "bash_1")
    assert first.content.splitlines()[0].startswith("[shell bash_1: running (")
    assert "first\nsecond" in first.content
    again = output(ctx, "bash_1")
    assert again.content.endswith("(no new output)")  # only what is new since the last read
    log = ctx.shells.get("bash_1").log_path
    assert log.is_relative_to(ctx.settings.tool_results_dir)  # kept under the home
    ctx.shells.stop_all()


def test_a_filter_keeps_matching_lines_and_the_state_says_how_it_ended(tmp_path: Path) -> None:
    ctx = tool_context(tmp_path)
    start(ctx, "for i in 1 2 3 4; do echo \"GET /page$i 200\"; echo noise$i; done; exit 3")
    assert wait_until(lambda: not ctx.shells.get("bash_1").running)
    read = output(ctx, "bash_1", pattern=r"GET /page[24]")
    assert "exited with code 3" in read.content.splitlines()[0]
    body = read.content.splitlines()[1:]
    assert body[:2] == ["GET /page2 200", "GET /page4 200"]
    assert "2 lines of the new output matched" in read.content
    assert not any("noise" in line for line in body)
    bad = output(ctx, "bash_1", pattern="(")
    assert bad.is_error and bad.content.startswith("filter is not a valid regular expression")


def test_kill_shell_stops_the_whole_group_and_unknown_ids_are_named(tmp_path: Path) -> None:
    ctx = tool_context(tmp_path)
    started = start(ctx, "sleep 60 & echo child $!; sleep 60")
    assert wait_until(lambda: "child" in ctx.shells.get("bash_1").log_path.read_text())
    child = int(ctx.shells.get("bash_1").log_path.read_text().split()[1])
    leader = pid_in(started.content)
    assert process_alive(child) and process_alive(leader)
    killed = run(KillShellTool().run({"shell_id": "bash_1"}, ctx, NOTHING_TO_ASK))
    assert killed.content.endswith("Stopped.") and "killed" in killed.content
    assert wait_until(lambda: not process_alive(child) and not process_alive(leader))
    again = run(KillShellTool().run({"shell_id": "bash_1"}, ctx, NOTHING_TO_ASK))
    assert again.content.endswith("It was no longer running.")
    unknown = output(ctx, "bash_9")
    assert unknown.is_error and unknown.content == (
        "no background shell 'bash_9' (this session's shells: bash_1)"
    )


def test_megabytes_of_output_stay_on_disk_and_a_read_is_bounded(tmp_path: Path) -> None:
    ctx = tool_context(tmp_path, tool_output_cap_chars=20_000)
    start(ctx, "head -c 3000000 /dev/zero | tr '\\0' 'x'; echo; echo END")
    assert wait_until(lambda: not ctx.shells.get("bash_1").running)
    read = output(ctx, "bash_1")
    assert len(read.content) < 21_000
    assert "bytes in the middle left out" in read.content
    assert read.content.rstrip().endswith("END") or "END\n" in read.content
    assert ctx.shells.get("bash_1").log_size() > 3_000_000


def test_stop_all_leaves_nothing_running(tmp_path: Path) -> None:
    shells = BackgroundShells()
    ctx = tool_context(tmp_path)
    ctx.shells = shells
    pids = [pid_in(start(ctx, "trap '' TERM; sleep 60").content) for _ in range(2)]
    assert all(process_alive(pid) for pid in pids)
    assert shells.stop_all(grace=0.3) == 2
    assert wait_until(lambda: not any(process_alive(pid) for pid in pids))
    assert shells.running() == []


def test_the_permission_is_run_shells(tmp_path: Path) -> None:
    ctx = tool_context(tmp_path)
    request = RunShellTool().permission({"command": "npm run dev", "run_in_background": True},
                                        ctx).request
    assert request is not None and request.subject == "run_shell:npm run dev"
    assert ShellOutputTool().permission({"shell_id": "bash_1"}, ctx).request is None


def test_live_lines_are_plain_text_and_a_progress_bar_keeps_its_last_state() -> None:
    from mini_claude.tools.progress import CallProgress

    times = iter([0.0, *[5.0] * 20])
    sent: list[object] = []
    progress = CallProgress("toolu_1", "run_shell", sent.append, clock=lambda: next(times))
    feed = progress.feeder()
    feed(b"\x1b[32mok\x1b[0m build\nfetch 10%\rfetch 90%\n")
    feed("caf\xc3".encode("latin-1"))  # a character split across two reads
    feed(b"\xa9 ready\rcaf\xc3\xa9 done")
    snapshot = progress.snapshot()
    assert snapshot.recent == "ok build\nfetch 90%\ncafé done"
    assert snapshot.lines == 3
    assert sent, "an update after the first second"


def test_a_log_over_its_cap_keeps_its_head_and_tail_and_says_what_was_dropped(
    tmp_path: Path,
) -> None:
    """On disk and in what the model reads: the first and last bytes, and the exact count
    of those dropped between."""
    cap = 64 * 1024
    ctx = tool_context(tmp_path, shell_log_cap_bytes=cap, tool_output_cap_chars=20_000)
    start(ctx, "seq 1 2000000")
    assert wait_until(lambda: not ctx.shells.get("bash_1").running, timeout=60)
    printed = sum(len(f"{n}\n") for n in range(1, 2_000_001))
    log = ctx.shells.get("bash_1").log_path.read_bytes()
    dropped = printed - cap
    gap = (f"\n[... {dropped:,} bytes dropped here; the log keeps the first {cap // 2:,} and "
           f"the last {cap // 2:,} bytes of the output ...]\n").encode()
    numbers = b"".join(f"{n}\n".encode() for n in range(1, 2_000_001))
    assert log == numbers[: cap // 2] + gap + numbers[-(cap // 2):]
    read = output(ctx, "bash_1")
    assert read.content.splitlines()[1:3] == ["1", "2"]
    assert "\n1999999\n2000000\n(" in read.content
    assert f"[... {dropped:,} bytes dropped: the log keeps only its head and tail ...]" \
        in read.content
    assert f"({dropped:,} bytes were dropped for good" in read.content
    assert output(ctx, "bash_1").content.endswith("(no new output)")


def test_a_shell_printing_without_end_stays_within_its_cap(tmp_path: Path) -> None:
    """`yes` while it prints 50 MB: the log never outgrows the cap, and reads in between go
    on from where the last one stopped. (``head`` bounds the disk a regression would fill.)"""
    cap = 256 * 1024
    ctx = tool_context(tmp_path, shell_log_cap_bytes=cap, tool_output_cap_chars=4_000)
    start(ctx, "yes | head -c 400000000")
    shell = ctx.shells.get("bash_1")
    first = output(ctx, "bash_1")
    assert not first.is_error

    def dropped_in_log() -> int:
        match = re.search(rb"\[\.\.\. ([\d,]+) bytes dropped here", shell.log_path.read_bytes())
        return int(match.group(1).replace(b",", b"")) if match else 0

    assert wait_until(lambda: dropped_in_log() > 50_000_000, timeout=90)
    assert shell.log_size() < cap + 200
    later = output(ctx, "bash_1")
    assert "bytes dropped: the log keeps only its head and tail" in later.content
    assert "y\ny\ny" in later.content and len(later.content) < 6_000
    ctx.shells.stop_all()
    assert not shell.running
