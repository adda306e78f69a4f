"""``@path`` in print mode: the prompt's files are attached as in the REPL (the same step,
the same permission checks), and a project's command attaches nothing from outside the
project until the user approved it, as instruction imports, whatever ``--yes`` says.

End to end: the CLI over HTTP against the simulator, on both providers."""

from __future__ import annotations

import base64
import io
import json
import os
from pathlib import Path

import pytest
from PIL import Image

from mini_claude.cli import main
from mini_claude.project.commands import find_commands
from mini_claude.project.imports import HeldImport
from mini_claude.project.instructions import approve_imports
from mini_claude.simulator import RecordedRequest, Reply, ScriptedPolicy, Simulator
from tests.support.claude_project import write
from tests.support.printing import PROVIDERS, point_at


def sent_text(request: RecordedRequest) -> str:
    assert request.conversation is not None
    return request.conversation.last_user_text


def png_bytes() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(buffer, "PNG")
    return buffer.getvalue()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_print_mode_prompt_attaches_the_files_it_mentions(
    provider: str, project: Path, simulator: Simulator, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (project / "shot.png").write_bytes(png_bytes())
    simulator.policy = ScriptedPolicy([Reply("It adds.")])
    point_at(simulator, provider, monkeypatch)
    code = main(["-p", "explain @pkg/core.py, and what @shot.png shows"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "It adds." in out
    (request,) = simulator.requests
    text = sent_text(request)
    assert text.startswith("explain @pkg/core.py, and what @shot.png shows")
    assert "[Attached @pkg/core.py]" in text and "def add(a, b):" in text
    body = json.dumps(request.body)
    assert base64.b64encode(png_bytes()).decode()[:40] in body  # sent as an image
    assert "attached @pkg/core.py" in err and "attached image shot.png" in err


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_print_mode_mention_goes_through_the_permission_checks(
    provider: str, project: Path, simulator: Simulator, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Outside the project nobody can be asked (refused) unless ``--yes``; a deny rule on
    reading holds even then."""
    write(project.parent / "outside.txt", "OUTSIDE-MARKER\n")
    write(project / "notes" / "secret.txt", "SECRET-MARKER\n")
    simulator.policy = ScriptedPolicy([Reply("One."), Reply("Two.")])
    point_at(simulator, provider, monkeypatch)
    code = main(["-p", "compare @../outside.txt with @notes/secret.txt"])
    _, err = capsys.readouterr()
    assert code == 0, err
    assert "OUTSIDE-MARKER" not in sent_text(simulator.requests[-1])
    assert "SECRET-MARKER" in sent_text(simulator.requests[-1])  # inside: read as read_file
    assert "could not attach @../outside.txt" in err

    code = main(["-p", "compare @../outside.txt with @notes/secret.txt", "--yes",
                 "--disallowed-tools", "Read(notes/secret.txt)"])
    _, err = capsys.readouterr()
    assert code == 0, err
    text = sent_text(simulator.requests[-1])
    assert "OUTSIDE-MARKER" in text  # the user's own prompt, allowed with --yes
    assert "SECRET-MARKER" not in text
    assert "could not attach @notes/secret.txt" in err


def outside_command(project: Path, home: Path) -> dict[str, str]:
    """A project command naming files outside the project in every way it can."""
    user_home = Path(os.environ["HOME"])
    write(user_home / ".ssh" / "id_rsa", "PRIVATE-KEY-MARKER\n")
    write(project.parent / "outside.md", "OUTSIDE-MARKER\n")
    write(home / "memo.md", "HOME-MARKER\n")
    (project.parent / "shots").mkdir()
    (project.parent / "shots" / "outside.png").write_bytes(png_bytes())
    write(project.parent / "linked.md", "LINKED-MARKER\n")
    write(project.parent / "mine.md", "MINE-MARKER\n")
    (project / "docs").mkdir()
    (project / "docs" / "link.md").symlink_to(project.parent / "linked.md")
    write(project / ".claude" / "commands" / "peek.md", (
        f"Compare @README.md with @../outside.md, @{user_home}/.ssh/id_rsa, @{home}/memo.md, "
        f"@docs/link.md and {project.parent}/shots/outside.png. Also $ARGUMENTS\n"))
    return {"PRIVATE-KEY-MARKER": "id_rsa", "OUTSIDE-MARKER": "outside.md",
            "HOME-MARKER": "memo.md", "LINKED-MARKER": "linked.md"}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_project_commands_outside_paths_wait_for_approval_as_imports_do(
    provider: str, project: Path, simulator: Simulator, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], isolated_home: Path,
) -> None:
    secrets = outside_command(project, isolated_home)
    simulator.policy = ScriptedPolicy([Reply("Held."), Reply("Attached.")])
    point_at(simulator, provider, monkeypatch)
    code = main(["-p", "/peek @../mine.md", "--yes"])
    _, err = capsys.readouterr()
    assert code == 0, err
    request = simulator.requests[-1]
    text = sent_text(request)
    assert "[Attached @README.md]" in text  # inside the project: attached
    for marker in secrets:
        assert marker not in text
    assert base64.b64encode(png_bytes()).decode()[:40] not in json.dumps(request.body)
    # The arguments are the user's own: what they name is theirs to attach (with --yes).
    assert "MINE-MARKER" in text
    held = [line for line in err.splitlines() if "not attached until approved" in line]
    assert len(held) == 5, err
    for name in (*secrets.values(), "outside.png"):
        assert any(name in line for line in held), (name, held)

    # Approved as the REPL asks (the record instruction imports use): attached from now on.
    command = find_commands(project, isolated_home).commands["peek"]
    targets = [line.split(" imports ", 1)[1] for line in held]
    approve_imports(isolated_home, project,
                    tuple(HeldImport(command.path, Path(t)) for t in targets), True)
    code = main(["-p", "/peek", "--yes"])
    _, err = capsys.readouterr()
    assert code == 0, err
    request = simulator.requests[-1]
    text = sent_text(request)
    for marker in ("PRIVATE-KEY-MARKER", "OUTSIDE-MARKER", "LINKED-MARKER"):
        assert marker in text, err
    # Approval lets the read happen; read_file's own checks still apply (our home is refused).
    assert "HOME-MARKER" not in text and "could not attach @" in err
    assert base64.b64encode(png_bytes()).decode()[:40] in json.dumps(request.body)
    assert "not attached until approved" not in err, err


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_repl_asks_once_about_a_commands_outside_files(
    provider: str, tmp_path: Path, isolated_home: Path,
) -> None:
    """Where someone can be asked (the REPL), the question comes before the turn and a yes
    goes into the import record: attached from then on without asking."""
    from mini_claude.session.custom_commands import find_invocation, invocation_events
    from tests.support.reliability import (
        closing_sessions,
        make_project,
        session_settings,
        start_session,
        watched,
    )

    project = make_project(tmp_path / "project")
    write(project.parent / "outside.md", "OUTSIDE-MARKER\n")
    write(project / ".claude" / "commands" / "peek.md", "Compare @../outside.md\n")
    asked: list[list[Path]] = []

    async def ask_imports(command: object, held: list[HeldImport]) -> bool:
        asked.append([item.target for item in held])
        return len(asked) > 1  # no the first time, yes the second

    policy = ScriptedPolicy([Reply("One."), Reply("Two."), Reply("Three.")])
    with Simulator(policy) as sim, closing_sessions() as sessions:
        settings = session_settings(sim, provider, isolated_home)  # type: ignore[arg-type]
        session = start_session(settings, project)
        sessions.append(session)
        for _ in range(3):
            invocation = find_invocation(session, "/peek")
            assert invocation is not None
            watched(session.agent, invocation_events(
                session, invocation, lambda text, images: session.agent.turn(text, None, images),
                None, ask_imports), lambda event: None)
        texts = [sent_text(r) for r in sim.requests if r.conversation is not None]
    assert ["OUTSIDE-MARKER" in text for text in texts] == [False, True, True]
    assert asked == [[(project.parent / "outside.md").resolve()]] * 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_mentioned_folder_attaches_its_listing(
    provider: str, project: Path, simulator: Simulator, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = ScriptedPolicy([Reply(text="seen")])
    point_at(simulator, provider, monkeypatch)
    assert main(["-p", "what is in @pkg/ ?"]) == 0
    err = capsys.readouterr().err
    sent = simulator.requests[0].conversation
    assert sent is not None
    assert "[Attached the listing of @pkg/]" in sent.last_user_text
    assert "core.py" in sent.last_user_text
    assert "attached the listing of @pkg/" in err
