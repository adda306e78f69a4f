"""Two keys of Claude Code's settings a user brings: ``apiKeyHelper`` (the key comes from a
command, run again when the server refuses it) and ``statusLine`` (a command's line under
ours)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from mini_claude.cli import main
from mini_claude.permissions.asking import allow_all
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator
from tests.support.printing import PROVIDERS, run_from
from tests.support.repl import running_repl, sim_settings, until


def user_settings(values: dict[str, object]) -> Path:
    """``~/.claude/settings.json`` of the test's own home."""
    path = Path.home() / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(values))
    return path


def counting_helper(tmp_path: Path, keys: list[str]) -> str:
    """A helper that prints the next key of ``keys`` at each run (the last one for good)."""
    state = tmp_path / "helper-runs"
    script = tmp_path / "helper.py"
    script.write_text(
        "import pathlib, sys\n"
        f"state = pathlib.Path({str(state)!r})\n"
        "runs = int(state.read_text()) if state.exists() else 0\n"
        "state.write_text(str(runs + 1))\n"
        f"keys = {keys!r}\n"
        "print(keys[min(runs, len(keys) - 1)])\n")
    return f"{sys.executable} {script}"


def point_without_key(sim: Simulator, provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINI_CLAUDE_MODEL", "sim-sonnet")
    monkeypatch.setenv("MINI_CLAUDE_PROVIDER", provider)
    base = sim.anthropic_base_url if provider == "anthropic" else sim.openai_base_url
    monkeypatch.setenv(f"{provider.upper()}_BASE_URL", base)


def sent_keys(sim: Simulator) -> list[str]:
    keys = []
    for request in sim.requests:
        headers = request.headers
        keys.append(headers.get("x-api-key") or headers.get("authorization", "")[7:])
    return keys


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_key_comes_from_the_helper_and_is_fetched_again_after_a_401(
    provider: str, simulator: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    user_settings({"apiKeyHelper": counting_helper(tmp_path, ["bad-key", "fresh-key"])})
    simulator.policy = ScriptedPolicy([Reply(text="answered with a fresh key")])
    point_without_key(simulator, provider, monkeypatch)
    run_from(tmp_path / "project", monkeypatch)
    code = main(["-p", "hello"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "answered with a fresh key" in out
    assert sent_keys(simulator) == ["bad-key", "fresh-key"]
    assert (tmp_path / "helper-runs").read_text() == "2"


def test_a_project_cannot_name_the_key_helper(
    simulator: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text(json.dumps(
        {"apiKeyHelper": counting_helper(tmp_path, ["stolen"])}))
    point_without_key(simulator, "anthropic", monkeypatch)
    run_from(project, monkeypatch)
    main(["-p", "hello"])
    capsys.readouterr()
    assert not (tmp_path / "helper-runs").exists()


def test_a_failing_helper_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    simulator: Simulator,
) -> None:
    user_settings({"apiKeyHelper": "echo no key here >&2; exit 3"})
    point_without_key(simulator, "anthropic", monkeypatch)
    run_from(tmp_path / "project", monkeypatch)
    assert main(["-p", "hello"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "mini-claude: apiKeyHelper failed (exit 3): no key here"


def test_the_status_line_command_shows_under_ours_with_colours_only(
    simulator: Simulator, isolated_home: Path, tmp_path: Path,
) -> None:
    script = tmp_path / "statusline.py"
    script.write_text(
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        "pct = data['context_window']['used_percentage']\n"
        "print(f\"\\x1b[32mSL {data['model']['id']} {data['session_id']} ctx={pct}\\x1b[0m"
        "\\x1b]0;pwned\\x07\")\n")
    user_settings({"statusLine": {"type": "command", "command": f"{sys.executable} {script}"}})
    simulator.policy = ScriptedPolicy([Reply("Hi.")])

    async def main_() -> None:
        async with running_repl(sim_settings(simulator, isolated_home), tmp_path,
                                approver=allow_all) as repl:
            session_id = repl.repl.session.session_id

            def shown() -> str:
                return "".join(text for _style, text, *_ in repl.repl._status_line())

            await repl.submit("hello")
            await repl.wait_for("Hi.")
            await until(lambda: f"SL sim-model {session_id}" in shown(), "the status command")
            line = shown()
            assert "\x1b" not in line and "\x07" not in line  # drawn as text, colour as style
            assert "<ESC>]0;pwned" in line or "]0;pwned" in line
            styles = {style for style, *_ in repl.repl._status_line()}
            assert any("green" in style or "ansigreen" in style for style in styles)
            assert await repl.exit() == 0

    asyncio.run(main_())
