"""TRUSTED_PROXIES decides whose X-Forwarded-For is believed (none by default), over real HTTP."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import LiveServer
from workspaces.net import client_address, parse_networks

CALLBACK = "http://127.0.0.1:33418/callback"
PROXIES = parse_networks(["10.0.0.0/8", "::1"])


def _register(live: LiveServer, forwarded_for: str) -> int:
    body = {"client_name": "c", "redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none"}
    headers = {"X-Forwarded-For": forwarded_for}
    return httpx.post(f"{live.url}/oauth/register/", json=body, headers=headers, timeout=30).status_code


@pytest.mark.parametrize(
    ("peer", "forwarded_for", "expected"),
    [
        ("203.0.113.5", "198.51.100.1", "203.0.113.5"),  # not a proxy: the header is the client's lie
        ("10.0.0.2", "198.51.100.1", "198.51.100.1"),
        ("10.0.0.2", "6.6.6.6, 198.51.100.1", "198.51.100.1"),  # the left part is client-written
        ("10.0.0.2", "198.51.100.1, 10.0.0.3", "198.51.100.1"),  # two proxies in a row
        ("10.0.0.2", "not-an-address", "10.0.0.2"),
        ("10.0.0.2", None, "10.0.0.2"),
        ("::1", "2001:db8::7", "2001:db8::7"),
    ],
)
def test_the_client_address_believes_only_trusted_proxies(
    peer: str, forwarded_for: str | None, expected: str
) -> None:
    assert client_address(peer, forwarded_for, PROXIES) == expected
    assert client_address(peer, forwarded_for, ()) == peer


def test_a_bad_trusted_proxy_is_named() -> None:
    with pytest.raises(ValueError, match=r"'10\.0\.0\.300'"):
        parse_networks(["10.0.0.300"])


@pytest.mark.django_db(transaction=True)
def test_a_spoofed_forwarded_for_does_not_escape_the_registration_throttle(
    live: LiveServer, settings: Any
) -> None:
    settings.OAUTH_REGISTRATIONS_PER_WINDOW = 2
    statuses = [_register(live, f"198.51.100.{i}") for i in range(4)]
    assert statuses == [201, 201, 429, 429], "a loopback peer is not a trusted proxy by default"


@pytest.mark.django_db(transaction=True)
def test_behind_a_trusted_proxy_each_forwarded_client_is_throttled_on_its_own(
    live: LiveServer, settings: Any
) -> None:
    settings.OAUTH_REGISTRATIONS_PER_WINDOW = 2
    settings.TRUSTED_PROXIES = parse_networks(["127.0.0.1"])
    first = [_register(live, "6.6.6.6, 198.51.100.1") for _ in range(3)]
    second = [_register(live, f"{i}.6.6.6, 198.51.100.2") for i in range(3)]
    assert first == [201, 201, 429]
    assert second == [201, 201, 429], "the client-written left part of the header changes nothing"
