"""Print mode's stream-json as an ATIF trajectory (the Agent Trajectory Interchange Format
that evaluation harnesses such as Harbor read), built with plain dicts.

``mini-claude export-atif RUN.jsonl`` writes it. One agent step per model reply (lines
of one reply that share a message id are one step), carrying the reply's text, its tool
calls, the results of those calls as the step's observation and the reply's token counts;
the prompt, when given, is the first (user) step; compactions and notices are system
steps; the result line gives the final metrics.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from mini_claude.exit_codes import EXIT_OK, EXIT_USAGE
from mini_claude.headless.lines import OWN_TYPE
from mini_claude.safe_read import read_limited

ATIF_VERSION = "ATIF-v1.6"
AGENT_NAME = "mini-claude"
MAX_INPUT_BYTES = 512 * 1024 * 1024  # a long run's stream, whole
Json = dict[str, Any]


class Converter:
    """Reads lines in order, keeping the step each tool result belongs to."""

    def __init__(self, prompt: str | None = None) -> None:
        self.steps: list[Json] = []
        self.init: Json = {}
        self.result: Json | None = None
        self._last_message_id: str | None = None
        self._step_of_call: dict[str, Json] = {}
        if prompt is not None and prompt.strip():
            self._add({"source": "user", "message": prompt})

    def _add(self, step: Json) -> Json:
        step = {"step_id": len(self.steps) + 1, **step}
        self.steps.append(step)
        return step

    def feed(self, line: Json) -> None:
        kind = line.get("type")
        if kind == "system" and line.get("subtype") == "init":
            self.init = line
        elif kind == "assistant":
            self._assistant(line)
        elif kind == "user":
            self._tool_results(line)
        elif kind == OWN_TYPE:
            self._own(line)
        elif kind == "result":
            self.result = line

    def _assistant(self, line: Json) -> None:
        message = line.get("message") or {}
        message_id = message.get("id")
        same_reply = message_id is not None and message_id == self._last_message_id
        step = self.steps[-1] if same_reply and self.steps else None
        if step is None:
            step = self._add({"source": "agent", "message": ""})
            model = message.get("model") or self.init.get("model")
            if model:
                step["model_name"] = model
        self._last_message_id = message_id
        for block in message.get("content") or []:
            if block.get("type") == "text" and block.get("text"):
                step["message"] = f"{step['message']}\n\n{block['text']}".lstrip("\n")
            elif block.get("type") == "tool_use":
                call_id = str(block.get("id", ""))
                call = {"tool_call_id": call_id, "function_name": str(block.get("name", "")),
                        "arguments": block.get("input") or {}}
                step.setdefault("tool_calls", []).append(call)
                self._step_of_call[call_id] = step
        metrics = step_metrics(message.get("usage"))
        if metrics is not None:
            step["metrics"] = metrics

    def _tool_results(self, line: Json) -> None:
        self._last_message_id = None
        content = (line.get("message") or {}).get("content")
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            call_id = str(block.get("tool_use_id", ""))
            step = self._step_of_call.get(call_id)
            if step is None:
                continue  # a result for a call we never saw: no step may claim it
            result: Json = {"source_call_id": call_id, "content": result_text(block)}
            if block.get("is_error"):
                result["extra"] = {"is_error": True}
            step.setdefault("observation", {"results": []})["results"].append(result)

    def _own(self, line: Json) -> None:
        subtype = line.get("subtype")
        text: str | None = None
        if subtype == "compaction_finished":
            text = (f"context compacted ({line.get('reason')}): {line.get('tokens_before')} "
                    f"-> {line.get('tokens_after')} tokens")
        elif subtype == "compaction_failed":
            text = f"compaction failed ({line.get('reason')}): {line.get('error')}"
        elif subtype == "notice":
            text = str(line.get("text", ""))
        if text:
            self._last_message_id = None
            self._add({"source": "system", "message": text,
                       "extra": {k: v for k, v in line.items() if k not in ("uuid",)}})

    def trajectory(self) -> Json:
        own = self.init.get(OWN_TYPE) or {}
        agent: Json = {"name": AGENT_NAME, "version": str(own.get("version") or "unknown")}
        if self.init.get("model"):
            agent["model_name"] = self.init["model"]
        extra = {k: v for k, v in (("provider", own.get("provider")),
                                    ("tools", self.init.get("tools")),
                                    ("cwd", self.init.get("cwd"))) if v}
        if extra:
            agent["extra"] = extra
        trajectory: Json = {"schema_version": ATIF_VERSION, "agent": agent,
                            "steps": self.steps}
        session_id = self.init.get("session_id") or (self.result or {}).get("session_id")
        if session_id:
            trajectory["session_id"] = str(session_id)
        if self.result is not None:
            trajectory["final_metrics"] = final_metrics(self.result, len(self.steps))
        return trajectory


def step_metrics(usage: object) -> Json | None:
    """Prompt tokens count the cached ones too, as Anthropic's session totals do."""
    if not isinstance(usage, dict):
        return None
    cached = usage.get("cache_read_input_tokens") or 0
    written = usage.get("cache_creation_input_tokens") or 0
    return {
        "prompt_tokens": (usage.get("input_tokens") or 0) + cached + written,
        "completion_tokens": usage.get("output_tokens") or 0,
        "cached_tokens": cached,
        "extra": {"cache_creation_input_tokens": written},
    }


