"""Where web_fetch may go: public addresses only, unless a setting names a private one.

A page the model reads can ask it to fetch ``http://192.168.1.1/admin`` or a
cloud metadata address; so every address the host resolves to is checked, and
a single loopback, link-local or private one refuses the fetch.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from mini_claude.permissions.addresses import IpAddress, refused
from mini_claude.tools.common import ToolError

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class PrivateAllowance:
    """The ``web_fetch_allow_private`` setting: host names and networks allowed anyway."""

    hosts: frozenset[str]
    networks: tuple[IpNetwork, ...]

    @classmethod
    def parse(cls, text: str) -> PrivateAllowance:
        hosts: set[str] = set()
        networks: list[IpNetwork] = []
        for item in (part.strip().lower() for part in text.split(",")):
            if not item:
                continue
            try:
                networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                hosts.add(item)
        return cls(frozenset(hosts), tuple(networks))

    def allows_host(self, host: str) -> bool:
        return host.lower() in self.hosts or self._covers_literal(host)

    def allows_address(self, address: IpAddress) -> bool:
        return any(address in network for network in self.networks)

    def _covers_literal(self, host: str) -> bool:
        try:
            return self.allows_address(ipaddress.ip_address(host))
        except ValueError:
            return False


def host_of(url: str) -> str:
    """The host a URL names (lower case), or "" when it names none."""
    try:
        return (urlsplit(url.strip()).hostname or "").lower()
    except ValueError:
        return ""


def checked_url(url: str, allowance: PrivateAllowance) -> str:
    """The URL to fetch: http(s) only, with a host; http becomes https except for hosts
    the setting allows (a test server on loopback speaks plain http)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        raise ToolError(f"not a valid URL: {url!r}") from None
    if parts.scheme not in ("http", "https"):
        raise ToolError(f"only http and https URLs can be fetched, not {parts.scheme or url!r}")
    if not parts.hostname:
        raise ToolError(f"the URL names no host: {url!r}")
    if parts.username or parts.password:
        raise ToolError("URLs with a user name or password are not fetched")
    if parts.scheme == "http" and not allowance.allows_host(parts.hostname):
        parts = parts._replace(scheme="https")
    return urlunsplit(parts)


def refused_without_lookup(url: str, allowance: PrivateAllowance) -> bool:
    """Whether the URL is refused whatever its name resolves to: not a fetchable URL, or a
    host that is an off-limits address (or ``localhost``) by itself. Such a fetch fails
    without asking the user first; other names are resolved and checked when fetched."""
    try:
        checked_url(url, allowance)
    except ToolError:
        return True
    host = host_of(url)
    if allowance.allows_host(host):
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]").split("%")[0])
    except ValueError:
        return False
    return refused(address) is not None and not allowance.allows_address(address)


async def check_host(host: str, port: int, allowance: PrivateAllowance) -> None:
    """Resolve the host and refuse it if any of its addresses is not public (and not allowed)."""
    if allowance.allows_host(host):
        return
    try:
        infos = await asyncio.to_thread(socket.getaddrinfo, host, port, 0, socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ToolError(f"cannot resolve {host}: {exc}") from None
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        why = refused(address)
        if why is not None and not allowance.allows_address(address):
            raise ToolError(
                f"refused: {host} resolves to {address}, a {why} address; web_fetch only "
                "reaches public addresses (MINI_CLAUDE_WEB_FETCH_ALLOW_PRIVATE lists exceptions)"
            )
