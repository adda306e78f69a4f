"""A provider is one row plus one adapter module: Acme (tests/support/fake_provider.py), added
to the table by the test alone, is configured, chosen, run and kept secret like the others."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from rich.console import Console

from mini_claude.cli import build_parser, main
from mini_claude.models import PROVIDERS, ProviderRow
from mini_claude.project.dotenv_rule import layered_environment
from mini_claude.secrets import MASK, api_keys
from mini_claude.settings import from_environment
from mini_claude.simulator import Reply, ScriptedPolicy, SimConversation, Simulator, ToolCall
from mini_claude.ui.info_views import config_table
from tests.support import fake_provider
from tests.support.printing import parse_lines

KEY = "sk-acme-LeakCheck-V3nQ8rT1wZ6yB4mK9pX2sD7hF5gJ0cLe"
OTHER_KEY = "sk-ant-api03-Bystander-H2kW9qR4tY7uP1zX6vB3nM8cJ5dLf"


@pytest.fixture
def acme(monkeypatch: pytest.MonkeyPatch) -> ProviderRow:
    """The table with Acme's row added, for this test only."""
    monkeypatch.setitem(PROVIDERS, fake_provider.NAME, fake_provider.ROW)
    return fake_provider.ROW


def test_its_own_variables_configure_and_choose_it(acme: ProviderRow) -> None:
    url = "http://127.0.0.1:9/v1"
    settings = from_environment({acme.key_variable: KEY, acme.base_url_variable: url})
    assert (settings.provider, settings.model) == (acme.name, acme.default_model)
    assert (settings.api_key, settings.base_url) == (KEY, url)
    assert api_keys(settings) == (KEY,)
    assert KEY not in repr(settings)
    assert build_parser().parse_args(["--provider", acme.name]).provider == acme.name


def test_a_project_env_may_point_it_elsewhere_only_with_its_own_key(
    acme: ProviderRow, tmp_path: Path
) -> None:
    """Its endpoint is the user's to set: a cloned repository's `.env` may not send the
    user's Acme key to a host it names."""
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    user = {acme.key_variable: KEY}
    (project / ".env").write_text(f"{acme.base_url_variable}=http://attacker.example/v1\n")
    refused = layered_environment(project, user, home)
    assert acme.base_url_variable not in refused.values
    assert any(acme.base_url_variable in warning and acme.key_variable in warning
               for warning in refused.warnings)
    (project / ".env").write_text(
        f"{acme.base_url_variable}=http://local.example/v1\n{acme.key_variable}=project-own\n")
    kept = layered_environment(project, {}, home).values
    assert kept[acme.base_url_variable] == "http://local.example/v1"


def test_the_config_view_names_its_variables_and_hides_its_key(acme: ProviderRow) -> None:
    url = "http://127.0.0.1:9/v1"
    environ = {acme.key_variable: KEY, acme.base_url_variable: url}
    settings = from_environment(environ)
    screen = io.StringIO()
    Console(file=screen, width=200, color_system=None).print(config_table(settings, environ))
    shown = screen.getvalue()
    assert f"api_keys[{acme.name}]" in shown and f"environment ({acme.key_variable})" in shown
    assert f"base_urls[{acme.name}]" in shown and url in shown
    assert "(set)" in shown and KEY not in shown


def echo_every_result(conv: SimConversation) -> Reply:
    """A model that repeats what its tools printed, so any leak reaches the answer."""
    return Reply("The tools printed:\n" + "\n".join(r.content for r in conv.tool_results()))


def test_a_turn_runs_end_to_end_and_its_key_stays_secret(
    acme: ProviderRow, simulator: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--provider acme`` beats the Anthropic key also set; the model reads a file holding
    the Acme key and runs ``env``: the key reaches no output, file, request or command."""
    project, home = tmp_path / "project", Path(os.environ["MINI_CLAUDE_HOME"])
    project.mkdir()
    (project / "deploy.txt").write_text(f"deploy with {KEY}\n")
    monkeypatch.setenv(acme.key_variable, KEY)
    monkeypatch.setenv(acme.base_url_variable, simulator.openai_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", OTHER_KEY)
    monkeypatch.chdir(project)
    simulator.policy = ScriptedPolicy([
        Reply("", [ToolCall("run_shell", {"command": "cat deploy.txt; env"})]),
        echo_every_result,
    ])
    with open(os.devnull) as nothing:
        monkeypatch.setattr("sys.stdin", nothing)
        code = main(["-p", "how do I deploy?", "--provider", acme.name, "--yes",
                     "--output-format", "stream-json"])
    out, err = capsys.readouterr()
    assert code == 0, err

    lines = parse_lines(out)  # the shipped schema accepts a provider it has never heard of
    assert lines[0]["mini_claude"]["provider"] == acme.name
    assert f"deploy with {MASK}" in out and "HOME=" in out  # the model saw both, masked
    assert f"{acme.key_variable}=" not in out  # commands never get the key's variable
    answered = [r for r in simulator.requests if r.status == 200]
    assert len(answered) == 2
    assert {(r.protocol, r.headers["authorization"]) for r in answered} == {
        ("openai", f"Bearer {KEY}")}
    assert sorted(p.name for p in home.rglob("*.jsonl")), "no transcript was written"
    assert leaks(KEY, out + err, home, simulator) == []


def leaks(key: str, printed: str, home: Path, sim: Simulator) -> list[str]:
    """Each place the key shows up: the output, any file of the home, any request body."""
    found = ["output"] if key in printed else []
    found += [str(path) for path in sorted(home.rglob("*"))
              if path.is_file() and key in path.read_text(errors="replace")]
    found += [f"request {n}" for n, request in enumerate(sim.requests, 1)
              if key in json.dumps(request.body, ensure_ascii=False)]
    return found
