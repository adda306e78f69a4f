"""Keys typed while output is printed above the live box keep their meaning (real pty)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect
import pytest

SCRIPT = Path(__file__).parents[1] / "support" / "live_box_in_pty.py"


def _spawn() -> pexpect.spawn:
    env = {**os.environ, "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1",
           "PYTHONPATH": str(Path(__file__).parents[2])}
    return pexpect.spawn(sys.executable, [str(SCRIPT)], env=env, dimensions=(24, 100),
                         encoding="utf-8", timeout=30)


@pytest.mark.parametrize(("keys", "outcome"), [
    ("also check the logs\r", "SUBMITTED:also check the logs"),  # Enter stays Enter (not LF)
    ("\x04", "END-OF-INPUT"),  # Ctrl-D reaches the box (the line discipline would eat it)
])
def test_keys_typed_while_output_prints_above_the_box_keep_their_meaning(
    keys: str, outcome: str
) -> None:
    child = _spawn()
    try:
        child.expect("PRINTING")
        child.send(keys)  # the terminal is held by the printing now
        child.expect("PRINTED")
        child.expect(r"(SUBMITTED:[^\r\n]*|END-OF-INPUT|NOTHING:[^\r\n]*)\r?\n")
        assert child.match.group(1) == outcome
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert "also check" not in child.before  # never echoed by the terminal either
