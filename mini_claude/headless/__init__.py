"""Headless output: the versioned public JSON shapes of print mode and their schema."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from mini_claude.headless.lines import SCHEMA_VERSION, RunInfo
from mini_claude.headless.reporter import HeadlessReporter

SCHEMA_FILE = f"stream-json.v{SCHEMA_VERSION}.json"


def load_schema() -> dict[str, Any]:
    """The JSON Schema of every line print mode writes in the JSON formats."""
    text = resources.files("mini_claude").joinpath("schemas", SCHEMA_FILE).read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


__all__ = ["SCHEMA_FILE", "SCHEMA_VERSION", "HeadlessReporter", "RunInfo", "load_schema"]
