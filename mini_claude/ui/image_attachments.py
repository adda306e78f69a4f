"""Images sent with a message: ``@shot.png``, or a path pasted or dropped into the prompt.

Terminals paste a dropped file as its path, often quoted or with escaped
spaces; any word of the message that names an existing image file is sent as
an image, read through read_file (so its permission rules and size limits apply).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from mini_claude.conversation import ImageBlock, ToolUseBlock
from mini_claude.session.mentions import MENTION, TRAILING
from mini_claude.tools.images import is_image_path

if TYPE_CHECKING:
    from mini_claude import events as ev
    from mini_claude.agent.loop import Agent

MAX_IMAGES_PER_MESSAGE = 10


def image_paths_in(text: str, root: Path) -> list[str]:
    """Words of the message that name image files that exist, in order, each once."""
    try:
        words = shlex.split(text, posix=True)
    except ValueError:
        words = text.split()
    candidates = [m.group(1) for m in MENTION.finditer(text)]
    candidates += [w.removeprefix("file://") for w in words]
    found: list[str] = []
    for word in candidates:
        word = word.removeprefix("@").rstrip(TRAILING)
        if not is_image_path(word) or word in found:
            continue
        path = Path(word).expanduser()
        if (path if path.is_absolute() else root / path).is_file():
            found.append(word)
    return found[:MAX_IMAGES_PER_MESSAGE]


async def attach_images(agent: Agent, text: str) -> tuple[list[ImageBlock], list[ev.Event]]:
    """The images a message names, read as read_file reads them; a notice for each."""
    from mini_claude import events as ev

    images: list[ImageBlock] = []
    events: list[ev.Event] = []
    for index, path in enumerate(image_paths_in(text, agent.tool_context.root)):
        use = ToolUseBlock(f"user-image-{index}", "read_file", {"path": path})
        output = await agent.registry.execute(use.name, use.input, agent.tool_context)
        if output.is_error or not output.images:
            reason = output.content.strip().split("\n", 1)[0]
            events.append(ev.Notice(f"could not attach {path}: {reason}", "warning"))
            continue
        images.extend(output.images)
        events.append(ev.Notice(f"attached image {path}: {output.content}"))
    return images, events
