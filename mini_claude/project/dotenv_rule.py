"""What a `.env` file may set: the user's own file anything, a project's file less.

A repository is not trusted: its `.env` travels with a clone. So a project `.env`

- may set any ``MINI_CLAUDE_*`` setting except ``MINI_CLAUDE_HOME`` (where transcripts
  and saved results go: a repository must not be able to pull them into itself);
- may set an API key;
- may set a base URL (``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``) only together with
  the key for it in that same file, and only when that key is the one sent (the
  environment does not override it): a repository can never route the user's own key
  to a host it names. A base URL taken from a project file is announced in one line.

The home `.env` (``$MINI_CLAUDE_HOME/.env``) is the user's and may set anything.
The real environment wins over both files. Each ignored setting gets one warning line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

NEVER_FROM_PROJECT = ("MINI_CLAUDE_HOME",)
KEY_FOR_BASE_URL = {"ANTHROPIC_BASE_URL": "ANTHROPIC_API_KEY", "OPENAI_BASE_URL": "OPENAI_API_KEY"}
DEFAULT_HOME = "~/.mini-claude"


@dataclass
class LayeredEnvironment:
    """The values settings are built from, and why any project value was left out."""

    values: dict[str, str]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def home_folder(environ: Mapping[str, str]) -> Path:
    """The home, from the real environment only (never from a `.env` file)."""
    return Path(environ.get("MINI_CLAUDE_HOME", "").strip() or DEFAULT_HOME).expanduser()


def _read(path: Path) -> dict[str, str]:
    from dotenv import dotenv_values

    if not path.is_file():
        return {}
    return {k: v for k, v in dotenv_values(path).items() if v is not None}


def _is_set(values: Mapping[str, str], name: str) -> bool:
    return bool(values.get(name, "").strip())


def layered_environment(
    cwd: Path, environ: Mapping[str, str], home: Path | None = None
) -> LayeredEnvironment:
    """Environment over project `.env` over home `.env`, with the project rule applied."""
    home_file = (home or home_folder(environ)) / ".env"
    project_file = cwd / ".env"
    home_values = _read(home_file)
    project_values = {} if _same_file(project_file, home_file) else _read(project_file)
    warnings: list[str] = []
    notes: list[str] = []
    for name in NEVER_FROM_PROJECT:
        if name in project_values:
            del project_values[name]
            warnings.append(
                f"ignored {name} from {project_file}: a project .env may not move the "
                "mini-claude home (set it in the environment instead)"
            )
    for url_name, key_name in KEY_FOR_BASE_URL.items():
        if not _is_set(project_values, url_name) or _is_set(environ, url_name):
            continue
        key_from_project = _is_set(project_values, key_name) and not _is_set(environ, key_name)
        if not key_from_project:
            del project_values[url_name]
            warnings.append(
                f"ignored {url_name} from {project_file}: a project .env may set a base URL "
                f"only together with {key_name} in the same file"
            )
        else:
            notes.append(f"using {url_name} and {key_name} from {project_file}")
    merged = dict(home_values)
    merged.update(project_values)
    merged.update(environ)
    return LayeredEnvironment(merged, warnings, notes)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False
