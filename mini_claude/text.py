"""Small text helpers shared by every layer (no project imports, so anything may use them)."""

from __future__ import annotations


def format_tokens(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 1_000:
        return f"{n / 1_000:.1f}k"
    return str(n)
