"""Where a tool may look and where it may write.

Every path is resolved (symlinks followed) before it is judged, so a link
inside the project that points elsewhere counts as elsewhere. Reads outside
the project need the user's approval, except for this session's own files under
the mini-claude home (its saved results, spilled output and transcript), which
placeholders name for the model to page through. The rest of the home (other
sessions, other projects, the home ``.env``) asks like any other outside read, and
``--yes`` does not cover it (see :attr:`ResolvedPath.needs_its_own_approval`).
Writes outside the project are refused, except in the additional directories the
settings name (``permissions.additionalDirectories``), which count as the project's;
writes anywhere under the home (settings, transcripts, trust records, saved results)
are refused even when the project folder holds the home: the model must never
rewrite the rules it runs under.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path

from mini_claude.permissions.asking import PermissionRequest
from mini_claude.permissions.protected_paths import is_protected_path
from mini_claude.tools.base import ToolContext
from mini_claude.tools.common import ToolError


@dataclass(frozen=True, slots=True)
class ResolvedPath:
    path: Path  # absolute, symlinks resolved
    shown: str  # relative to the project when inside it, else absolute
    inside_project: bool
    inside_home: bool
    own_session_file: bool = False  # this session's saved results or transcript

    @property
    def freely_readable(self) -> bool:
        """Inside the project (but not the home, when the project holds it), or this
        session's own files."""
        return (self.inside_project and not self.inside_home) or self.own_session_file


def project_root(ctx: ToolContext) -> Path:
    return ctx.root.expanduser().resolve()


def home_folder(ctx: ToolContext) -> Path:
    return ctx.settings.home.expanduser().resolve()


def home_kept_out(base: Path, ctx: ToolContext) -> Path | None:
    """The home, when a search or listing from ``base`` would walk into it on the way: other
    sessions and the home ``.env`` are read only when named (which asks), never in passing."""
    home = home_folder(ctx)
    return home if home.is_relative_to(base) and not base.is_relative_to(home) else None


def resolve(raw: str, ctx: ToolContext) -> ResolvedPath:
    """Resolve a path the model gave, relative to the project folder."""
    if "\x00" in raw:
        raise ToolError("path contains a NUL character")
    root = project_root(ctx)
    path = (root / Path(raw.strip()).expanduser()).resolve()
    inside = path.is_relative_to(root)
    home = home_folder(ctx)
    inside_home = path.is_relative_to(home)
    return ResolvedPath(
        path=path,
        shown=shown_path(path, root),
        inside_project=inside,
        inside_home=inside_home,
        own_session_file=inside_home and _is_own_session_file(path, home, ctx.session_id),
    )


def _is_own_session_file(path: Path, home: Path, session_id: str) -> bool:
    """Under this session's results folder, or this session's transcript.

    Without an id, results go to the store's and the shell's fallback folders.
    """
    if "/" in session_id or session_id in (".", ".."):
        return False
    folders = [session_id] if session_id else ["session", "no-session"]
    if any(path.is_relative_to(home / "tool-results" / name) for name in folders):
        return True
    return bool(session_id) and path == home / "transcripts" / f"{session_id}.jsonl"


def shown_path(path: Path, root: Path) -> str:
    """The path as the model should see it: short inside the project, absolute outside."""
    if path == root:
        return "."
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def in_additional_directory(path: Path, ctx: ToolContext) -> bool:
    """Inside a folder the settings' ``additionalDirectories`` add to the project."""
    folders = ctx.rules.additional_directories if ctx.rules is not None else ()
    return any(path.is_relative_to(folder) for folder in folders)


def read_permission(tool_name: str, raw: str, ctx: ToolContext) -> PermissionRequest | None:
    """Ask before reading outside the project; remembering it covers that one folder."""
    try:
        target = resolve(raw, ctx)
    except ToolError:
        return None  # the run reports the problem
    if target.freely_readable or in_additional_directory(target.path, ctx):
        return None
    folder = target.path if target.path.is_dir() else target.path.parent
    where = (
        "mini-claude's home: other sessions and settings"
        if target.inside_home
        else "outside the project folder"
    )
    return PermissionRequest(
        tool_name=tool_name,
        summary=f"read {target.path} ({where})",
        subject=f"read:{folder}",
        beyond_yes=target.inside_home,
    )


def writable(raw: str, ctx: ToolContext) -> ResolvedPath:
    """Resolve a write target, refusing anything outside the project or under the home."""
    target = resolve(raw, ctx)
    if target.inside_home:
        raise ToolError(
            f"refusing to write inside mini-claude's home ({home_folder(ctx)}: settings, "
            f"transcripts, trust records, saved results are never written by a tool): "
            f"{target.path}"
        )
    if not target.inside_project and not in_additional_directory(target.path, ctx):
        raise ToolError(
            f"refusing to write {target.path}: it is outside the project folder "
            f"{project_root(ctx)} (symlinks are followed)"
        )
    return target


def write_caution(raw: str, ctx: ToolContext) -> str | None:
    """Why writing ``raw`` must be asked about in every mode but bypassPermissions: a file
    that other sessions or programs run or trust, or one with other hard links (a write
    changes it under every name, some perhaps outside the project). None: an ordinary write.
    """
    try:
        target = resolve(raw, ctx)
    except ToolError:
        return None  # the tool reports the problem and writes nothing
    reason = is_protected_path(Path(raw.strip()), project_root(ctx), Path.home())
    if reason is not None:
        return f"{target.shown} is {reason}"
    links = hard_links(target.path)
    if links > 1:
        return (f"{target.shown} has {links} hard links: a write changes the same file under "
                "its other names, which may be outside the project")
    return None


def hard_links(path: Path) -> int:
    """How many names the regular file has (0: no such file, or not a regular file)."""
    try:
        info = path.stat()
    except OSError:
        return 0
    return info.st_nlink if stat.S_ISREG(info.st_mode) else 0
