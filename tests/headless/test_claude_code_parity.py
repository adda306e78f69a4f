"""The real Claude Code CLI (bundled with the Claude Agent SDK) and ours, on the same scripted
session against the simulator, driven as the SDK drives them: every key Claude Code writes on
its init, assistant, user and result lines is on ours with the same JSON type, except the
fields listed below that describe Claude Code itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import claude_agent_sdk

from mini_claude.simulator import Reply, SimConversation, Simulator, ToolCall
from tests.support.agent_sdk import ROOT

CLAUDE_CODE = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
FLAGS = ["--output-format", "stream-json", "--verbose", "--input-format", "stream-json",
         "--permission-mode", "bypassPermissions"]
# Fields about Claude Code's own machinery (its slash commands, plugins, fast mode, timing
# probes, sub-agent statistics); a consumer of our output has no use for a stand-in.
CLAUDE_CODE_ONLY: dict[str, set[str]] = {
    "system/init": {"slash_commands", "terminal_slash_commands", "apiKeySource",
                    "claude_code_version", "output_style", "agents", "skills", "plugins",
                    "memory_paths", "fast_mode_state", "analytics_disabled",
                    "product_feedback_disabled", "sonnet_1m_available", "workflows",
                    "capabilities", "served_by_anthropic", "messaging_socket_path",
                    "fast_mode_disabled_reason", "per_turn_effort_active", "ultrathink_available",
                    "ultrathink_typed_raises", "view_mode",
                    # not yet written by us
                    "sandbox_enabled", "original_cwd", "additional_directories"},
    "assistant": {"timestamp", "request_id", "thinking_duration_ms", "thinking_display",
                  "message.stop_sequence", "message.context_management"},
    "user": {"timestamp", "tool_result_meta"},
    "result": {"fast_mode_state", "fast_mode_disabled_reason", "subagent_stats", "safety_stops",
               "ttft_ms", "ttft_stream_ms", "time_to_request_ms", "first_content_frame_ms",
               "queued_turn_count", "result_index", "model_usage_since_last_result"},
}


def _write_step(conv: SimConversation, folder: Path) -> Reply:
    """Each CLI's own tool for writing a file: the model sees our names, Claude Code its own."""
    if "Write" in conv.tool_names:
        return Reply(tool_calls=[ToolCall("Write", {"file_path": str(folder / "out.txt"),
                                                    "content": "hi\n"})])
    return Reply(tool_calls=[ToolCall("write_file", {"path": "out.txt", "content": "hi\n"})])


def _session(sim: Simulator, argv: list[str], cwd: Path, env: dict[str, str]) -> list[Any]:
    sim.policy = _policy(cwd)
    message = json.dumps({"type": "user", "session_id": "", "parent_tool_use_id": None,
                          "message": {"role": "user", "content": "write out.txt"}})
    done = subprocess.run([*argv, *FLAGS], input=message + "\n", capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=180, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


class _policy:
    """Write a file, then answer: the same two steps for either CLI."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.calls = 0

    def respond(self, conv: SimConversation) -> Reply:
        if conv.is_summary_request or conv.is_notes_request or not conv.tool_names:
            return Reply("ok")  # a title or a summary, not a step of the session
        self.calls += 1
        return _write_step(conv, self.folder) if self.calls == 1 else Reply("done writing")


def _kind(line: dict[str, Any]) -> str:
    if line["type"] == "system":
        return f"system/{line.get('subtype')}"
    return str(line["type"])


def _shape(line: dict[str, Any]) -> dict[str, str]:
    """Key -> JSON type, one level into ``message``."""
    shape = {key: type(value).__name__ for key, value in line.items() if key != "message"}
    message = line.get("message")
    if isinstance(message, dict):
        shape.update({f"message.{k}": type(v).__name__ for k, v in message.items()})
    return shape


def _first(lines: list[Any], kind: str, block: str | None = None) -> dict[str, Any]:
    for line in lines:
        if _kind(line) != kind:
            continue
        content = line.get("message", {}).get("content")
        if block is None or (isinstance(content, list) and content
                             and content[0].get("type") == block):
            return dict(line)
    raise AssertionError(f"no {kind} line {block or ''} in {[_kind(x) for x in lines]}")


def test_our_lines_carry_every_field_claude_code_writes(
    simulator: Simulator, tmp_path: Path
) -> None:
    theirs_dir, ours_dir = tmp_path / "theirs", tmp_path / "ours"
    theirs_dir.mkdir()
    ours_dir.mkdir()
    common = {**os.environ, "ANTHROPIC_API_KEY": "test-key",
              "ANTHROPIC_BASE_URL": simulator.anthropic_base_url}
    theirs = _session(simulator, [str(CLAUDE_CODE)], theirs_dir, {
        **common, "HOME": str(tmp_path / "cc-home"), "IS_SANDBOX": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "CLAUDE_CONFIG_DIR": str(tmp_path / "cc"),
    })
    ours = _session(simulator, [sys.executable, "-m", "mini_claude.cli"], ours_dir, {
        **common, "MINI_CLAUDE_MODEL": "sim-sonnet", "PYTHONPATH": str(ROOT),
        "MINI_CLAUDE_HOME": str(tmp_path / "home"),
    })
    assert (theirs_dir / "out.txt").read_text() == (ours_dir / "out.txt").read_text() == "hi\n"
    pairs = [("system/init", None), ("assistant", "tool_use"), ("assistant", "text"),
             ("user", "tool_result"), ("result", None)]
    missing: list[str] = []
    for kind, block in pairs:
        their_shape = _shape(_first(theirs, kind, block))
        our_shape = _shape(_first(ours, kind, block))
        for key, json_type in their_shape.items():
            if key in CLAUDE_CODE_ONLY.get(kind, set()):
                continue
            ours_type = our_shape.get(key)
            if ours_type != json_type and not (json_type == "NoneType" or ours_type == "NoneType"):
                missing.append(f"{kind} {block or ''}: {key} ({json_type}, ours {ours_type})")
    assert not missing, "\n".join(missing)
    their_tool = _first(theirs, "assistant", "tool_use")["message"]["content"][0]
    our_tool = _first(ours, "assistant", "tool_use")["message"]["content"][0]
    assert (our_tool["name"], sorted(our_tool["input"])) == (their_tool["name"],
                                                             sorted(their_tool["input"]))
    assert sum(_kind(line) == "result" for line in ours) == 1
