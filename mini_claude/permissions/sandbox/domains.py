"""``sandbox.network.allowedDomains`` and ``deniedDomains`` entries, as Claude Code reads them.

An entry is a host (``pypi.org``), a wildcard for its subdomains (``*.example.com``: any
name below example.com, not example.com itself), ``localhost``, or an address (``127.0.0.1``,
``[::1]``), each with an optional ``:port`` that limits it to one port. Wildcards broader than
a registered name (``*``, ``*.com``) are refused in the allow list.
"""

from __future__ import annotations

import ipaddress
import re

PORT = re.compile(r"[1-9][0-9]{0,4}")


def split_port(entry: str) -> tuple[str, int | None]:
    """``host:443`` -> (host, 443); a bracketed IPv6 address loses its brackets."""
    entry = entry.strip().lower()
    if entry.startswith("["):
        inner, _close, rest = entry[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
        return inner, _port(port)
    host, colon, port = entry.rpartition(":")
    if not colon or ":" in host:
        return entry, None
    number = _port(port)
    return (host, number) if number is not None else (entry, None)


def _port(text: str) -> int | None:
    if not PORT.fullmatch(text):
        return None
    return int(text) if int(text) <= 65535 else None


def is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def entry_problem(entry: str) -> str | None:
    """Why an allowedDomains entry cannot be used (None: it can)."""
    host, _port_number = split_port(entry)
    if is_address(host) or host == "localhost":
        return None
    if "://" in host or "/" in host or ":" in host:
        return "a host name, without scheme, path or (other than :port) colon"
    if host.startswith("*."):
        base = host[2:]
        if base.count(".") < 1 or any(not part for part in base.split(".")):
            return "a wildcard must name a domain below it (*.example.com, not *.com)"
        return None
    if "*" in host:
        return "only a leading *. is a wildcard"
    if "." not in host or host.startswith(".") or host.endswith("."):
        return "a full host name (example.com)"
    return None


def matches(host: str, port: int, entry: str) -> bool:
    """Whether a connection to ``host:port`` is one the entry names."""
    pattern, only_port = split_port(entry)
    if only_port is not None and only_port != port:
        return False
    host = host.lower().rstrip(".")
    if pattern == "*":
        return True
    if pattern.startswith("*."):
        return not is_address(host) and host.endswith(pattern[1:])
    return host == pattern


def matches_any(host: str, port: int, entries: tuple[str, ...] | set[str]) -> bool:
    return any(matches(host, port, entry) for entry in entries)
