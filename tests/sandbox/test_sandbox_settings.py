"""The ``sandbox`` object of the settings files (Claude Code's keys): merged across files,
a project's widening counted only once approved while its narrowing counts at once, bad
values a one-line warning; and the policy it gives for each mode."""

from __future__ import annotations

import json
from pathlib import Path

from mini_claude.permissions.sandbox.config import SandboxConfig
from mini_claude.permissions.sandbox.policy import make_policy
from mini_claude.session.settings_files import load_settings_layers


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_files_merge_and_a_project_widens_only_once_approved(
    tmp_path: Path, isolated_home: Path,
) -> None:
    project = tmp_path / "project"
    write(Path.home() / ".claude" / "settings.json", {"sandbox": {
        "enabled": True, "network": {"allowedDomains": ["pypi.org"]},
        "filesystem": {"denyRead": ["~/secrets"]}}})
    write(project / ".claude" / "settings.json", {"sandbox": {
        "enabled": False, "autoAllowBashIfSandboxed": "yes", "bogus": 1,
        "network": {"allowedDomains": ["evil.example"]},
        "filesystem": {"denyWrite": ["./locked"], "allowWrite": ["/"]}}})
    layers = load_settings_layers(project, isolated_home, 5.0)
    assert layers.warnings == [
        f'{project / ".claude" / "settings.json"}: "sandbox.autoAllowBashIfSandboxed" must be '
        "true or false; ignored",
        f'{project / ".claude" / "settings.json"}: "sandbox.bogus" is not a sandbox setting; '
        "ignored",
    ]
    unapproved = layers.sandbox(project_approved=False)
    assert unapproved.enabled is True  # the project cannot turn it off unapproved
    assert unapproved.allowed_domains == ("pypi.org",)
    assert unapproved.allow_write == ()
    assert unapproved.deny_write == (project / "locked",)  # narrowing counts at once
    assert unapproved.deny_read == (Path.home() / "secrets",)
    approved = layers.sandbox(project_approved=True)
    assert approved.enabled is False
    assert approved.allowed_domains == ("pypi.org", "evil.example")
    assert approved.allow_write == (Path("/"),)
    assert any(line.startswith("sandbox: turn the sandbox off")
               for f in layers.project_files() for line in f.grants)


def test_each_mode_writes_where_it_should(tmp_path: Path) -> None:
    project, extra, home = tmp_path / "project", tmp_path / "extra", tmp_path / "home"
    for folder in (project / ".git" / "hooks", extra, home / ".ssh", home / "mc"):
        folder.mkdir(parents=True)
    (project / ".git" / "config").write_text("")
    config = SandboxConfig(allow_write=(tmp_path / "cache",))
    (tmp_path / "cache").mkdir()
    default = make_policy("default", project, (extra,), home, (home / "mc",), config)
    assert default.writable == (project, extra, tmp_path / "cache")
    assert set(default.read_only) == {project / ".git" / "hooks", project / ".git" / "config"}
    assert set(default.held) == {project / ".claude", project / ".mini-claude"}
    assert set(default.hidden) == {home / ".ssh", home / "mc"}
    accept = make_policy("acceptEdits", project, (extra,), home, (), config)
    assert accept.writable == (project, extra)
    plan = make_policy("plan", project, (extra,), home, (), config)
    assert plan.writable == () and plan.read_only == () and plan.fresh_tmp
    assert plan.workspace == (project, extra)
