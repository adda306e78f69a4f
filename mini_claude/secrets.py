"""Which values are secrets, and how they are masked: one rule for every place that writes.

A key may reach a transcript, a saved result, a spilled shell output, the screen
or an error message; each of them masks through :func:`mask` with the values
:func:`api_keys` (or :func:`secret_values`) picked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mini_claude.settings import Settings

MASK = "[redacted]"
# Shorter "keys" are placeholders for local servers ("ollama", "EMPTY", "dummy", "test");
# masking them would mangle every tool output that mentions the word. A rejected key the
# server echoes back ("bad-key") is still long enough to be masked.
MIN_SECRET_CHARS = 7


def secret_values(candidates: Iterable[str | None]) -> tuple[str, ...]:
    """The candidates long enough to be real secrets, without duplicates."""
    return tuple(dict.fromkeys(c for c in candidates if c and len(c) >= MIN_SECRET_CHARS))


def api_keys(settings: Settings) -> tuple[str, ...]:
    """The API keys this process holds, of every provider."""
    return secret_values(settings.api_keys.values())


def mask(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every secret in ``secrets`` replaced by :data:`MASK`."""
    for secret in secret_values(secrets):
        text = text.replace(secret, MASK)
    return text


_SECRET_NAME = re.compile(r"key|token|secret|passw|auth|cookie|credential|session|sig", re.I)
_SCHEME = re.compile(r"^(Bearer|Basic|Token|Bot)\s+", re.I)


def shown_setting(name: str, value: str, secrets: Iterable[str | None]) -> str:
    """A header's or variable's value as an approval panel shows it: the API keys masked,
    and the value of any secret-looking name (``*_TOKEN``, ``Authorization``) hidden but
    for its length, so a user sees that a secret is sent without the screen showing it."""
    value = mask(value, secrets)
    if not value or not _SECRET_NAME.search(name):
        return value
    scheme = _SCHEME.match(value)
    prefix = scheme.group(0) if scheme else ""
    rest = value[len(prefix):]
    return f"{prefix}•••• ({len(rest)} chars)" if rest else value
