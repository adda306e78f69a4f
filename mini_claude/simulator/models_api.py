"""The Models API in both shapes: Anthropic's ``ModelInfo`` and an OpenAI-compatible list.

A test puts :class:`CatalogEntry` rows in ``Simulator.catalog``; the list shape
follows ``Simulator.models_flavour``: ``"vllm"`` (``max_model_len``),
``"llamacpp"`` (``meta.n_ctx_train``) or ``"openai"`` (no window at all).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

ModelsFlavour = Literal["vllm", "llamacpp", "openai"]
CREATED_AT = "2026-06-01T00:00:00Z"
CREATED_UNIX = 1_780_272_000


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    id: str
    max_input_tokens: int
    max_tokens: int = 128_000
    thinking_adaptive: bool = True
    thinking_enabled: bool = True
    effort: bool = True


def _support(value: bool) -> dict[str, bool]:
    return {"supported": value}


def anthropic_model(entry: CatalogEntry) -> dict[str, Any]:
    """One ``ModelInfo`` (``anthropic/types/model_info.py``)."""
    effort_levels = {level: _support(entry.effort) for level in ("low", "medium", "high", "max")}
    return {
        "type": "model",
        "id": entry.id,
        "display_name": entry.id.replace("-", " ").title(),
        "created_at": CREATED_AT,
        "lifecycle": "active",
        "max_input_tokens": entry.max_input_tokens,
        "max_tokens": entry.max_tokens,
        "capabilities": {
            "batch": _support(True),
            "citations": _support(True),
            "code_execution": _support(False),
            "context_management": {"supported": False},
            "effort": {"supported": entry.effort, **effort_levels},
            "image_input": _support(True),
            "pdf_input": _support(True),
            "server_tools": {"supported": False},
            "structured_outputs": _support(True),
            "thinking": {
                "supported": entry.thinking_adaptive or entry.thinking_enabled,
                "types": {
                    "adaptive": _support(entry.thinking_adaptive),
                    "enabled": _support(entry.thinking_enabled),
                    "disabled": _support(True),
                    "between_tools": _support(False),
                },
            },
        },
    }


def anthropic_list(entries: list[CatalogEntry]) -> dict[str, Any]:
    data = [anthropic_model(e) for e in entries]
    return {
        "data": data,
        "has_more": False,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
    }


def openai_list(entries: list[CatalogEntry], flavour: ModelsFlavour) -> dict[str, Any]:
    data: list[dict[str, Any]] = []
    for entry in entries:
        item: dict[str, Any] = {
            "id": entry.id, "object": "model", "created": CREATED_UNIX, "owned_by": "sim",
        }
        if flavour == "vllm":
            item["max_model_len"] = entry.max_input_tokens
        elif flavour == "llamacpp":
            item["meta"] = {"n_ctx_train": entry.max_input_tokens, "n_vocab": 32_000}
        data.append(item)
    return {"object": "list", "data": data}
