"""Addresses: which hosts are this machine's own (loopback), and which address a request came from."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# The names and addresses a local client uses for this machine.
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def is_loopback_host(host: str) -> bool:
    """Whether `host` (a name or an address, IPv6 with or without brackets) is this machine."""
    host = host.strip().strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def loopback_netlocs() -> list[str]:
    """Host header values of loopback requests, with and without a port (`127.0.0.1:*`)."""
    hosts = [f"[{name}]" if ":" in name else name for name in LOOPBACK_NAMES]
    return [*(f"{host}:*" for host in hosts), *hosts]


def parse_networks(values: Iterable[str]) -> tuple[Network, ...]:
    """Addresses and CIDR blocks (`10.0.0.0/8`, `::1`); ValueError names a bad one."""
    networks = []
    for value in values:
        try:
            networks.append(ipaddress.ip_network(value.strip(), strict=False))
        except ValueError:
            raise ValueError(f"{value!r} is not an IP address or network.") from None
    return tuple(networks)


def _in(address: str, networks: Sequence[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip().strip("[]"))
    except ValueError:
        return False
    return any(ip in network for network in networks)


def client_address(peer: str, forwarded_for: str | None, trusted: Sequence[Network]) -> str:
    """The address a request came from, believing X-Forwarded-For only from trusted proxies.

    The peer is the client unless it is a trusted proxy; then X-Forwarded-For is read from the
    right (each proxy appends the address it received from) and the first address that is not a
    trusted proxy is the client. Anything to its left was written by the client and is ignored.
    With no trusted proxies (the default) the header is never believed.
    """
    if not forwarded_for or not _in(peer, trusted):
        return peer
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _in(hop, trusted):
            return hop if _valid(hop) else peer
    return hops[0] if hops and _valid(hops[0]) else peer


def _valid(address: str) -> bool:
    try:
        ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return False
    return True
