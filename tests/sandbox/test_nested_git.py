"""Repositories below the project's own (a vendored clone, a submodule's repository in
``.git/modules``) keep their hooks and config as protected as the root's: a sandboxed command
cannot plant a hook git would run there, while the rest of them stays writable."""

from __future__ import annotations

import subprocess
from pathlib import Path

from mini_claude.permissions.sandbox.config import SandboxConfig
from mini_claude.permissions.sandbox.state import SandboxState
from tests.sandbox.support import needs_bwrap


def make_repo_parts(git_dir: Path) -> None:
    (git_dir / "hooks").mkdir(parents=True)
    (git_dir / "config").write_text("[core]\n")
    (git_dir / "HEAD").write_text("ref: refs/heads/main\n")


@needs_bwrap
def test_nested_repositories_hooks_and_config_are_read_only(tmp_path: Path) -> None:
    project = tmp_path / "project"
    make_repo_parts(project / ".git")
    vendored = project / "vendor" / "lib" / ".git"
    submodule = project / ".git" / "modules" / "sub"
    make_repo_parts(vendored)
    make_repo_parts(submodule)
    state = SandboxState(config=SandboxConfig(enabled=True), home=tmp_path / "home")
    attempts = {
        "vendored hook": "echo pwned > vendor/lib/.git/hooks/post-checkout",
        "vendored config": "echo '[core] fsmonitor=x' >> vendor/lib/.git/config",
        "submodule hook": "echo pwned > .git/modules/sub/hooks/pre-commit",
        "submodule config": "echo '[core] fsmonitor=x' >> .git/modules/sub/config",
    }
    try:
        prefix = state.prefix("default", project, (), project)
        for what, command in attempts.items():
            done = subprocess.run([*prefix, "bash", "-c", command], capture_output=True,
                                  text=True, timeout=60, check=False)
            assert done.returncode != 0, what
            assert "Read-only file system" in done.stderr, (what, done.stderr)
        written = subprocess.run([*prefix, "bash", "-c", "echo x > vendor/lib/.git/HEAD2"],
                                 capture_output=True, text=True, timeout=60, check=False)
    finally:
        state.close()
    assert written.returncode == 0, written.stderr  # the rest of the repository is writable
    for git_dir in (vendored, submodule):
        assert list((git_dir / "hooks").iterdir()) == []
        assert (git_dir / "config").read_text() == "[core]\n"
