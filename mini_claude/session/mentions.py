"""A message made ready to send: its ``@path`` files attached, the images it names sent as
images, each read the way ``read_file`` reads (its permission rules and limits apply).

:func:`prepare` is the one step every front end runs on what the user typed: the
REPL, print mode (``mini-claude -p "explain @src/x.py"``) and custom commands.
Terminals paste a dropped file as its path, often quoted or with escaped spaces;
any word that names an existing image file is sent as an image.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mini_claude.conversation import ImageBlock, ToolResultBlock, ToolUseBlock
from mini_claude.tools.images import is_image_path

if TYPE_CHECKING:  # the agent chain loads after the first prompt is drawn
    from mini_claude import events as ev
    from mini_claude.agent.loop import Agent

MENTION = re.compile(r"(?<![\w@])@([^\s@]+)")
TRAILING = ".,;:!?)]}'\""
MAX_IMAGES_PER_MESSAGE = 10


@dataclass(frozen=True, slots=True)
class PreparedMessage:
    """The text to send (attached files appended), its images, and what to tell the user."""

    text: str
    images: tuple[ImageBlock, ...] = ()
    events: tuple[ev.Event, ...] = field(default=())


async def prepare(agent: Agent, text: str, *,
                  withheld: Collection[Path] = ()) -> PreparedMessage:
    """``text`` with its ``@path`` files attached and its images read; nothing that
    resolves to a path in ``withheld`` (held for the user's approval) is read."""
    text, attached = await attach_mentions(agent, text, withheld)
    images, image_notes = await attach_images(agent, text, withheld)
    return PreparedMessage(text, tuple(images), (*attached, *image_notes))


def mentioned_files(text: str, root: Path) -> list[str]:
    """The ``@path`` words of ``text`` that name files (images included) or folders (their
    listing is attached), each once."""
    found: list[str] = []
    for word in dict.fromkeys(MENTION.findall(text)):
        path = word if _names_something(root / word) else word.rstrip(TRAILING)  # "@README.md."
        if _names_something(root / path) and path not in found:
            found.append(path)
    return found


def _names_something(path: Path) -> bool:
    return path.is_file() or path.is_dir()


def attachment_targets(text: str, root: Path) -> list[Path]:
    """Every file :func:`prepare` would read for ``text``, resolved."""
    words = [*mentioned_files(text, root), *image_paths_in(text, root)]
    return list(dict.fromkeys(_resolved(word, root) for word in words))


async def attach_mentions(agent: Agent, text: str,
                          withheld: Collection[Path] = ()) -> tuple[str, list[ev.Event]]:
    """`@path` words that name files: their text is appended, read the way read_file reads."""
    from mini_claude import events as ev
    from mini_claude.context.persist import admit_result
    from mini_claude.context.placeholders import count_lines

    events: list[ev.Event] = []
    attachments: list[str] = []
    root = agent.tool_context.root
    for index, path in enumerate(mentioned_files(text, root)):
        if is_image_path(path):
            continue  # an image goes as an image (attach_images)
        if _resolved(path, root) in withheld:
            continue
        folder = (root / path).is_dir()
        use = ToolUseBlock(f"user-mention-{index}", "list_files" if folder else "read_file",
                           {"path": path})
        output = await agent.registry.execute(use.name, use.input, agent.tool_context)
        block, report = admit_result(output, use, agent.store, agent.settings)
        if report is not None:
            events.append(ev.TierFired(report))
        if block.is_error:
            events.append(ev.Notice(f"could not attach @{path}: {_first_line(block)}", "warning"))
            continue
        label = f"the listing of @{path}" if folder else f"@{path}"
        attachments.append(f"[Attached {label}]\n{block.content}")
        events.append(ev.Notice(f"attached {label} ({count_lines(output.content)} lines)"))
    return "\n\n".join([text, *attachments]), events


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


async def attach_images(agent: Agent, text: str, withheld: Collection[Path] = ()
                        ) -> tuple[list[ImageBlock], list[ev.Event]]:
    """The images a message names, read as read_file reads them; a notice for each."""
    from mini_claude import events as ev

    images: list[ImageBlock] = []
    events: list[ev.Event] = []
    root = agent.tool_context.root
    for index, path in enumerate(image_paths_in(text, root)):
        if _resolved(path, root) in withheld:
            continue
        use = ToolUseBlock(f"user-image-{index}", "read_file", {"path": path})
        output = await agent.registry.execute(use.name, use.input, agent.tool_context)
        if output.is_error or not output.images:
            reason = output.content.strip().split("\n", 1)[0]
            events.append(ev.Notice(f"could not attach {path}: {reason}", "warning"))
            continue
        images.extend(output.images)
        events.append(ev.Notice(f"attached image {path}: {output.content}"))
    return images, events


def _resolved(word: str, root: Path) -> Path:
    """Where a word of a message points, links followed (``~`` is the home folder)."""
    path = Path(word).expanduser()
    path = path if path.is_absolute() else root / path
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.absolute()


def _first_line(block: ToolResultBlock) -> str:
    return block.content.strip().split("\n", 1)[0]
