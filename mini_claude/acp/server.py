"""The stdio side of ``--acp``: stdin and stdout carry the protocol and nothing else."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from typing import cast

from acp import run_agent
from acp.interfaces import Agent

from mini_claude.acp.agent import EditorAgent
from mini_claude.exit_codes import EXIT_INTERRUPTED, EXIT_OK
from mini_claude.tools.process import kill_live_groups

MESSAGE_LIMIT_BYTES = 50 * 1024 * 1024  # one JSON-RPC line: a prompt with embedded files
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def serve(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_serve(args))
    finally:
        kill_live_groups()  # no shell command outlives the editor's connection


async def _serve(args: argparse.Namespace) -> int:
    reader, writer = await protocol_streams()
    agent = EditorAgent(args)
    stopped = _stop_on_signals()
    try:
        await run_agent(cast(Agent, agent), writer, reader)
    except asyncio.CancelledError:
        if not stopped.is_set():
            raise
    finally:
        await asyncio.shield(agent.close())
    return EXIT_INTERRUPTED if stopped.is_set() else EXIT_OK


def _stop_on_signals() -> asyncio.Event:
    """A stop signal ends the connection the way a closed stdin does: sessions end whole."""
    loop = asyncio.get_running_loop()
    stopped = asyncio.Event()
    main = asyncio.current_task()

    def stop() -> None:
        stopped.set()
        if main is not None:
            main.cancel()

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop)
    return stopped


async def protocol_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """The protocol on private copies of fds 0 and 1; the fds themselves become
    /dev/null and stderr, so a tool's child never reads the editor's messages and a
    stray print never breaks a line of the protocol."""
    loop = asyncio.get_running_loop()
    protocol_in, protocol_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    reader = asyncio.StreamReader(limit=MESSAGE_LIMIT_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                 os.fdopen(protocol_in, "rb", buffering=0))
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(protocol_out, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return reader, writer
