"""Small text helpers shared by every layer (no project imports, so anything may use them)."""

from __future__ import annotations

TARGET_DISPLAY_CHARS = 100  # a tool call's target (path, command) as a placeholder shows it


def shorten(text: str, limit: int, *, marker: str = "…") -> str:
    """``text`` on one line (whitespace runs become one space), at most ``limit`` characters;
    a cut one ends with ``marker``."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return flat[: limit - len(marker)].rstrip() + marker


def shorten_at_word(text: str, limit: int, *, marker: str = "…") -> str:
    """As :func:`shorten`, but a cut falls between words where one is near: text a person
    reads (a result's first line, a reason) is not cut mid-word."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - len(marker) + 1]
    space = cut.rfind(" ")
    cut = cut[:space] if space >= limit // 2 else cut[:-1]
    return cut.rstrip() + marker


def short_target(target: str) -> str:
    """A target on one line and short enough for a placeholder."""
    return shorten(target, TARGET_DISPLAY_CHARS)


def format_tokens(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 1_000:
        return f"{n / 1_000:.1f}k"
    return str(n)


def human_size(n_bytes: int) -> str:
    if n_bytes >= 1024 * 1024:
        return f"{n_bytes / (1024 * 1024):.1f} MB"
    if n_bytes >= 1024:
        return f"{n_bytes / 1024:.1f} KB"
    return f"{n_bytes} B"
