"""A scripted session of 50 ordinary commands, the sandbox off and then on (auto-allow, its
default), over HTTP on both providers: with it on, at least 80 % fewer questions, and nothing
outside the project changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_claude.permissions.asking import PermissionDecision, PermissionRequest
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.sandbox.support import needs_bwrap
from tests.support.agent import PROVIDERS, Run

pytestmark = needs_bwrap

WORK = [
    "ls -la", "cat README.md", "grep -rn add pkg", "wc -l pkg/core.py", "head -3 pkg/core.py",
    "mkdir -p build", "echo 'x = 1' > build/gen.py", "python3 -c 'print(1 + 1)'",
    "python3 build/gen.py", "cp pkg/core.py build/core_copy.py", "mv build/core_copy.py build/c.py",
    "rm build/c.py", "touch notes.txt", "echo line >> notes.txt", "sort notes.txt",
    "find . -name '*.py' | sort", "du -sh .", "date +%Y", "env | grep -c PATH", "pwd",
    "sed -i 's/a + b/b + a/' pkg/core.py", "diff -u README.md README.md || true",
    "tar czf /tmp/src.tgz pkg && tar tzf /tmp/src.tgz", "git init -q . 2>/dev/null || true",
    "python3 -m py_compile pkg/core.py", "ls build", "cat notes.txt | tr a-z A-Z",
    "xargs -a notes.txt echo", "printf 'a\\nb\\n' > two.txt", "uniq two.txt",
    "awk '{print NR}' two.txt", "cut -c1 two.txt", "tee copy.txt < two.txt > /dev/null",
    "chmod +x build/gen.py", "stat -c %s README.md", "basename $PWD", "rm -rf build",
    "mkdir -p docs && echo '# docs' > docs/index.md", "ls docs", "cat docs/index.md",
    "test -f notes.txt && echo yes", "seq 3", "yes | head -2", "echo $((6 * 7))",
    "python3 -c 'import os; print(os.getcwd())'", "ls -R | head -20", "rm -f copy.txt",
    "echo done > status.txt", "cat status.txt",
    "touch ../outside/written.txt || true",
]


class Counts:
    def __init__(self) -> None:
        self.asked = 0

    async def __call__(self, request: PermissionRequest) -> PermissionDecision:
        self.asked += 1
        return PermissionDecision(True)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def one_session(sim: Simulator, provider: str, home: Path, root: Path, sandbox: bool) -> int:
    project = root / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "core.py").write_text("def add(a, b):\n    return a + b\n")
    (project / "README.md").write_text("# demo\n")
    (root / "outside").mkdir()
    (root / "outside" / "kept.txt").write_text("kept\n")
    before = snapshot(root / "outside")
    sim.policy = ScriptedPolicy([*(Reply("Working.", [ToolCall("run_shell", {"command": c})])
                                   for c in WORK), Reply("Done.")])
    counts = Counts()
    run = Run(sim, provider, home, project, approver=counts, sandbox=sandbox)
    try:
        run.start()
        run.turn("do the work")
    finally:
        run.close()
    if sandbox:
        assert snapshot(root / "outside") == before
    return counts.asked


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_sandbox_takes_away_at_least_four_questions_in_five(
    provider: str, simulator: Simulator, isolated_home: Path, tmp_path: Path,
) -> None:
    assert len(WORK) == 50
    without = one_session(simulator, provider, isolated_home, tmp_path / "off", sandbox=False)
    within = one_session(simulator, provider, isolated_home, tmp_path / "on", sandbox=True)
    assert without == 50
    assert within <= without * 0.2, within
