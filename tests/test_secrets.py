"""API keys never leave the process: not in transcripts, saved results, history or output.

Sessions run through the real command line with distinctive keys, a model that
runs ``env`` and reads the project's ``.env``, and a 401. Then every file under
``MINI_CLAUDE_HOME``, everything printed, and every request the model received
are searched for the keys.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mini_claude.cli import main
from mini_claude.simulator import Reply, ScriptedPolicy, SimConversation, Simulator, ToolCall
from tests.support.reliability import PROVIDERS, Provider

KEYS: dict[Provider, str] = {
    "anthropic": "sk-ant-api03-LeakCheck-Q7v2ZpX9mT4rB8nK1sW6yD3hF5jL0cGa",
    "openai": "sk-proj-LeakCheck-N4kT8wQ2vB6xZ1mR9pS3dF7hJ5gL0cYe",
}
KEY_VARIABLES: dict[Provider, tuple[str, str]] = {
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
}
BIG_OUTPUT = "; seq 1 9000"  # enough to be saved under tool-results instead of kept in context
HUGE_OUTPUT = "; seq 1 50000"  # over run_shell's in-memory cap: the tool spills it to disk


def fragments(key: str) -> list[str]:
    """The key and the pieces of it that would identify it on their own."""
    return [key, key[-16:], key[len(key) // 2 - 8 : len(key) // 2 + 8]]


def found_in(text: str, key: str) -> list[str]:
    return [piece for piece in fragments(key) if piece in text]


@dataclass
class Run:
    code: int
    out: str
    err: str
    home: Path
    sim: Simulator

    def leaks(self, key: str) -> list[str]:
        """Every place the key (or a telling piece of it) shows up."""
        places = [f"stdout: {p}" for p in found_in(self.out, key)]
        places += [f"stderr: {p}" for p in found_in(self.err, key)]
        for path in sorted(p for p in self.home.rglob("*") if p.is_file()):
            text = path.read_bytes().decode("utf-8", errors="replace")
            places += [f"{path.relative_to(self.home)}: {p}" for p in found_in(text, key)]
        for number, request in enumerate(self.sim.requests, 1):
            sent = json.dumps(request.body, ensure_ascii=False)
            places += [f"request {number} body: {p}" for p in found_in(sent, key)]
        return places


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "README.md").write_text("# project\n")
    return root


@pytest.fixture
def cli(
    project: Path,
    simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Iterator[Callable[..., Run]]:
    home = project.parent / "home"
    monkeypatch.setenv("MINI_CLAUDE_HOME", str(home))
    monkeypatch.setenv("MINI_CLAUDE_MODEL", "sim-sonnet")
    monkeypatch.chdir(project)

    def run(*args: str) -> Run:
        capsys.readouterr()
        with open(os.devnull) as nothing, pytest.MonkeyPatch.context() as patch:
            patch.setattr(sys, "stdin", nothing)
            code = main(list(args))
        out, err = capsys.readouterr()
        return Run(code, out, err, home, simulator)

    yield run


def echo_every_result(conv: SimConversation) -> Reply:
    """A model that repeats what its tools printed, so any leak reaches the answer."""
    printed = "\n".join(r.content[:4000] for r in conv.tool_results())
    return Reply(f"Here is everything the tools printed:\n{printed}")


def use_key(provider: Provider, sim: Simulator, monkeypatch: pytest.MonkeyPatch) -> str:
    key_variable, url_variable = KEY_VARIABLES[provider]
    monkeypatch.setenv(key_variable, KEYS[provider])
    monkeypatch.setenv(url_variable, sim.anthropic_base_url if provider == "anthropic"
                       else sim.openai_base_url)
    monkeypatch.setenv("MINI_CLAUDE_PROVIDER", provider)
    return KEYS[provider]


@pytest.mark.parametrize("output_format", ["text", "json", "stream-json"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_session_that_prints_the_environment_leaks_no_key(
    provider: Provider,
    output_format: str,
    simulator: Simulator,
    cli: Callable[..., Run],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = use_key(provider, simulator, monkeypatch)
    monkeypatch.setenv("MY_COPY_OF_THE_KEY", key)  # a key under a name we do not know
    simulator.policy = ScriptedPolicy([
        Reply("", [ToolCall("run_shell", {"command": "env"})]),
        Reply("", [ToolCall("run_shell", {"command": "env" + BIG_OUTPUT})]),
        echo_every_result,
    ])
    run = cli("-p", "show me the environment", "--yes", "--output-format", output_format)
    assert run.code == 0, run.err
    assert "HOME=" in run.out + run.err or output_format == "text"
    assert any((run.home / "tool-results").rglob("*.txt")), "the big output was not saved"
    leaks = run.leaks(key)
    assert not leaks, "the key leaked:\n" + "\n".join(leaks)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_key_read_from_the_project_env_file_is_masked_everywhere(
    provider: Provider,
    project: Path,
    simulator: Simulator,
    cli: Callable[..., Run],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The key lives in the project's ``.env`` (where mini-claude itself read it), and the
    model reads that file: the key must not reach the history, the saved results, the
    transcript, the output, or the next request."""
    key_variable, url_variable = KEY_VARIABLES[provider]
    key = KEYS[provider]
    url = simulator.anthropic_base_url if provider == "anthropic" else simulator.openai_base_url
    (project / ".env").write_text(f"{key_variable}={key}\n{url_variable}={url}\n")
    monkeypatch.setenv("MINI_CLAUDE_PROVIDER", provider)
    simulator.policy = ScriptedPolicy([
        Reply("", [ToolCall("read_file", {"path": ".env"})]),
        Reply("", [ToolCall("run_shell", {"command": "cat .env" + BIG_OUTPUT})]),
        Reply("", [ToolCall("run_shell", {"command": "cat .env" + HUGE_OUTPUT})]),
        echo_every_result,
    ])
    run = cli("-p", "check the configuration", "--yes", "--output-format", "stream-json")
    assert run.code == 0, run.err
    assert key_variable in run.out  # the model did see the file, with the key masked
    leaks = run.leaks(key)
    assert not leaks, "the key leaked:\n" + "\n".join(leaks)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_rejected_key_is_named_by_its_variable_not_shown(
    provider: Provider,
    simulator: Simulator,
    cli: Callable[..., Run],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The simulator answers 401 to the key ``bad-key``, echoing it as OpenAI does."""
    key_variable, url_variable = KEY_VARIABLES[provider]
    monkeypatch.setenv(key_variable, "bad-key")
    monkeypatch.setenv(url_variable, simulator.anthropic_base_url if provider == "anthropic"
                       else simulator.openai_base_url)
    monkeypatch.setenv("MINI_CLAUDE_PROVIDER", provider)
    run = cli("-p", "hello", "--output-format", "json")
    assert run.code == 1
    assert simulator.requests[-1].status == 401
    lines = [line for line in run.err.splitlines() if line.strip()]
    assert len(lines) == 1 and key_variable in lines[0] and "Traceback" not in run.err
    result = json.loads(run.out)
    assert result["is_error"] and key_variable in result["result"]  # Claude Code's shape
    assert "bad-key" not in run.out + run.err
    for path in (p for p in run.home.rglob("*") if p.is_file()):
        assert "bad-key" not in path.read_text(errors="replace"), path


def test_every_writer_shares_one_rule_for_what_is_a_secret(tmp_path: Path) -> None:
    """A real key is masked by the transcript, a spilled output and a provider message
    alike; a placeholder shorter than the rule is left alone by all of them."""
    from mini_claude.providers.redact import redact
    from mini_claude.secrets import MASK, MIN_SECRET_CHARS, mask
    from mini_claude.tools.process import HeadTailBuffer
    from mini_claude.transcript import Transcript

    key, placeholder = "abcdefgh1234", "x" * (MIN_SECRET_CHARS - 1)
    text = f"key={key} other={placeholder}"
    expected = f"key={MASK} other={placeholder}"
    assert mask(text, [key, placeholder, None, ""]) == expected
    assert redact(text, [key, placeholder]) == expected

    transcript = Transcript(tmp_path / "t.jsonl", secrets=[key, placeholder])
    transcript.event("note", text=text)
    transcript.close()
    assert expected in (tmp_path / "t.jsonl").read_text()

    buffer = HeadTailBuffer(8, tmp_path / "spill.txt", secrets=(key, placeholder))
    buffer.feed(text.encode(), final=True)
    buffer.close()
    assert buffer.spilled is not None
    assert buffer.spilled.read_text() == expected
