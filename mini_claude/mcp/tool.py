"""An MCP server's tool as a registry tool: same permission flow, same result path."""

from __future__ import annotations

import json
import re
from typing import Any

from mini_claude.mcp.connection import McpCallError, RemoteTool, ServerConnection
from mini_claude.mcp.results import BinarySaver, ImageLoader, result_output
from mini_claude.permissions.asking import PermissionRequest
from mini_claude.protocol import ToolOutput, ToolSpec
from mini_claude.tool_kinds import ToolTraits
from mini_claude.tools.base import Prepared, ToolContext
from mini_claude.tools.images import image_from_bytes, vision_refusal

TOOL_PREFIX = "mcp__"
MAX_TOOL_NAME = 64  # what both providers accept
MAX_DESCRIPTION_CHARS = 2_048  # tool schemas ride along with every request
SUMMARY_ARGS_CHARS = 160
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``, as Claude Code names them, within the providers' rules."""
    name = f"{TOOL_PREFIX}{_UNSAFE_NAME.sub('_', server)}__{_UNSAFE_NAME.sub('_', tool)}"
    return name[:MAX_TOOL_NAME]


def _spec(name: str, server: str, remote: RemoteTool) -> ToolSpec:
    description = remote.description.strip() or f"The {remote.name} tool."
    if len(description) > MAX_DESCRIPTION_CHARS:
        description = description[: MAX_DESCRIPTION_CHARS - 1] + "…"
    schema = dict(remote.input_schema)
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return ToolSpec(name, f"[MCP server {server}] {description}", schema)


class McpTool:
    """Asks like ``run_shell`` (once, for the session, or no), then calls the server."""

    read_only = False
    traits = ToolTraits()

    def __init__(self, name: str, server: ServerConnection, remote: RemoteTool) -> None:
        self.server = server
        self.remote = remote
        self.spec = _spec(name, server.name, remote)

    def permission(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        shown = json.dumps(args, ensure_ascii=False)
        if len(shown) > SUMMARY_ARGS_CHARS:
            shown = shown[: SUMMARY_ARGS_CHARS - 1] + "…"
        return Prepared(PermissionRequest(
            tool_name=self.spec.name,
            summary=f"{self.server.name} · {self.remote.name} {shown}",
            subject=self.spec.name,
            detail=json.dumps(args, ensure_ascii=False, indent=2) if args else None,
        ))

    async def run(self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared) -> ToolOutput:
        capture = await ctx.checkpoints.before_command(self.spec.name)
        try:
            result = await self.server.call(self.remote.name, args)
        except McpCallError as exc:
            return ToolOutput(str(exc), is_error=True)
        finally:
            await ctx.checkpoints.after_command(capture)
        return result_output(result, self.spec.name, _saver(ctx), _image_loader(ctx))


def _saver(ctx: ToolContext) -> BinarySaver:
    """Binary parts go beside the session's persisted results."""
    folder = ctx.settings.tool_results_dir / (_safe_session(ctx.session_id) or "session")
    return BinarySaver(folder)


def _image_loader(ctx: ToolContext) -> ImageLoader | None:
    """Images go to the model as images, when the model takes them."""
    if vision_refusal(ctx.settings) is not None:
        return None
    settings = ctx.settings
    return lambda data, name: image_from_bytes(data, name, settings)


def _safe_session(session_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", session_id)


