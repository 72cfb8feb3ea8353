"""Evidence hygiene: refs that no honest provenance has. Refs are only read, never fetched.

An agent's evidence ref says where a change comes from, and the published item shows it as its
source. A web page, a repository path or one of our own refs is ordinary provenance. A ref into the
machine the agent runs on or its network (a local file, loopback, a private, link-local or
carrier-grade NAT address, an internal host name) or in a non-web scheme is something an honest
reader cannot check, so that evidence counts as untrusted (the proposal is quarantined). Script and
data URIs and cloud metadata addresses are never provenance at all: a proposal resting on one is
rejected. Every spelling is undone first: case, spacing, percent-escapes, decimal/hex/octal IPv4
and IPv4-mapped IPv6.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import unicodedata
from typing import Final
from urllib.parse import unquote, urlsplit

_WEB_SCHEMES: Final = frozenset({"http", "https"})
_OUR_SCHEMES: Final = frozenset({"unforgetter"})
_FORGED_SCHEMES: Final = frozenset({"javascript", "vbscript", "data", "livescript", "mocha"})
# Schemes that name a resource outside the web even when written without "//".
_LOCAL_SCHEMES: Final = frozenset(
    [
        "file",
        "ftp",
        "ftps",
        "sftp",
        "tftp",
        "gopher",
        "smb",
        "cifs",
        "nfs",
        "ldap",
        "ldaps",
        "dict",
        "jar",
        "blob",
        "about",
        "chrome",
        "chrome-extension",
        "moz-extension",
        "ssh",
        "telnet",
        "ws",
        "wss",
        "mailto",
        "news",
        "nntp",
        "irc",
        "redis",
        "mongodb",
        "mysql",
        "postgres",
        "postgresql",
        "jdbc",
        "s3",
        "gs",
        "hdfs",
        "dns",
        "ipfs",
        "view-source",
        "ms-settings",
        "vscode",
    ]
)
_METADATA_HOSTS: Final = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.com",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
        "metadata.packet.net",
    }
)
_METADATA_IPS: Final = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "169.254.169.253", "100.100.100.200", "fd00:ec2::254")
)
_CGNAT: Final = ipaddress.ip_network("100.64.0.0/10")
_INTERNAL_SUFFIXES: Final = (".internal", ".local", ".localhost", ".lan", ".home.arpa", ".intranet", ".corp")
_SCHEME_RE: Final = re.compile(r"^([a-z][a-z0-9+.-]{0,30}):")
_NUMERIC_HOST_RE: Final = re.compile(r"^[0-9a-fx.]+$")
_LOCAL_PATH_RE: Final = re.compile(
    r"^(?:/(?:etc|proc|sys|dev|var|root|home|users|tmp|private|opt)/|~|[a-z]:[\\/]|\\\\)"
)
_INVISIBLE_OR_SPACE_RE: Final = re.compile(r"[\s\u00ad\u200b-\u200f\u2060-\u2064\ufeff]+")

FORGED: Final = "forged"
UNTRUSTED: Final = "untrusted"


def _canonical(ref: str) -> str:
    """The ref as a URL parser should see it: NFKC, casefolded, no spaces, escapes decoded once."""
    folded = unicodedata.normalize("NFKC", ref).casefold()
    return unquote(_INVISIBLE_OR_SPACE_RE.sub("", folded))


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    host = host.strip("[]").rstrip(".")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if not _NUMERIC_HOST_RE.match(host):
            return None
        try:  # the forms inet_aton accepts: 2130706433, 0x7f000001, 0177.0.0.1, 127.1
            address = ipaddress.ip_address(socket.inet_aton(host))
        except (OSError, ValueError):
            return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _host_hazard(host: str) -> tuple[str, str] | None:
    address = _address(host)
    if address is not None:
        if address in _METADATA_IPS:
            return FORGED, "a cloud metadata address"
        if address.is_loopback or address.is_unspecified:
            return UNTRUSTED, "a loopback address"
        if address.is_link_local:
            return UNTRUSTED, "a link-local address"
        if address.is_private or address in _CGNAT or address.is_reserved:
            return UNTRUSTED, "a private network address"
        return None
    name = host.rstrip(".")
    if name in _METADATA_HOSTS:
        return FORGED, "a cloud metadata address"
    if name == "localhost" or name.endswith(_INTERNAL_SUFFIXES) or "." not in name:
        return UNTRUSTED, "an internal host name"
    return None


def ref_hazard(ref: str) -> tuple[str, str] | None:
    """(FORGED or UNTRUSTED, what it points at) for a ref no honest provenance has, else None."""
    value = _canonical(ref)
    if not value:
        return None
    if _LOCAL_PATH_RE.match(value):
        return UNTRUSTED, "a local file"
    scheme_match = _SCHEME_RE.match(value)
    scheme = scheme_match.group(1) if scheme_match else ""
    if scheme in _FORGED_SCHEMES:
        return FORGED, f"a {scheme}: URI"
    if scheme in _OUR_SCHEMES:
        return None
    rest = value[len(scheme) + 1 :] if scheme else value
    if scheme in _LOCAL_SCHEMES or (scheme and scheme not in _WEB_SCHEMES and rest.startswith("//")):
        return UNTRUSTED, f"a {scheme}: resource, not a web page"
    if scheme in _WEB_SCHEMES or value.startswith("//"):
        try:
            host = urlsplit(value if scheme else "http:" + value).hostname or ""
        except ValueError:
            return UNTRUSTED, "a URL that does not parse"
        return _host_hazard(host) if host else (UNTRUSTED, "a URL without a host")
    return None
