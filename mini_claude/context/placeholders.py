"""The words left behind when a tool result is cut or cleared.

Every text here keeps the metadata (which tool, which target, how big) and
says where the full content lives and how to get it back: the model should
never have to guess whether something was lost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from mini_claude.conversation import ResultState, ToolResultBlock
from mini_claude.text import human_size, short_target

# Cut points move to a line break when one lies this close (as a share of what is kept).
LINE_SNAP_SHARE = 0.25
# Room left for the marker's own digits changing between two measurements.
MARKER_SLACK = 12


def count_lines(text: str) -> int:
    """Lines as an editor counts them: a final newline does not start another line."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def utf8_size(text: str) -> int:
    return len(text.encode("utf-8", errors="surrogatepass"))


def describe_result(block: ToolResultBlock) -> str:
    """``read_file src/app.py, 245 lines, 8,123 chars`` from the block's metadata."""
    chars = block.original_chars or len(block.content)
    lines = block.original_lines or count_lines(block.content)
    name = block.tool_name or "tool"
    target = short_target(block.target)
    head = f"{name} {target}" if target else name
    line_word = "line" if lines == 1 else "lines"
    return f"{head}, {lines:,} {line_word}, {chars:,} chars"


def cleared_placeholder(
    block: ToolResultBlock, saved_path: str, *, label: str, why: str = ""
) -> str:
    """What a cleared result says, e.g. ``[snipped: read_file a.py, 3 lines, 40 chars — …]``.

    How to get the text back is said once in the system prompt, not in every
    placeholder: on a long turn the placeholders are most of what old calls cost.
    """
    error = " (an error)" if block.is_error else ""
    reason = f"; {why}" if why else ""
    return f"[{label}: {describe_result(block)}{error}{reason} — full text at {saved_path}]"


def cleared_block(
    block: ToolResultBlock, saved_path: str, *, label: str, why: str = ""
) -> ToolResultBlock | None:
    """The block with its content swapped for a placeholder, or None if that frees nothing."""
    text = cleared_placeholder(block, saved_path, label=label, why=why)
    if len(text) >= len(block.content):
        return None
    return replace(
        with_original_size(block), content=text, saved_path=saved_path, state=ResultState.CLEARED
    )


def with_original_size(block: ToolResultBlock) -> ToolResultBlock:
    """The block with its original size recorded, so later placeholders still know it."""
    if block.original_chars:
        return block
    return replace(
        block, original_chars=len(block.content), original_lines=count_lines(block.content)
    )


def budget_marker(cut_chars: int, saved_path: str) -> str:
    return f"[... budget: {cut_chars:,} chars cut; full text at {saved_path} ...]"


def truncation_marker(cut_chars: int, *, save_failed: bool) -> str:
    why = "; saving the full output to disk failed, so the cut part is lost" if save_failed else ""
    return f"[... truncated: {cut_chars:,} chars cut{why} ...]"


def cut_to_head_and_tail(
    block: ToolResultBlock, limit: int, marker_for: Callable[[int], str]
) -> str:
    """Keep the start and the end of a result within ``limit`` characters.

    The start holds structure (imports, headers), the end holds verdicts (errors,
    summaries). The marker counts what was cut from the original output, also when
    the content was already a head and tail of it.
    """
    content = block.content
    reference = len(content)
    if block.state == ResultState.BUDGETED and block.original_chars > len(content):
        reference = block.original_chars
    marker = marker_for(reference)
    keep_each = max(0, (limit - len(marker) - 4 - MARKER_SLACK) // 2)
    head = _snap_head(content[:keep_each])
    tail = _snap_tail(content[len(content) - keep_each :] if keep_each else "")
    cut = reference - len(head) - len(tail)
    gap = "\n" if head.endswith("\n") else "\n\n"
    return f"{head}{gap}{marker_for(cut)}\n\n{tail}"


def _snap_head(head: str) -> str:
    newline = head.rfind("\n")
    if newline >= 0 and len(head) - newline <= len(head) * LINE_SNAP_SHARE:
        return head[: newline + 1]
    return head


def _snap_tail(tail: str) -> str:
    newline = tail.find("\n")
    if 0 <= newline < len(tail) * LINE_SNAP_SHARE:
        return tail[newline + 1 :]
    return tail


def preview_of(text: str, max_lines: int, max_bytes: int) -> tuple[str, int]:
    """The first lines of ``text`` within both limits, and how many lines that is."""
    kept: list[str] = []
    used = 0
    for line in _first_lines(text, max_lines):
        size = utf8_size(line)
        if used + size > max_bytes:
            if not kept:  # one enormous first line: show its start
                kept.append(_cut_to_bytes(line, max_bytes))
            break
        kept.append(line)
        used += size
    return "".join(kept), len(kept)


def _first_lines(text: str, count: int) -> list[str]:
    """Up to ``count`` lines with their newlines, without splitting the whole text."""
    lines: list[str] = []
    start = 0
    while start < len(text) and len(lines) < count:
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        lines.append(text[start:end])
        start = end
    return lines


def _cut_to_bytes(text: str, max_bytes: int) -> str:
    data = text.encode("utf-8", errors="surrogatepass")[:max_bytes]
    return data.decode("utf-8", errors="ignore")


def persisted_notice(
    block_tool: str, saved_path: str, size_bytes: int, lines: int, preview: str, shown: int
) -> str:
    """What the model sees instead of an output too large for the context."""
    line_word = "line" if lines == 1 else "lines"
    return (
        f"[Output too large for the context ({human_size(size_bytes)}, {lines:,} {line_word}) "
        f"from {block_tool}: saved in full to {saved_path}. Use read_file on that path with "
        f"offset/limit to page through it.]\n\nPreview (first {shown:,} of {lines:,} lines):\n"
        f"{preview}"
    )
