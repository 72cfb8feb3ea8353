"""Addresses: which hosts are this machine's own (loopback), said once for every check that asks."""

from __future__ import annotations

import ipaddress

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
