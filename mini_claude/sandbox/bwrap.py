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
from pathlib import Path

from mini_claude.sandbox.policy import Policy

PROBE_TIMEOUT_SECONDS = 15.0
BASE_FLAGS = ("--die-with-parent", "--new-session", "--unshare-user", "--unshare-pid",
              "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL",
              "--disable-userns")
INSTALL_HINT = "install bubblewrap (apt-get install bubblewrap)"


def bwrap_argv(bwrap: str, policy: Policy, cwd: Path, session_tmp: Path | None) -> list[str]:
    """``bwrap …`` up to and including ``--``; the command follows."""
    argv = [bwrap, *BASE_FLAGS]
    if policy.network == "off":
        argv.append("--unshare-net")
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if session_tmp is not None and not policy.fresh_tmp:
        argv += ["--bind", str(session_tmp), "/tmp"]
    else:
        argv += ["--tmpfs", "/tmp"]
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
