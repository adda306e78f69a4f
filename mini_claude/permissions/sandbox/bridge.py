"""The bridge inside the sandbox: ``127.0.0.1:<port>`` in the sandbox's own network
namespace, forwarded to the proxy's Unix socket outside.

It needs nothing the sandbox lacks (the Python mini-claude runs on, started isolated, with
no site packages), binds before the command starts so the first request finds it, then forks:
the child serves, the parent becomes the command. When the command ends, bubblewrap ends
and the kernel ends the bridge with the rest of the sandbox's processes.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mini_claude.permissions.sandbox.policy import real

BRIDGE_SOURCE = r"""
import os, socket, sys, threading
path, port, command = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(128)

def pump(source, sink):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    try:
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass

def serve(conn):
    upstream = socket.socket(socket.AF_UNIX)
    try:
        upstream.connect(path)
    except OSError:
        conn.close()
        return
    back = threading.Thread(target=pump, args=(upstream, conn), daemon=True)
    back.start()
    pump(conn, upstream)
    back.join()
    conn.close()
    upstream.close()

if os.fork() == 0:
    quiet = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(quiet, fd)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()
listener.close()
os.execvp(command[0], command)
"""


def bridge_argv(socket_inside: Path, port: int) -> list[str]:
    """The command line that starts the bridge; the sandboxed command's own follows it."""
    return [str(real(Path(sys.executable))), "-I", "-S", "-c", BRIDGE_SOURCE,
            str(socket_inside), str(port)]
