"""A Python 3.12 environment with Harbor installed, for the tests that check our output with
Harbor's own models (Harbor needs Python >= 3.12; the project runs on 3.11).

SLOW THE FIRST TIME: creating it installs Harbor and its dependencies from the package
registry (a few minutes). It is kept under ~/.cache/mini-claude-tests/harbor-venv
(MINI_CLAUDE_TEST_CACHE moves it) and reused by every later run.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

HARBOR = "harbor>=0.26,<0.27"
# Read at import, before the per-test HOME: the cache outlives the tests.
CACHE = Path(os.environ.get("MINI_CLAUDE_TEST_CACHE")
             or Path.home() / ".cache" / "mini-claude-tests")
VENV = CACHE / "harbor-venv"
INSTALLED = VENV / "installed.txt"  # written last: what was installed, once it all was
REAL_HOME = Path.home()
INSTALL_SECONDS = 1_200


def find_python_312() -> str:
    """pyenv's interpreter itself (its shim needs the real HOME), or python3.12 on PATH."""
    candidates = sorted(str(p) for p in (REAL_HOME / ".pyenv" / "versions").glob(
        "3.12*/bin/python3.12"))
    candidates += [found] if (found := shutil.which("python3.12")) else []
    for candidate in candidates:
        check = [candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 12)"]
        if subprocess.run(check, capture_output=True).returncode == 0:
            return candidate
    raise RuntimeError("Harbor needs Python 3.12, and none was found (pyenv or PATH)")


def harbor_python() -> Path:
    """The environment's interpreter, created first if needed (one creator at a time)."""
    python = VENV / "bin" / "python"
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / "harbor-venv.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if INSTALLED.is_file() and INSTALLED.read_text() == HARBOR and python.exists():
            return python
        _create()
    return python


def _create() -> None:
    """The slow part: a fresh venv and ``pip install harbor`` from the registry."""
    print(f"creating {VENV} with {HARBOR} (first run only; this takes minutes)",
          file=sys.stderr)
    shutil.rmtree(VENV, ignore_errors=True)
    subprocess.run([find_python_312(), "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "install", "-q",
                    "--disable-pip-version-check",
                    HARBOR], check=True, timeout=INSTALL_SECONDS)
    INSTALLED.write_text(HARBOR)
