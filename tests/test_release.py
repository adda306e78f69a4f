"""The package as a user gets it: a wheel and an sdist that pass ``twine check``, a wheel that
installs into a fresh environment and runs, and one version everywhere."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from mini_claude import __version__

ROOT = Path(__file__).resolve().parent.parent
LEFT_OUT = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__",
                                  ".*_cache")


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once from a copy of the tree, so the checkout gains no build folders."""
    base = tmp_path_factory.mktemp("release")
    source = base / "source"
    shutil.copytree(ROOT, source, ignore=LEFT_OUT)
    out = base / "dist"
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "-o", str(out), str(source)],
                   check=True, capture_output=True, timeout=300)
    return out


def test_wheel_and_sdist_pass_twine_check(dist: Path) -> None:
    files = sorted(dist.iterdir())
    assert sorted(f.suffix for f in files) == [".gz", ".whl"]
    assert all(__version__ in f.name for f in files)
    checked = subprocess.run([sys.executable, "-m", "twine", "check", *map(str, files)],
                             capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "PASSED" in checked.stdout and "WARNING" not in checked.stdout


def test_the_wheel_carries_its_prompts_templates_and_schemas(dist: Path) -> None:
    wheel = next(dist.glob("*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for folder in ("mini_claude/templates/", "mini_claude/schemas/"):
        assert any(n.startswith(folder) and not n.endswith(".py") for n in names), folder
    assert "mini_claude/py.typed" in names


def test_the_wheel_installs_into_a_fresh_environment_and_runs(dist: Path, tmp_path: Path) -> None:
    """As pipx does it: a new environment of its own, nothing else on the path."""
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True, timeout=120)
    wheel = next(dist.glob("*.whl"))
    subprocess.run([str(env / "bin" / "pip"), "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, capture_output=True, timeout=120, env=clean)
    shown = subprocess.run([str(env / "bin" / "mini-claude"), "--version"],
                           capture_output=True, text=True, timeout=60, env=clean)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == f"mini-claude {__version__}"


def test_the_version_lives_in_one_place() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject
    assert __version__ not in pyproject
    assert f"## {__version__}" in (ROOT / "CHANGELOG.md").read_text()
