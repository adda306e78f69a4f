"""The session's sandbox: on or off, whether it can run here, and the command line for a
command. One object lives on the session's shared permissions, so sub-agents, ``!cmd`` and
custom commands' shell lines use the same sandbox as the model's own commands."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from mini_claude.permissions.mode_table import PermissionMode, mode_row
from mini_claude.permissions.rules import Rule
from mini_claude.permissions.sandbox import stand_ins
from mini_claude.permissions.sandbox.bwrap import (
    PROXY_SOCKET_NAME,
    ProxyRoute,
    bwrap_argv,
    unavailable_reason,
)
from mini_claude.permissions.sandbox.config import SandboxConfig
from mini_claude.permissions.sandbox.network import Asker, NetworkGate
from mini_claude.permissions.sandbox.policy import Policy, make_policy
from mini_claude.permissions.sandbox.proxy import DomainProxy
from mini_claude.permissions.sandbox.read_rules import read_deny_paths
from mini_claude.project.boundary import claude_user_dir
from mini_claude.settings import Settings

MARKER = "sandboxed"


@dataclass
class SandboxState:
    config: SandboxConfig = field(default_factory=SandboxConfig)
    enabled_by_setting: bool | None = None  # MINI_CLAUDE_SANDBOX (outranks the files)
    bwrap: str = "bwrap"
    home: Path = field(default_factory=Path.home)
    private_homes: tuple[Path, ...] = ()  # mini-claude's home, Claude Code's folder
    fail_by_setting: bool = False  # MINI_CLAUDE_SANDBOX_FAIL_IF_UNAVAILABLE
    switched: bool | None = None  # /sandbox on|off, for this session
    network_setting: str = "auto"  # MINI_CLAUDE_SANDBOX_NETWORK: auto, proxy or off
    proxy_port: int = 3128
    resolve_overrides: dict[str, str] = field(default_factory=dict)  # tests only
    domain_saver: Callable[[str], str] | None = None  # "don't ask again" for a domain
    records_home: Path | None = None  # where stand-in folders are noted (mini-claude's home)
    read_deny_rules: tuple[Rule, ...] = ()  # deny rules on Read: not readable inside either
    _tmp: Path | None = None
    _held: set[Path] = field(default_factory=set)
    _proxy: DomainProxy | None = None
    _gate: NetworkGate | None = None

    # ---- what is in force -----------------------------------------------------------------

    @property
    def wanted(self) -> bool:
        for choice in (self.switched, self.enabled_by_setting, self.config.enabled):
            if choice is not None:
                return choice
        return False

    @property
    def missing(self) -> str | None:
        """Why it cannot run here (None: it can)."""
        return unavailable_reason(self.bwrap)

    @property
    def active(self) -> bool:
        """Commands run sandboxed."""
        return self.wanted and self.missing is None

    @property
    def required(self) -> bool:
        """``failIfUnavailable``: with the sandbox wanted and missing, no command runs."""
        return self.fail_by_setting or bool(self.config.fail_if_unavailable)

    @property
    def auto_allow(self) -> bool:
        return self.config.auto_allow is not False

    @property
    def allow_unsandboxed(self) -> bool:
        return self.config.allow_unsandboxed is not False

    def startup_line(self) -> str | None:
        """The one line at start-up when the sandbox was asked for and cannot run."""
        if not self.wanted or self.missing is None:
            return None
        if self.required:
            return (f"sandbox unavailable: {self.missing}; sandbox.failIfUnavailable is set, "
                    "so no command will run")
        return (f"sandbox unavailable: {self.missing}; commands run unsandboxed and are "
                "asked about as usual")

    @property
    def proxied(self) -> bool:
        """Sandboxed commands reach the network through the domain proxy (else: none)."""
        if self.network_setting == "off":
            return False
        return self.network_setting == "proxy" or bool(self.config.allowed_domains)

    def excluded(self, command: str) -> bool:
        """A command the user's ``excludedCommands`` keeps outside the sandbox."""
        words = command.strip().split()
        for pattern in self.config.excluded_commands:
            wanted = pattern.removesuffix(":*").removesuffix("*").strip().split()
            if wanted and words[:len(wanted)] == wanted:
                return True
        return False

    # ---- running a command ----------------------------------------------------------------

    def policy(self, mode: PermissionMode, project: Path,
               additional: tuple[Path, ...]) -> Policy:
        config = self.config
        denied = read_deny_paths(self.read_deny_rules)
        if denied:
            config = replace(config, deny_read=(*config.deny_read, *denied))
        return make_policy(mode, project, additional, self.home, self.private_homes,
                           config, network="proxy" if self.proxied else "off")

    def prefix(self, mode: PermissionMode, project: Path, additional: tuple[Path, ...],
               cwd: Path, asker: Asker | None = None) -> list[str]:
        """The bubblewrap command line a sandboxed ``bash -c`` follows; ``asker``: how to
        ask the user about a new domain while this command runs."""
        policy = self.policy(mode, project, additional)
        made = [p for p in policy.held if not p.exists() and p not in self._held]
        if made and self.records_home is not None:
            stand_ins.record(self.records_home, made)
        self._held.update(made)
        bwrap = shutil.which(self.bwrap) or self.bwrap
        route = self._proxy_route(asker) if policy.network == "proxy" else None
        return bwrap_argv(bwrap, policy, cwd, self.session_tmp(), route)

    def _proxy_route(self, asker: Asker | None) -> ProxyRoute:
        """The session's proxy (started on first use); the latest command's asker asks."""
        if self._gate is None:
            self._gate = NetworkGate(lambda: self.config, dict(self.resolve_overrides),
                                     saver=self._save_domain)
        if asker is not None:
            self._gate.asker = asker
        if self._proxy is None:
            folder = Path(tempfile.mkdtemp(prefix="mini-claude-proxy-"))
            proxy = DomainProxy(folder / PROXY_SOCKET_NAME, self._gate.admit)
            proxy.start()
            self._proxy = proxy
            atexit.register(self.close)
        return ProxyRoute(self._proxy.socket_path.parent, self.proxy_port)

    def _save_domain(self, host: str) -> str:
        if self.domain_saver is None:
            return "kept for this session"
        return self.domain_saver(host)

    def network_refusals(self) -> list[str]:
        """What the proxy refused since last asked, for the model."""
        return self._gate.take_refusals() if self._gate is not None else []

    def session_tmp(self) -> Path:
        """The session's private ``/tmp`` (made on first use, removed when it ends)."""
        if self._tmp is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="mini-claude-sandbox-tmp-"))
            atexit.register(self.close)
        return self._tmp

    def close(self) -> None:
        """Remove the session's /tmp and the empty folders that held protected names."""
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        for path in self._held:
            with contextlib.suppress(OSError):
                if path.is_dir() and not any(path.iterdir()):
                    path.rmdir()
        self._held.clear()
        if self.records_home is not None:
            stand_ins.forget(self.records_home)
        if self._proxy is not None:
            self._proxy.stop()
            shutil.rmtree(self._proxy.socket_path.parent, ignore_errors=True)
            self._proxy = None

    # ---- telling the model and the user ---------------------------------------------------

    def failure_note(self, mode: PermissionMode, project: Path,
                     additional: tuple[Path, ...]) -> str:
        """Said to the model after a sandboxed command failed: what the sandbox stops."""
        policy = self.policy(mode, project, additional)
        writable = ("nothing is writable (plan mode)" if mode_row(mode).read_only
                    else f"only {policy.describe_writable()} is writable (minus settings, "
                         "hooks and .git/hooks and .git/config)")
        way_out = ("If it truly must run outside the sandbox, call run_shell again with "
                   "dangerouslyDisableSandbox: true and a reason; the user is asked."
                   if self.allow_unsandboxed else
                   "Commands cannot leave the sandbox here (sandbox.allowUnsandboxedCommands "
                   "is false).")
        refused = self.network_refusals()
        network = ("the network goes through a proxy that reaches only the domains in "
                   "sandbox.network.allowedDomains or approved by the user"
                   if self.proxied else "there is no network")
        if refused:
            network += " (it refused " + "; ".join(refused) + ")"
        return (f"[The command ran in the sandbox: {writable}; credentials in the home and "
                f"mini-claude's own files are not readable; {network}; /tmp is "
                "private. A 'Read-only file system', 'Permission denied', missing file or "
                f"network error may come from that. {way_out}]")

    def describe(self, mode: PermissionMode, project: Path,
                 additional: tuple[Path, ...]) -> list[str]:
        """``/sandbox``: on or off, what is writable and readable, the network, what is
        missing."""
        missing = self.missing
        if not self.wanted:
            state = "off (turn it on with /sandbox on, or sandbox.enabled in settings)"
        elif missing is not None:
            state = ("wanted but unavailable: "
                     + ("no command runs (sandbox.failIfUnavailable)" if self.required
                        else "commands run unsandboxed and are asked about"))
        else:
            state = "on: every command runs in it"
        lines = [f"Sandbox: {state}"]
        lines.append(f"Missing: {missing}" if missing else "Missing: nothing (bubblewrap works)")
        policy = self.policy(mode, project, additional)
        lines.append(f"Writable ({mode}): {policy.describe_writable()}")
        protected = [*policy.read_only, *policy.held]
        if protected:
            lines.append("Read-only inside them: " + ", ".join(str(p) for p in protected))
        lines.append("Readable: everything else, except: "
                     + (", ".join(str(p) for p in policy.hidden) or "nothing hidden"))
        if policy.reopened:
            lines.append("Readable again (allowRead): "
                         + ", ".join(str(p) for p in policy.reopened))
        lines.append("/tmp: " + ("a fresh one per command" if policy.fresh_tmp
                                 else "private to this session"))
        lines.append(self._describe_network())
        lines.append("Questions: " + ("sandboxed commands run without asking; deny and ask "
                                      "rules still apply" if self.auto_allow
                                      else "asked as usual (autoAllowBashIfSandboxed is off)"))
        lines.append("Leaving it: " + ("a command may ask to run unsandboxed, with a reason"
                                       if self.allow_unsandboxed
                                       else "never (allowUnsandboxedCommands is false)"))
        if self.config.excluded_commands:
            lines.append("Run outside it (asked as usual): "
                         + ", ".join(self.config.excluded_commands))
        return lines


    def _describe_network(self) -> str:
        if not self.proxied:
            return ("Network: none (no domain is reachable, nor the host's loopback; "
                    "sandbox.network.allowedDomains turns the domain proxy on)")
        config = self.config
        allowed = ", ".join(config.allowed_domains) or "none listed"
        line = (f"Network: through the domain proxy: {allowed}"
                + (f"; approved this session: {', '.join(sorted(self._gate.allowed))}"
                   if self._gate is not None and self._gate.allowed else "")
                + "; a new domain is asked about")
        if config.denied_domains:
            line += "; never: " + ", ".join(config.denied_domains)
        return line + ("; the host's loopback and private addresses only when listed by "
                       "address")


def session_sandbox(settings: Settings) -> SandboxState:
    """The session's sandbox from its settings (the files' ``sandbox`` object is set on it
    when they are read, and again when the project's files are approved)."""
    stand_ins.sweep(settings.home)  # what a killed session left
    return SandboxState(enabled_by_setting=settings.sandbox, bwrap=settings.sandbox_bwrap_path,
                        fail_by_setting=settings.sandbox_fail_if_unavailable,
                        private_homes=(settings.home, claude_user_dir()),
                        home=Path(os.path.expanduser("~")),
                        records_home=settings.home,
                        network_setting=settings.sandbox_network,
                        proxy_port=settings.sandbox_proxy_port,
                        resolve_overrides=parse_overrides(settings.sandbox_proxy_resolve))


def parse_overrides(text: str) -> dict[str, str]:
    """``name=address,…`` (the test-only resolver of the proxy)."""
    pairs = (item.partition("=") for item in text.split(","))
    return {name.strip().lower(): address.strip() for name, eq, address in pairs
            if eq and name.strip() and address.strip()}