def final_metrics(result: Json, steps: int) -> Json:
    totals = step_metrics(result.get("usage")) or {}
    extra = {k: result[k] for k in ("subtype", "is_error", "num_turns", "stop_reason",
                                     "duration_ms", "errors", "permission_denials", OWN_TYPE)
             if k in result}
    return {
        "total_prompt_tokens": totals.get("prompt_tokens", 0),
        "total_completion_tokens": totals.get("completion_tokens", 0),
        "total_cached_tokens": totals.get("cached_tokens", 0),
        "total_cost_usd": result.get("total_cost_usd"),
        "total_steps": steps,
        "extra": extra,
    }


def result_text(block: Json) -> str:
    """A tool result's content: text as it is, blocks of text joined."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else json.dumps(content)


def convert(lines: Iterable[Json], prompt: str | None = None) -> Json:
    converter = Converter(prompt)
    for line in lines:
        converter.feed(line)
    return converter.trajectory()


def parse_stream(text: str) -> tuple[list[Json], int]:
    """The JSON objects of a stream, and how many lines were not one (a run killed
    mid-line leaves half a line at the end)."""
    lines: list[Json] = []
    skipped = 0
    for raw in text.splitlines():
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            skipped += 1
            continue
        if isinstance(value, dict):
            lines.append(value)
        else:
            skipped += 1
    return lines, skipped


def main(argv: Sequence[str]) -> int:
    """``mini-claude export-atif RUN.jsonl [-o trajectory.json] [--prompt-file FILE]``."""
    parser = argparse.ArgumentParser(
        prog="mini-claude export-atif", allow_abbrev=False,
        description="Convert print mode's stream-json output (mini-claude -p --output-format "
        "stream-json --verbose) to an ATIF trajectory.")
    parser.add_argument("stream", metavar="FILE", help="the stream-json lines ('-' for stdin)")
    parser.add_argument("-o", "--output", metavar="PATH",
                        help="write the trajectory here (default: stdout)")
    parser.add_argument("--prompt-file", metavar="PATH",
                        help="the prompt of the run, for the trajectory's first (user) step")
    args = parser.parse_args(argv)
    try:
        text = _read(args.stream)
        prompt = _read(args.prompt_file) if args.prompt_file else None
    except (OSError, UnicodeDecodeError) as exc:
        print(f"mini-claude: export-atif: cannot read input: {exc}", file=sys.stderr)
        return EXIT_USAGE
    lines, skipped = parse_stream(text)
    if not lines:
        print(f"mini-claude: export-atif: {args.stream} has no stream-json lines",
              file=sys.stderr)
        return EXIT_USAGE
    if skipped:
        print(f"mini-claude: export-atif: warning: {skipped} line(s) were not JSON objects "
              "and were left out", file=sys.stderr)
    document = json.dumps(convert(lines, prompt), indent=2, ensure_ascii=False) + "\n"
    if args.output is None:
        sys.stdout.write(document)
        return EXIT_OK
    try:
        Path(args.output).write_text(document, encoding="utf-8")
    except OSError as exc:
        print(f"mini-claude: export-atif: cannot write {args.output}: {exc.strerror or exc}",
              file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def _read(name: str) -> str:
    if name == "-":
        return sys.stdin.buffer.read().decode("utf-8")
    return read_limited(Path(name), MAX_INPUT_BYTES).decode("utf-8")
