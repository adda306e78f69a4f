"""Keep secrets out of anything a user or a log may see.

Servers echo keys back (OpenAI's 401 quotes a partial key), so every provider
message passes through :func:`redact` before it leaves ``providers/``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mini_claude.secrets import MASK, mask, secret_values
from mini_claude.text import shorten

# Shapes of well-known API keys; the partial echoes use '*' or '.' in the middle.
_KEY_PATTERNS = (
    re.compile(r"\b(?:sk|gsk|xai|pk|rk)[-_][A-Za-z0-9_\-*.]{6,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"),
    re.compile(r"(?i)\b(bearer|x-api-key:?)\s+[A-Za-z0-9_\-*.~+/=]{8,}"),
)
# A secret's head is enough to identify it; longer keys may be echoed by their prefix.
_HEAD_CHARS = 10
_MIN_HEAD_KEY = 16
_MAX_MESSAGE_CHARS = 400


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Mask the given secrets (and their heads) and anything shaped like an API key."""
    known = secret_values(secrets)
    text = mask(text, known)
    for secret in known:
        if len(secret) >= _MIN_HEAD_KEY:
            text = text.replace(secret[:_HEAD_CHARS], MASK)
    for pattern in _KEY_PATTERNS:
        text = pattern.sub(_mask_match, text)
    return text


def _mask_match(match: re.Match[str]) -> str:
    scheme = match.group(1) if match.re.groups else None
    return f"{scheme} {MASK}" if scheme else MASK


def clean_message(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Secrets masked, on one line, capped: user-facing errors are one line."""
    return shorten(redact(text, secrets), _MAX_MESSAGE_CHARS)
