"""ExplorePolicy behaves like a model working through a real project with every tool."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai

from mini_claude.simulator import ExplorePolicy, Simulator
from mini_claude.simulator.policies import files_in_listing

SCHEMAS: dict[str, dict[str, Any]] = {
    "list_files": {"type": "object", "properties": {"path": {"type": "string"}}},
    "read_file": {"type": "object", "properties": {"path": {"type": "string"}}},
    "grep_search": {"type": "object", "properties": {"pattern": {"type": "string"}}},
    "run_shell": {"type": "object", "properties": {"command": {"type": "string"}}},
    "write_file": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    },
    "edit_file": {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "old_string": {"type": "string"},
            "new_string": {"type": "string"},
        },
    },
}


def make_project(root: Path) -> None:
    (root / "app").mkdir()
    (root / "tests").mkdir()
    (root / "README.md").write_text("# Demo\nA tiny app.\n")
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    (root / "app" / "main.py").write_text(
        "def main():\n    return 42\n\n\nclass Config:\n    pass\n"
    )
    (root / "tests" / "test_main.py").write_text("def test_main():\n    assert True\n")


def local_tools(root: Path) -> dict[str, Callable[[dict[str, Any]], str]]:
    def files() -> list[Path]:
        return sorted(p for p in root.rglob("*") if p.is_file())

    def grep(args: dict[str, Any]) -> str:
        pattern = re.compile(args["pattern"])
        return "\n".join(
            f"{p.relative_to(root)}:{n}:{line}"
            for p in files()
            for n, line in enumerate(p.read_text().splitlines(), 1)
            if pattern.search(line)
        )

    def edit(args: dict[str, Any]) -> str:
        path = root / args["path"]
        path.write_text(path.read_text().replace(args["old_string"], args["new_string"]))
        return "edited"

    def shell(args: dict[str, Any]) -> str:
        done = subprocess.run(
            args["command"], shell=True, cwd=root, capture_output=True, text=True, timeout=30
        )
        return f"exit code {done.returncode}\n{done.stdout}{done.stderr}"

    def write(args: dict[str, Any]) -> str:
        (root / args["path"]).write_text(args["content"])
        return "written"

    return {
        "list_files": lambda args: "\n".join(str(p.relative_to(root)) for p in files()),
        "read_file": lambda args: (root / args["path"]).read_text(),
        "grep_search": grep,
        "run_shell": shell,
        "write_file": write,
        "edit_file": edit,
    }


def run_anthropic_session(sim: Simulator, root: Path, offered: list[str]) -> tuple[list[str], str]:
    client = anthropic.Anthropic(api_key="k", base_url=sim.url, max_retries=0)
    tools: list[Any] = [{"name": n, "description": n, "input_schema": SCHEMAS[n]} for n in offered]
    run = local_tools(root)
    messages: list[Any] = [{"role": "user", "content": "Explore this project."}]
    called: list[str] = []
    for _ in range(12):
        reply = client.messages.create(model="sim", max_tokens=500, tools=tools, messages=messages)
        messages.append(
            {
                "role": "assistant",
                "content": [b.model_dump(exclude_none=True) for b in reply.content],
            }
        )
        uses = [b for b in reply.content if b.type == "tool_use"]
        if not uses:
            return called, "".join(b.text for b in reply.content if b.type == "text")
        called += [u.name for u in uses]
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": u.id,
                        "content": run[u.name](dict(u.input)),
                    }
                    for u in uses
                ],
            }
        )
    raise AssertionError("the policy never finished")


def test_explore_uses_every_tool_and_reports_what_it_found(tmp_path: Path) -> None:
    make_project(tmp_path)
    policy = ExplorePolicy(shell_command=f"{sys.executable} -V")
    with Simulator(policy) as sim:
        called, answer = run_anthropic_session(sim, tmp_path, list(SCHEMAS))
    assert called[0] == "list_files"
    assert called[-4:] == ["grep_search", "run_shell", "write_file", "edit_file"]
    read = called[1:-4]
    assert read and set(read) == {"read_file"}
    assert "README.md" in answer and "pyproject.toml" in answer
    assert f"Python {sys.version.split()[0]}" in answer
    notes = (tmp_path / "NOTES.md").read_text()
    assert "Status: reviewed" in notes and "Files read: README.md" in notes
    assert "reviewed" in answer
    assert all(r.status == 200 for r in sim.requests)


def test_explore_reads_files_it_saw_in_the_listing(tmp_path: Path) -> None:
    make_project(tmp_path)
    with Simulator(ExplorePolicy(max_reads=2)) as sim:
        run_anthropic_session(sim, tmp_path, ["list_files", "read_file"])
    read_request = sim.requests[1]
    assert read_request.reply is not None
    paths = [c.input["path"] for c in read_request.reply.tool_calls]
    assert paths == ["README.md", "pyproject.toml"]  # what a developer opens first
    assert len(sim.requests) == 3  # list, read, then the answer: missing tools are skipped


def test_explore_over_openai_reacts_to_a_failing_tool(tmp_path: Path) -> None:
    make_project(tmp_path)
    with Simulator(ExplorePolicy()) as sim:
        client = openai.OpenAI(api_key="k", base_url=sim.openai_base_url, max_retries=0)
        tools: list[Any] = [
            {"type": "function", "function": {"name": n, "parameters": SCHEMAS[n]}}
            for n in ("list_files", "write_file", "edit_file")
        ]
        messages: list[Any] = [{"role": "user", "content": "Explore."}]
        names: list[str] = []
        for _ in range(6):
            choice = client.chat.completions.create(
                model="sim", messages=messages, tools=tools
            ).choices[0]
            calls = choice.message.tool_calls or []
            messages.append(choice.message.model_dump(exclude_none=True))
            if not calls:
                break
            for call in calls:
                assert call.type == "function"
                names.append(call.function.name)
                json.loads(call.function.arguments)
                content = (
                    "README.md"
                    if call.function.name == "list_files"
                    else "Error: disk is read-only"
                )
                messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    answer = choice.message.content or ""
    assert names == ["list_files", "write_file"]  # no edit of notes that were never written
    assert "These calls failed: write_file." in answer
    assert "My notes are in" not in answer


def test_files_in_listing_prefers_entry_points_and_ignores_sizes() -> None:
    listing = "src/app/util.py 1.2 KB\n./README.md\npyproject.toml\nlogo.png\nsrc/app/cli.py"
    assert files_in_listing(listing, 3) == ["README.md", "pyproject.toml", "src/app/cli.py"]
