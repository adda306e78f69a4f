"""A session killed outright (SIGKILL) cannot remove the empty folders that held protected
names (``.claude``, ``.mini-claude``) in its project; the next session does, and leaves
every folder it did not make, or that is no longer empty, alone."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from mini_claude.permissions.sandbox.state import session_sandbox
from mini_claude.settings import Settings
from tests.sandbox.support import needs_bwrap

KILLED_SESSION = textwrap.dedent("""
    import os, signal, subprocess, sys
    from pathlib import Path
    from mini_claude.permissions.sandbox.config import SandboxConfig
    from mini_claude.permissions.sandbox.state import SandboxState
    project, home = Path(sys.argv[1]), Path(sys.argv[2])
    state = SandboxState(config=SandboxConfig(enabled=True), home=home / "user",
                         records_home=home)
    subprocess.run([*state.prefix("default", project, (), project), "true"], check=True)
    os.kill(os.getpid(), signal.SIGKILL)
""")


@needs_bwrap
def test_the_next_session_removes_the_stand_ins_a_killed_one_left(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "mc-home"
    project.mkdir()
    (project / "mine").mkdir()  # the user's own empty folder: never touched
    killed = subprocess.run([sys.executable, "-c", KILLED_SESSION, str(project), str(home)],
                            capture_output=True, text=True, timeout=120, check=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert sorted(p.name for p in project.iterdir()) == [".claude", ".git", ".mini-claude", "mine"]
    (project / ".mini-claude" / "settings.json").write_text("{}")  # used since: kept
    session_sandbox(Settings(home=home))
    assert sorted(p.name for p in project.iterdir()) == [".mini-claude", "mine"]
    assert not (home / "sandbox-stand-ins").exists()
