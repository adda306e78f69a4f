"""The empty folders that hold a protected name (``.claude``) while a session's commands run
in the sandbox are removed when the session ends; a session killed outright (SIGKILL)
cannot, so each one is recorded in mini-claude's home with the session's process id, and the
next session removes those whose session is gone (only while they are still empty)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from mini_claude.live_processes import is_running

RECORD_NAME = "sandbox-stand-ins"


def record_file(home: Path) -> Path:
    return home / RECORD_NAME


def record(home: Path, paths: list[Path]) -> None:
    """Note stand-ins this process made (best effort: a home that cannot be written to
    only means a killed session's stand-ins stay)."""
    if not paths:
        return
    with contextlib.suppress(OSError):
        home.mkdir(parents=True, exist_ok=True)
        with record_file(home).open("a", encoding="utf-8") as out:
            out.writelines(f"{os.getpid()}\t{path}\n" for path in paths)


def forget(home: Path) -> None:
    """This process's stand-ins are gone (it removed them itself)."""
    _rewrite(home, lambda pid, _path: pid != os.getpid())


def sweep(home: Path) -> list[Path]:
    """Remove the stand-ins of sessions no longer running; the ones removed."""
    removed: list[Path] = []

    def keep(pid: int, path: Path) -> bool:
        if is_running(pid):
            return True
        with contextlib.suppress(OSError):
            if path.is_dir() and not path.is_symlink() and not any(path.iterdir()):
                path.rmdir()
                removed.append(path)
        return False

    _rewrite(home, keep)
    return removed


def _rewrite(home: Path, keep: Callable[[int, Path], bool]) -> None:
    path = record_file(home)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return
    kept: list[str] = []
    for line in lines:
        pid_text, tab, where = line.partition("\t")
        if not tab or not pid_text.isdigit():
            continue
        if keep(int(pid_text), Path(where)):
            kept.append(line + "\n")
    with contextlib.suppress(OSError):
        if kept:
            path.write_text("".join(kept), encoding="utf-8")
        else:
            path.unlink()

