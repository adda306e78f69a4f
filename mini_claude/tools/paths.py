"""Where a tool may look and where it may write.

Every path is resolved (symlinks followed) before it is judged, so a link
inside the project that points elsewhere counts as elsewhere. Reads outside
the project need the user's approval, except under the mini-claude home,
where persisted results and transcripts live for the model to page through.
Writes outside the project are refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mini_claude.tools.base import PermissionRequest, ToolContext
from mini_claude.tools.common import ToolError


@dataclass(frozen=True, slots=True)
class ResolvedPath:
    path: Path  # absolute, symlinks resolved
    shown: str  # relative to the project when inside it, else absolute
    inside_project: bool
    inside_home: bool

    @property
    def freely_readable(self) -> bool:
        return self.inside_project or self.inside_home


def project_root(ctx: ToolContext) -> Path:
    return ctx.root.expanduser().resolve()


def home_folder(ctx: ToolContext) -> Path:
    return ctx.settings.home.expanduser().resolve()


def resolve(raw: str, ctx: ToolContext) -> ResolvedPath:
    """Resolve a path the model gave, relative to the project folder."""
    if "\x00" in raw:
        raise ToolError("path contains a NUL character")
    root = project_root(ctx)
    path = (root / Path(raw.strip()).expanduser()).resolve()
    inside = path.is_relative_to(root)
    return ResolvedPath(
        path=path,
        shown=shown_path(path, root),
        inside_project=inside,
        inside_home=path.is_relative_to(home_folder(ctx)),
    )


def shown_path(path: Path, root: Path) -> str:
    """The path as the model should see it: short inside the project, absolute outside."""
    if path == root:
        return "."
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def read_permission(tool_name: str, raw: str, ctx: ToolContext) -> PermissionRequest | None:
    """Ask before reading outside the project; remembering it covers that one folder."""
    try:
        target = resolve(raw, ctx)
    except ToolError:
        return None  # the run reports the problem
    if target.freely_readable:
        return None
    folder = target.path if target.path.is_dir() else target.path.parent
    return PermissionRequest(
        tool_name=tool_name,
        summary=f"read {target.path} (outside the project folder)",
        subject=f"read:{folder}",
    )


def writable(raw: str, ctx: ToolContext) -> ResolvedPath:
    """Resolve a write target, refusing anything outside the project."""
    target = resolve(raw, ctx)
    if not target.inside_project:
        raise ToolError(
            f"refusing to write {target.path}: it is outside the project folder "
            f"{project_root(ctx)} (symlinks are followed)"
        )
    return target
