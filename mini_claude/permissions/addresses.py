"""Which addresses are this machine's or its private network's: web_fetch and the sandbox's
network gate both refuse them unless a setting names them."""

from __future__ import annotations

import ipaddress

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def refused(address: IpAddress) -> str | None:
    """Why an address is off limits, or None for a public one."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_private or address.is_reserved or address.is_unspecified:
        return "private"
    if address.is_multicast:
        return "multicast"
    return None
