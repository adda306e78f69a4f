"""Which project files the user approved: one record for all a repository can make us run.

A project file such as ``.mcp.json`` (servers to start) or a project settings file
(hooks, permission rules) makes mini-claude run what a repository's author chose.
So it counts only after the user approved it once. The decision is remembered per
project under the home folder, keyed by the project's real path, the file's path
inside it, and a hash of the content the caller says matters: a repository that
changes the file after approval has to be approved again.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from mini_claude.private_dirs import make_private_dirs
from mini_claude.safe_read import read_limited

TRUST_FILE_NAME = "trusted-projects.json"
LOCK_FILE_NAME = ".trusted-projects.lock"
TRUST_FILE_MODE = 0o600
TRUST_FORMAT_VERSION = 1

TrustStatus = Literal["approved", "denied", "unknown"]
Decision = Literal["approved", "denied"]


def content_hash(content: bytes) -> str:
    return "sha256:" + hashlib.sha256(content).hexdigest()


class ProjectTrust:
    """Approvals of project files, stored in ``<home>/trusted-projects.json`` (0600).

    Only the newest decision per (project, file) is kept: approving a new version
    of a file forgets the old one, so going back to it asks again.
    """

    def __init__(self, home: Path) -> None:
        self.home = home
        self.path = home / TRUST_FILE_NAME

    def status(self, project: Path, file: Path, content: bytes) -> TrustStatus:
        record = self._load().get(_project_key(project), {}).get(_file_key(project, file))
        if not isinstance(record, dict) or record.get("hash") != content_hash(content):
            return "unknown"
        decision = record.get("decision")
        return decision if decision in ("approved", "denied") else "unknown"

    def approve(self, project: Path, file: Path, content: bytes) -> None:
        self._record(project, file, content, "approved")

    def deny(self, project: Path, file: Path, content: bytes) -> None:
        self._record(project, file, content, "denied")

    def _record(self, project: Path, file: Path, content: bytes, decision: Decision) -> None:
        """Read, change one record, write back atomically (a torn file would forget all),
        under a lock so two sessions deciding at once do not drop each other's record."""
        make_private_dirs(self.home)
        with self._locked():
            projects = self._load()
            files = projects.setdefault(_project_key(project), {})
            files[_file_key(project, file)] = {"hash": content_hash(content), "decision": decision}
            self._save(projects)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        fd = os.open(self.home / LOCK_FILE_NAME, os.O_RDWR | os.O_CREAT, TRUST_FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _load(self) -> dict[str, dict[str, Any]]:
        """The stored records; a missing or unreadable file counts as no decisions yet."""
        try:
            data = json.loads(read_limited(self.path))
        except (OSError, ValueError):
            return {}
        projects = data.get("projects") if isinstance(data, dict) else None
        if not isinstance(projects, dict):
            return {}
        return {k: v for k, v in projects.items() if isinstance(v, dict)}

    def _save(self, projects: dict[str, dict[str, Any]]) -> None:
        text = json.dumps(
            {"version": TRUST_FORMAT_VERSION, "projects": projects}, indent=2, sort_keys=True
        )
        fd, temp = tempfile.mkstemp(prefix=".trust-", dir=self.home)
        try:
            os.fchmod(fd, TRUST_FILE_MODE)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
            os.replace(temp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise


def _project_key(project: Path) -> str:
    return str(project.resolve())


def _file_key(project: Path, file: Path) -> str:
    """The file's path inside the project, so the same record is found however it is named."""
    if not file.is_absolute():
        return Path(os.path.normpath(file)).as_posix()
    root = project.resolve()
    resolved = file.resolve()
    try:
        return resolved.relative_to(root).as_posix()
    except ValueError:
        return resolved.as_posix()  # outside the project: its own real path
