"""Model names a Claude Code user types: aliases resolve to current ids, and a fallback
model takes over a turn when the model is overloaded or unknown to the server."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_claude.cli import main
from mini_claude.models import (
    PROVIDERS,
    known_window,
    price_for,
    resolve_model,
    wire_model,
)
from mini_claude.simulator import Fault, Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.ui.conveniences import ModelCompleter
from tests.support.printing import PROVIDERS as WIRES
from tests.support.printing import point_at


@pytest.mark.parametrize(
    ("typed", "model", "plan_model"),
    [
        ("sonnet", "claude-sonnet-5-5", None),
        ("Opus", "claude-opus-5-5", None),
        ("haiku", "claude-haiku-5-5", None),
        ("default", "claude-sonnet-5-5", None),
        ("sonnet[1m]", "claude-sonnet-5-5[1m]", None),
        ("opusplan", "claude-sonnet-5-5", "claude-opus-5-5"),
        ("claude-opus-4-8", "claude-opus-4-8", None),
        ("  my-proxy-model  ", "my-proxy-model", None),
    ],
)
def test_aliases_resolve_as_claude_code_resolves_them(
    typed: str, model: str, plan_model: str | None
) -> None:
    choice = resolve_model(typed, "anthropic", {})
    assert (choice.model, choice.plan_model) == (model, plan_model)


def test_every_alias_names_a_model_the_tables_know() -> None:
    for row in PROVIDERS.values():
        for alias in row.aliases:
            model = resolve_model(alias, row.name, {}).model
            assert known_window(model) is not None, model
            assert price_for(model) is not None, model


def test_the_environment_can_point_an_alias_elsewhere_as_in_claude_code() -> None:
    environ = {"ANTHROPIC_DEFAULT_HAIKU_MODEL": "claude-haiku-4-5",
               "ANTHROPIC_DEFAULT_OPUS_MODEL": "claude-opus-4-8"}
    assert resolve_model("haiku", "anthropic", environ).model == "claude-haiku-4-5"
    assert resolve_model("opusplan", "anthropic", environ).plan_model == "claude-opus-4-8"


def test_another_provider_keeps_claude_names_literal_but_knows_default() -> None:
    assert resolve_model("sonnet", "openai", {}).model == "sonnet"
    assert resolve_model("default", "openai", {}).model == PROVIDERS["openai"].default_model


def test_the_long_context_tag_is_not_sent_as_part_of_the_id() -> None:
    assert wire_model("claude-sonnet-5-5[1m]") == "claude-sonnet-5-5"
    assert wire_model("gpt-5.6-terra") == "gpt-5.6-terra"


def test_model_completion_offers_current_models_default_first_and_aliases() -> None:
    names = ModelCompleter("anthropic", "claude-opus-4-8").names
    assert names[0] == PROVIDERS["anthropic"].default_model
    assert {"claude-opus-5-5", "claude-haiku-5-5", "sonnet", "opusplan", "claude-opus-4-8"} <= set(
        names)
    assert not any(name.startswith("claude-3") for name in names)


def _answer(text: str) -> ScriptedPolicy:
    return ScriptedPolicy([Reply(text=text)])


def test_model_flag_alias_reaches_the_wire_as_the_current_id(
    project: Path, simulator: Simulator, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = _answer("hello")
    point_at(simulator, "anthropic", monkeypatch)
    assert main(["-p", "hi", "--model", "sonnet[1m]"]) == 0, capsys.readouterr().err
    assert [r.body["model"] for r in simulator.requests] == ["claude-sonnet-5-5"]


def test_an_agent_files_model_alias_is_honoured(
    project: Path, simulator: Simulator, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    agents = project / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "quick.md").write_text(
        "---\nname: quick\ndescription: answers fast\nmodel: haiku\n---\nAnswer briefly.\n"
    )
    simulator.policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("task", {"description": "look", "prompt": "say hi",
                                            "agent_type": "quick"})]),
        Reply(text="child done"),
        Reply(text="parent done"),
    ])
    point_at(simulator, "anthropic", monkeypatch)
    assert main(["-p", "delegate", "--yes"]) == 0, capsys.readouterr().err
    models = [r.body["model"] for r in simulator.requests]
    assert "claude-haiku-5-5" in models
    assert models[0] == models[-1] == "sim-sonnet"


@pytest.mark.parametrize("provider", WIRES)
@pytest.mark.parametrize("failure", ["overloaded", "model_not_found"])
def test_the_turn_goes_on_with_the_fallback_model_and_says_so(
    provider: str, failure: str, project: Path, simulator: Simulator,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("read_file", {"path": "README.md"})]),
        Reply(text="done on the fallback"),
    ])
    simulator.inject(Fault(failure, when=lambda conv: conv.model == "sim-sonnet",  # type: ignore[arg-type]
                           times=50, retry_after_ms=1))
    point_at(simulator, provider, monkeypatch)
    monkeypatch.setenv("MINI_CLAUDE_MAX_RETRIES", "1")
    code = main(["-p", "read the readme", "--fallback-model", "sim-haiku"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "done on the fallback" in out
    assert "fallback model sim-haiku" in err
    served = [r.body["model"] for r in simulator.requests if r.status == 200]
    assert served and set(served) == {"sim-haiku"}
    # the second call of the turn goes straight to the fallback: no new failed attempt
    failed = [r for r in simulator.requests if r.status != 200]
    assert failed and all(r.body["model"] == "sim-sonnet" for r in failed)
    assert failed[-1] is simulator.requests[len(failed) - 1]


def test_without_a_fallback_an_unknown_model_ends_the_turn_with_one_line(
    project: Path, simulator: Simulator, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = _answer("never")
    simulator.inject(Fault("model_not_found", times=5))
    point_at(simulator, "anthropic", monkeypatch)
    code = main(["-p", "hi"])
    _, err = capsys.readouterr()
    assert code != 0
    assert "404" in err and "Traceback" not in err
    assert len(simulator.requests) == 1  # not retried: a missing model stays missing


def test_opusplan_plans_with_opus_and_works_with_sonnet(
    project: Path, simulator: Simulator, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = ScriptedPolicy([Reply(text="a plan"), Reply(text="the work")])
    point_at(simulator, "anthropic", monkeypatch)
    assert main(["-p", "plan it", "--model", "opusplan", "--permission-mode", "plan"]) == 0
    assert main(["-p", "do it", "--model", "opusplan", "--yes"]) == 0, capsys.readouterr().err
    assert [r.body["model"] for r in simulator.requests] == ["claude-opus-5-5", "claude-sonnet-5-5"]
