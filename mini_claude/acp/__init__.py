"""`mini-claude --acp`: the Agent Client Protocol over stdio, so editors (Zed, JetBrains,
Neovim) drive mini-claude. The protocol's package is imported only on this path."""

from __future__ import annotations

import argparse
import sys

from mini_claude.exit_codes import EXIT_USAGE


def run_acp(args: argparse.Namespace) -> int:
    """Serve one editor on stdin/stdout until it closes the connection."""
    try:
        from mini_claude.acp.server import serve
    except ImportError as exc:
        if exc.name is None or not exc.name.startswith("acp"):
            raise
        print("mini-claude: --acp needs the agent-client-protocol package "
              "(pip install agent-client-protocol)", file=sys.stderr)
        return EXIT_USAGE
    return serve(args)
