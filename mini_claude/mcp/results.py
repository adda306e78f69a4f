"""An MCP tool result as the text (and images) the conversation carries.

An image is passed to the model as an image when the model takes images
(``image_loader``); it, audio and binary resources are also written under the
session's tool-results folder and the text names where; text parts are joined
in order. Whatever is large goes through tier 0 afterwards like any other result.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mini_claude.conversation import ImageBlock
from mini_claude.private_dirs import make_private_dirs
from mini_claude.protocol import ToolOutput
from mini_claude.tools.common import ToolError

# Bytes and a name -> an image block for the model; raises ToolError when it cannot be one.
ImageLoader = Callable[[bytes, str], ImageBlock]

if TYPE_CHECKING:
    from mcp_types import CallToolResult

PRIVATE_FILE_MODE = 0o600
EMPTY_RESULT = "(the tool returned no content)"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_EXTENSIONS = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
    "image/svg+xml": "svg",
    "audio/wav": "wav",
    "audio/mpeg": "mp3",
    "application/pdf": "pdf",
}


class BinarySaver:
    """Writes binary parts to ``<tool-results>/<session>/<ms>-<seq>-<tool>.<ext>`` (0600)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._seq = 0

    def save(self, tool_name: str, mime_type: str, data: bytes) -> Path:
        make_private_dirs(self.folder)
        extension = _EXTENSIONS.get(mime_type, "bin")
        stamp = int(time.time() * 1000)
        while True:
            self._seq += 1
            path = self.folder / f"{stamp}-{self._seq}-{_UNSAFE.sub('_', tool_name)}.{extension}"
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
            except FileExistsError:
                continue
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            return path


def result_output(result: CallToolResult, tool_name: str, saver: BinarySaver,
                  image_loader: ImageLoader | None = None) -> ToolOutput:
    """The result's parts in order, binary ones replaced by where they were saved; images
    also passed as images when ``image_loader`` can make them."""
    from mcp_types import AudioContent, EmbeddedResource, ImageContent, ResourceLink, TextContent

    parts: list[str] = []
    images: list[ImageBlock] = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ImageContent) and image_loader is not None and (
            image := _as_image(block.data, tool_name, image_loader)
        ) is not None:
            images.append(image)
            parts.append(f"[image ({block.mime_type}, {image.original_bytes:,} bytes) from "
                         f"{tool_name}: shown to you as an image]")
        elif isinstance(block, ImageContent | AudioContent):
            kind = "image" if isinstance(block, ImageContent) else "audio"
            parts.append(_binary_part(kind, block.mime_type, block.data, tool_name, saver))
        elif isinstance(block, EmbeddedResource):
            parts.append(_resource_part(block, tool_name, saver))
        elif isinstance(block, ResourceLink):
            named = f" ({block.name})" if block.name else ""
            parts.append(f"[resource link: {block.uri}{named}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=2))
    text = "\n".join(parts) if parts else EMPTY_RESULT
    return ToolOutput(text, is_error=result.is_error, images=tuple(images))


def _as_image(encoded: str, tool_name: str, loader: ImageLoader) -> ImageBlock | None:
    """The image for the model, or None to fall back to saving it (bad data, no vision)."""
    try:
        return loader(base64.b64decode(encoded, validate=True), f"{tool_name} image")
    except (binascii.Error, ValueError, ToolError):
        return None


def _resource_part(block: Any, tool_name: str, saver: BinarySaver) -> str:
    resource = block.resource
    text = getattr(resource, "text", None)
    if isinstance(text, str):
        return f"[resource {resource.uri}]\n{text}"
    mime = resource.mime_type or "application/octet-stream"
    return _binary_part(f"resource {resource.uri}", mime, resource.blob, tool_name, saver)


def _binary_part(
    kind: str, mime_type: str, encoded: str, tool_name: str, saver: BinarySaver
) -> str:
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return f"[{kind} ({mime_type}) could not be decoded: the server sent invalid base64]"
    size = f"{len(data):,} bytes"
    try:
        path = saver.save(tool_name, mime_type, data)
    except OSError as exc:
        return f"[{kind} ({mime_type}, {size}) could not be saved: {exc.strerror or exc}]"
    return (
        f"[{kind} ({mime_type}, {size}) saved to {path}; "
        "tool results reach the model as text, so it is not shown here]"
    )
