"""Which destinations sandboxed commands may reach through the proxy, as Claude Code decides.

1. ``sandbox.network.deniedDomains`` refuses, whatever else says yes;
2. ``allowedDomains`` (and this session's answers) admit a host;
3. a new host is asked about once, through the session's own question: "yes" for the
   session, "don't ask again" writes it to ``allowedDomains`` in the project's local
   settings (as Claude Code does), "no" refuses it for the session. Nobody to ask: refused;
4. an admitted host is resolved, and the connection goes to the addresses checked here: an
   address of this machine or its private network (loopback, link-local, private ranges) is
   refused unless ``allowedDomains`` names that address (or ``localhost``) itself.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass, field

from mini_claude.permissions.addresses import refused
from mini_claude.permissions.asking import Approver, PermissionRequest
from mini_claude.permissions.sandbox.config import SandboxConfig
from mini_claude.permissions.sandbox.domains import is_address, matches_any
from mini_claude.permissions.sandbox.proxy import Admission

QUESTION_TOOL = "run_shell"
NOBODY_TO_ASK = "nobody can be asked here"


@dataclass(frozen=True)
class Asker:
    """The session's question, and the loop it runs on (the command's)."""

    approve: Approver
    loop: asyncio.AbstractEventLoop


@dataclass
class NetworkGate:
    config: Callable[[], SandboxConfig]
    # Host name -> address, consulted before DNS (MINI_CLAUDE_SANDBOX_PROXY_RESOLVE).
    overrides: dict[str, str] = field(default_factory=dict)
    # Writes a host to allowedDomains; says where (run on the session's loop).
    saver: Callable[[str], str] | None = None
    asker: Asker | None = None
    allowed: set[str] = field(default_factory=set)  # "yes" this session
    refused_hosts: set[str] = field(default_factory=set)  # "no" this session
    refusals: list[str] = field(default_factory=list)  # not told to the model yet
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    async def admit(self, host: str, port: int) -> Admission:
        host = host.strip("[]").rstrip(".").lower()
        refusal = await self._refusal(host, port)
        if refusal is not None:
            return self._refuse(host, port, refusal)
        addresses = await self._resolve(host, port)
        if not addresses:
            return self._refuse(host, port, f"{host} could not be resolved")
        for address in addresses:
            why = refused(ipaddress.ip_address(address))
            if why is not None and not self._names_local(host, address, port):
                return self._refuse(host, port, f"{host} is {address}, a {why} address of this "
                                                "machine or its network; reached only when "
                                                "sandbox.network.allowedDomains lists "
                                                f"{address}")
        return Admission(addresses)

    def take_refusals(self) -> list[str]:
        told, self.refusals = self.refusals, []
        return told

    async def _refusal(self, host: str, port: int) -> str | None:
        config = self.config()
        if matches_any(host, port, config.denied_domains):
            return f"{host} is in sandbox.network.deniedDomains"
        if matches_any(host, port, (*config.allowed_domains, *self.allowed)):
            return None
        if host == "localhost" or (is_address(host)
                                   and refused(ipaddress.ip_address(host)) is not None):
            return (f"{host} is an address of this machine or its network; reached only when "
                    "sandbox.network.allowedDomains lists it")
        lock = self._locks.setdefault(host, asyncio.Lock())
        async with lock:  # many connections to one new host: one question
            if host in self.allowed:
                return None
            if host in self.refused_hosts:
                return f"the user refused {host} for this session"
            return await self._ask(host, port)

    async def _ask(self, host: str, port: int) -> str | None:
        unlisted = f"{host} is not in sandbox.network.allowedDomains"
        asker = self.asker
        if asker is None or asker.loop.is_closed():
            return f"{unlisted}, and {NOBODY_TO_ASK}"
        request = PermissionRequest(
            tool_name=QUESTION_TOOL,
            summary=f"A sandboxed command wants to reach {host} (port {port}); "
                    "\"don't ask again\" adds it to sandbox.network.allowedDomains",
            subject=f"network:{host}",
            kept_in=None if self.saver is None else "sandbox.network.allowedDomains")

        async def ask_and_keep() -> tuple[bool, bool, str]:
            decision = await asker.approve(request)
            if decision.allowed and decision.remember and self.saver is not None:
                self.saver(host)
            return decision.allowed, decision.asked, decision.reason or ""

        try:
            allowed, asked, reason = await asyncio.wrap_future(
                asyncio.run_coroutine_threadsafe(ask_and_keep(), asker.loop))
        except (RuntimeError, asyncio.CancelledError):
            return f"{unlisted}, and the question could not be asked"
        if allowed:
            self.allowed.add(host)
            return None
        if not asked:
            return f"{unlisted}, and {NOBODY_TO_ASK}"
        self.refused_hosts.add(host)
        return f"the user refused {host}" + (f": {reason}" if reason else "")

    async def _resolve(self, host: str, port: int) -> tuple[str, ...]:
        if host in self.overrides:
            return (self.overrides[host],)
        if is_address(host):
            return (host,)
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port,
                                                                 type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            return ()
        return tuple(dict.fromkeys(str(info[4][0]).split("%")[0] for info in infos))

    def _names_local(self, host: str, address: str, port: int) -> bool:
        """Whether the settings themselves name this local address (or localhost)."""
        listed = self.config().allowed_domains
        return matches_any(address, port, listed) or (
            host == "localhost" and matches_any(host, port, listed))

    def _refuse(self, host: str, port: int, why: str) -> Admission:
        message = f"Blocked by the sandbox: {why}"
        self.refusals.append(f"{host}:{port}: {why}")
        return Admission(refusal=message)
