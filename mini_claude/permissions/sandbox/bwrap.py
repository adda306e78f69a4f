"""The bubblewrap command line for a policy, and whether bubblewrap can run here at all.

Each command gets new user, PID, network and IPC namespaces with no capabilities
(``--unshare-user --cap-drop ALL``: even root inside cannot remount what is read-only), its
own ``/proc`` (no other process of the machine is visible, so none can be read through
``/proc/PID/root`` or ``environ``), no nested user namespaces, and ``--die-with-parent``
under the guard: when the guard goes, the sandbox's first process goes, and the kernel
ends every process of its PID namespace with it (``setsid``, ``nohup`` and double forks
included).
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from mini_claude.permissions.sandbox.bridge import bridge_argv
from mini_claude.permissions.sandbox.policy import Policy

PROBE_TIMEOUT_SECONDS = 15.0
BASE_FLAGS = ("--die-with-parent", "--new-session", "--unshare-user", "--unshare-pid",
              "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL",
              "--disable-userns")
INSTALL_HINT = "install bubblewrap (apt-get install bubblewrap)"
# Where the proxy's socket appears inside the sandbox (read-only: it cannot be replaced).
PROXY_DIR_INSIDE = Path("/tmp/.mini-claude-proxy")
PROXY_SOCKET_NAME = "proxy.sock"
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
SOCKS_VARIABLES = ("ALL_PROXY", "all_proxy")
NO_PROXY = "localhost,127.0.0.1,::1"  # the sandbox's own loopback: its servers, not the host's


@dataclass(frozen=True)
class ProxyRoute:
    """How a sandboxed command reaches the domain proxy: its socket's folder outside, and
    the port the bridge answers on inside."""

    socket_dir: Path
    port: int


def proxy_environment(port: int) -> dict[str, str]:
    """The variables that send a command's HTTP, HTTPS and other TCP through the proxy."""
    http = f"http://127.0.0.1:{port}"
    variables = dict.fromkeys(PROXY_VARIABLES, http)
    variables.update(dict.fromkeys(SOCKS_VARIABLES, f"socks5h://127.0.0.1:{port}"))
    variables.update(NO_PROXY=NO_PROXY, no_proxy=NO_PROXY)
    return variables


def bwrap_argv(bwrap: str, policy: Policy, cwd: Path, session_tmp: Path | None,
               proxy: ProxyRoute | None = None) -> list[str]:
    """``bwrap …`` up to and including ``--`` (and the proxy's bridge, when the network
    goes through it); the command follows. The sandbox always has a network namespace of
    its own: the host's network, loopback included, is never reachable directly."""
    argv = [bwrap, *BASE_FLAGS, "--unshare-net"]
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if session_tmp is not None and not policy.fresh_tmp:
        argv += ["--bind", str(session_tmp), "/tmp"]
    else:
        argv += ["--tmpfs", "/tmp"]
    if proxy is not None and policy.network == "proxy":
        argv += ["--ro-bind", str(proxy.socket_dir), str(PROXY_DIR_INSIDE)]
        for name, value in proxy_environment(proxy.port).items():
            argv += ["--setenv", name, value]
    if policy.hide_run and Path("/run").is_dir():
        argv += ["--tmpfs", "/run"]  # system services' sockets (docker, dbus) are not reachable
    for path in policy.sockets:
        argv += ["--bind", str(path), str(path)]
    for path in policy.workspace:
        argv += ["--ro-bind", str(path), str(path)]  # visible even under a private /tmp
    for path in policy.writable:
        argv += ["--bind", str(path), str(path)]
    for path in policy.read_only:
        argv += ["--ro-bind", str(path), str(path)]
    for path in policy.held:
        argv += ["--tmpfs", str(path), "--remount-ro", str(path)]
    for path in policy.hidden:
        if path.is_dir():
            argv += ["--tmpfs", str(path), "--remount-ro", str(path)]
        else:
            argv += ["--ro-bind", "/dev/null", str(path)]
    for path in policy.reopened:
        argv += ["--ro-bind", str(path), str(path)]
    argv += ["--chdir", str(cwd), "--"]
    if proxy is not None and policy.network == "proxy":
        argv += bridge_argv(PROXY_DIR_INSIDE / PROXY_SOCKET_NAME, proxy.port)
    return argv


@functools.cache
def unavailable_reason(bwrap: str) -> str | None:
    """Why commands cannot be sandboxed here (None: they can), tried once per program."""
    if not sys.platform.startswith("linux"):
        return f"the sandbox needs Linux with bubblewrap ({sys.platform} is not supported)"
    found = shutil.which(bwrap)
    if found is None:
        return f"bubblewrap was not found ({bwrap}): {INSTALL_HINT}"
    trial = [found, *BASE_FLAGS, "--unshare-net", "--ro-bind", "/", "/", "--dev", "/dev",
             "--proc", "/proc", "--", "true"]
    try:
        done = subprocess.run(trial, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=PROBE_TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap ({found}) could not be started: {exc}"
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        detail = said[-1] if said else f"exit code {done.returncode}"
        return (f"bubblewrap cannot create a sandbox here ({detail}); user namespaces may be "
                "switched off (kernel.unprivileged_userns_clone, or a container without them)")
    return None
