"""MCP servers end to end: print mode -> simulator over HTTP, tools served by a real SDK server."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from mini_claude.cli import main
from mini_claude.mcp.config import PROJECT_CONFIG_NAME, load_config
from mini_claude.project.trust import ProjectTrust
from mini_claude.simulator import Reply, Simulator
from tests.support.mcp import Recorder, call, http_server, stdio_entry, write_config
from tests.support.printing import PROVIDERS, point_at, run_from


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return run_from(tmp_path / "project", monkeypatch)


def run(
    sim: Simulator,
    recorder: Recorder,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *flags: str,
    provider: str = "anthropic",
) -> tuple[int, str, str]:
    sim.policy = recorder
    point_at(sim, provider, monkeypatch)
    code = main(["-p", "use the server", *flags])
    out, err = capsys.readouterr()
    return code, out, err


def tool_results(recorder: Recorder, request: int) -> list[tuple[str, bool]]:
    return [(r.content, r.is_error) for r in recorder.seen[request].last_tool_results()]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_user_stdio_server_tool_result_reaches_the_next_request(
    provider: str,
    project: Path,
    isolated_home: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_config(isolated_home / "mcp.json", {"sample": stdio_entry()})
    key = "ANTHROPIC_API_KEY" if provider == "anthropic" else "OPENAI_API_KEY"
    recorder = Recorder(
        [
            call("mcp__sample__echo", text="hello there"),
            call("mcp__sample__getenv", name=key),
            Reply("got it"),
        ]
    )
    code, out, err = run(simulator, recorder, monkeypatch, capsys, "--yes", provider=provider)
    assert code == 0, err
    assert "got it" in out
    assert "mcp__sample__echo" in recorder.seen[0].tool_names
    assert "read_file" in recorder.seen[0].tool_names  # built-in tools keep their place
    assert tool_results(recorder, 1) == [("echo: hello there", False)]
    assert tool_results(recorder, 2) == [("<unset>", False)]  # our key is not passed on
    log = isolated_home / "mcp-logs" / "sample.log"
    assert log.exists() and (log.stat().st_mode & 0o777) == 0o600


def test_large_result_is_persisted_by_tier_zero(
    project: Path,
    isolated_home: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_config(isolated_home / "mcp.json", {"sample": stdio_entry()})
    recorder = Recorder([call("mcp__sample__big", lines=3000), Reply("read it")])
    code, _, err = run(simulator, recorder, monkeypatch, capsys, "--yes")
    assert code == 0, err
    [(content, is_error)] = tool_results(recorder, 1)
    assert not is_error
    assert len(content) < 20_000  # a preview, not 160 KB
    saved = list((isolated_home / "tool-results").rglob("*mcp__sample__big*.txt"))
    assert len(saved) == 1
    assert str(saved[0]) in content
    assert "line 02999 of a large result" in saved[0].read_text()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_image_result_reaches_the_model_as_an_image(
    provider: str,
    project: Path,
    isolated_home: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_config(isolated_home / "mcp.json", {"sample": stdio_entry()})
    recorder = Recorder([call("mcp__sample__picture"), Reply("seen")])
    code, _, err = run(simulator, recorder, monkeypatch, capsys, "--yes", provider=provider)
    assert code == 0, err
    [(content, is_error)] = tool_results(recorder, 1) or [
        (r.content, r.is_error) for r in recorder.seen[1].tool_results()[-1:]
    ]
    assert not is_error
    assert content.startswith("a red pixel\n[image (image/png, ")
    assert "shown to you as an image" in content
    images = [i for m in recorder.seen[1].messages for i in m.images]
    assert [(i.media_type, i.width, i.height) for i in images] == [("image/png", 1, 1)]


def test_image_result_becomes_a_placeholder_naming_the_saved_file_without_vision(
    project: Path,
    isolated_home: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("MINI_CLAUDE_VISION", "0")
    write_config(isolated_home / "mcp.json", {"sample": stdio_entry()})
    recorder = Recorder([call("mcp__sample__picture"), Reply("seen")])
    code, _, err = run(simulator, recorder, monkeypatch, capsys, "--yes")
    assert code == 0, err
    [(content, is_error)] = tool_results(recorder, 1)
    assert not is_error
    assert content.startswith("a red pixel\n[image (image/png, ")
    [image] = list((isolated_home / "tool-results").rglob("*.png"))
    assert str(image) in content
    assert image.read_bytes().startswith(b"\x89PNG")
    assert (image.stat().st_mode & 0o777) == 0o600


def test_tool_error_crash_and_timeout_are_tool_errors_and_the_turn_goes_on(
    project: Path,
    isolated_home: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_config(
        isolated_home / "mcp.json", {"sample": stdio_entry(), "other": stdio_entry()}
    )
    monkeypatch.setenv("MINI_CLAUDE_MCP_TOOL_TIMEOUT_SECONDS", "1")
    recorder = Recorder(
        [
            call("mcp__sample__fail", message="the disk is on fire"),
            call("mcp__other__hang", seconds=30),
            call("mcp__other__echo", text="still alive after a timeout"),
            call("mcp__sample__crash"),
            call("mcp__sample__echo", text="anyone there?"),
            Reply("finished anyway"),
        ]
    )
    code, out, err = run(simulator, recorder, monkeypatch, capsys, "--yes")
    assert code == 0, err
    assert "finished anyway" in out
    [(failed, failed_is_error)] = tool_results(recorder, 1)
    assert failed_is_error and "the disk is on fire" in failed
    [(hung, hung_is_error)] = tool_results(recorder, 2)
    assert hung_is_error and "no answer within 1s" in hung
    assert tool_results(recorder, 3) == [("echo: still alive after a timeout", False)]
    [(crashed, crashed_is_error)] = tool_results(recorder, 4)
    assert crashed_is_error and "stopped during the call" in crashed
    [(after, after_is_error)] = tool_results(recorder, 5)
    assert after_is_error and "not connected" in after


def test_a_server_that_cannot_start_is_one_warning(
    project: Path,
    isolated_home: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_config(isolated_home / "mcp.json", {"ghost": {"command": str(project / "no-such")}})
    recorder = Recorder([Reply("fine without it")])
    code, out, err = run(simulator, recorder, monkeypatch, capsys, "--yes")
    assert code == 0, err
    assert "fine without it" in out
    assert "MCP server 'ghost' failed" in err
    assert "Traceback" not in err
    assert not [n for n in recorder.seen[0].tool_names if n.startswith("mcp__")]


def test_mcp_tools_ask_permission_so_print_mode_denies_them_without_yes(
    project: Path,
    isolated_home: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_config(isolated_home / "mcp.json", {"sample": stdio_entry()})
    recorder = Recorder([call("mcp__sample__echo", text="x"), Reply("ok")])
    code, _, err = run(simulator, recorder, monkeypatch, capsys)
    assert code == 0, err
    [(content, is_error)] = tool_results(recorder, 1)
    assert is_error and "Permission denied" in content


def test_unapproved_project_servers_do_not_start(
    project: Path,
    tmp_path: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    marker = tmp_path / "started.txt"
    write_config(project / PROJECT_CONFIG_NAME, {"sample": stdio_entry(marker)})
    recorder = Recorder([Reply("no servers")])
    code, _, err = run(simulator, recorder, monkeypatch, capsys, "--yes")
    assert code == 0, err
    assert not marker.exists()
    assert "not approved" in err and "--trust-project-mcp" in err
    assert not [n for n in recorder.seen[0].tool_names if n.startswith("mcp__")]


def test_trust_flag_starts_project_servers_for_this_run_only(
    project: Path,
    tmp_path: Path,
    isolated_home: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    marker = tmp_path / "started.txt"
    config = write_config(project / PROJECT_CONFIG_NAME, {"sample": stdio_entry(marker)})
    recorder = Recorder([call("mcp__sample__echo", text="p"), Reply("ok")])
    code, _, err = run(simulator, recorder, monkeypatch, capsys, "--yes", "--trust-project-mcp")
    assert code == 0, err
    assert marker.exists()
    assert tool_results(recorder, 1) == [("echo: p", False)]
    loaded = load_config(config, "project", {})
    assert loaded is not None
    trust = ProjectTrust(isolated_home)
    assert trust.status(project, config, loaded.trusted_content) == "unknown"


def test_approved_project_servers_start_until_the_file_changes(
    project: Path,
    tmp_path: Path,
    isolated_home: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    marker = tmp_path / "started.txt"
    config = write_config(project / PROJECT_CONFIG_NAME, {"sample": stdio_entry(marker)})
    loaded = load_config(config, "project", {})
    assert loaded is not None
    ProjectTrust(isolated_home).approve(project, config, loaded.trusted_content)
    recorder = Recorder([call("mcp__sample__echo", text="approved"), Reply("ok")])
    code, _, err = run(simulator, recorder, monkeypatch, capsys, "--yes")
    assert code == 0, err
    assert tool_results(recorder, 1) == [("echo: approved", False)]
    assert marker.read_text().count("started") == 1

    entry = stdio_entry(marker)
    entry["args"].append("--changed")
    write_config(project / PROJECT_CONFIG_NAME, {"sample": entry})
    recorder = Recorder([Reply("not again")])
    code, _, err = run(simulator, recorder, monkeypatch, capsys, "--yes")
    assert code == 0, err
    assert "not approved" in err
    assert marker.read_text().count("started") == 1


def test_streamable_http_server(
    project: Path,
    isolated_home: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with http_server() as url:
        monkeypatch.setenv("SAMPLE_MCP_URL", url)
        write_config(
            isolated_home / "mcp.json",
            {"web": {"type": "http", "url": "${SAMPLE_MCP_URL}", "headers": {"X-Test": "1"}}},
        )
        recorder = Recorder(
            [
                call("mcp__web__echo", text="over http"),
                call("mcp__web__big", lines=3000),
                Reply("done over http"),
            ]
        )
        code, out, err = run(simulator, recorder, monkeypatch, capsys, "--yes")
    assert code == 0, err
    assert "done over http" in out
    assert tool_results(recorder, 1) == [("echo: over http", False)], err
    [(big, _)] = tool_results(recorder, 2)
    assert "tool-results" in big and len(big) < 20_000


def test_bad_project_config_is_one_warning_and_the_session_goes_on(
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (project / PROJECT_CONFIG_NAME).write_text("{not json")
    recorder = Recorder([Reply("fine")])
    code, out, err = run(simulator, recorder, monkeypatch, capsys, "--yes")
    assert code == 0, err
    assert "fine" in out
    assert ".mcp.json: not valid JSON" in err


def test_a_server_that_never_answers_times_out_and_is_stopped(
    project: Path,
    isolated_home: Path,
    tmp_path: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pid_file = tmp_path / "pid"
    script = (
        f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    )
    write_config(
        isolated_home / "mcp.json", {"mute": {"command": sys.executable, "args": ["-c", script]}}
    )
    monkeypatch.setenv("MINI_CLAUDE_MCP_CONNECT_TIMEOUT_SECONDS", "2")
    recorder = Recorder([Reply("went on")])
    code, out, err = run(simulator, recorder, monkeypatch, capsys, "--yes")
    assert code == 0, err
    assert "went on" in out
    assert "MCP server 'mute' failed: no answer within 2s" in err
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the silent server was stopped with the session


def test_a_server_writing_garbage_is_logged_privately_and_still_used(
    project: Path,
    isolated_home: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    entry = stdio_entry()
    entry["args"].append("--noisy")
    write_config(isolated_home / "mcp.json", {"noisy": entry})
    recorder = Recorder([call("mcp__noisy__echo", text="despite the noise"), Reply("ok")])
    code, _, err = run(simulator, recorder, monkeypatch, capsys, "--yes")
    assert code == 0, err
    assert tool_results(recorder, 1) == [("echo: despite the noise", False)]
    assert "JSON" not in err and "Traceback" not in err  # nothing from the SDK on the terminal
    sdk_log = isolated_home / "mcp-logs" / "sdk.log"
    assert "method" in sdk_log.read_text()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_slow_server_is_waited_for_and_its_tools_are_in_the_init_line_and_first_request(
    provider: str,
    project: Path,
    isolated_home: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_config(isolated_home / "mcp.json", {"sample": stdio_entry(start_delay=2.0)})
    recorder = Recorder([call("mcp__sample__echo", text="tokyo"), Reply("it is late there")])
    code, out, err = run(simulator, recorder, monkeypatch, capsys, "--yes",
                         "--output-format", "stream-json", provider=provider)
    assert code == 0, err
    init = json.loads(out.splitlines()[0])
    assert init["subtype"] == "init" and "mcp__sample__echo" in init["tools"]
    assert "mcp__sample__echo" in recorder.seen[0].tool_names
    assert tool_results(recorder, 1) == [("echo: tokyo", False)]


def test_print_mode_waits_no_longer_than_the_setting(
    project: Path,
    isolated_home: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_config(isolated_home / "mcp.json", {"sample": stdio_entry(start_delay=60.0)})
    monkeypatch.setenv("MINI_CLAUDE_MCP_STARTUP_WAIT_SECONDS", "0.5")
    code, out, err = run(simulator, Recorder([Reply("answered without it")]), monkeypatch,
                         capsys)
    assert code == 0, err
    assert "answered without it" in out
    assert "MCP server sample still connecting" in err
