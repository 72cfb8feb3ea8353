"""Opaque search cursors: encrypted and authenticated, expiring, bound to one search.

A cursor is AES-256-GCM over (workspace, connection, project, query digest, offset, issue
time), under a key derived from SECRET_KEY: it reveals nothing (no internal id, no offset, no
query) and cannot be made or altered without the server's key. Anything else (another project,
another query, another credential, tampering, age) is refused with `invalid_cursor`, before any
query runs. Cursors made under a key in SECRET_KEY_FALLBACKS are still read after a rotation.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import struct
import time

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.conf import settings
from django.utils.crypto import salted_hmac

from memory.exceptions import InvalidCursor
from workspaces.models import Project
from workspaces.scope import AgentScope

_SALT = "unforgetter.search.cursor.v2"
_VERSION = b"\x02"
_NONCE_BYTES = 12
# workspace, connection, project, offset (unsigned 64-bit), issued at (unix seconds), query digest
_LAYOUT = struct.Struct(">QQQQQ16s")
MAX_CURSOR_LENGTH = 512


def _query_digest(query: str) -> bytes:
    return hashlib.sha256(query.encode("utf-8")).digest()[:16]


def _cipher(secret: str) -> AESGCM:
    return AESGCM(salted_hmac(_SALT, b"cursor-key", secret=secret, algorithm="sha256").digest())


def cursor_make(
    *, scope: AgentScope, project: Project, query: str, offset: int, issued_at: float | None = None
) -> str:
    """The cursor for the page at `offset` of this search by this credential."""
    issued = int(time.time() if issued_at is None else issued_at)
    body = _LAYOUT.pack(
        scope.workspace_id, scope.connection_id, project.pk, offset, issued, _query_digest(query)
    )
    nonce = os.urandom(_NONCE_BYTES)
    sealed = _cipher(settings.SECRET_KEY).encrypt(nonce, body, _VERSION)
    return base64.urlsafe_b64encode(_VERSION + nonce + sealed).rstrip(b"=").decode()


def _open(cursor: str) -> tuple[int, int, int, int, int, bytes]:
    if len(cursor) > MAX_CURSOR_LENGTH:
        raise InvalidCursor("This cursor is not valid.")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (binascii.Error, ValueError):
        raise InvalidCursor("This cursor is not valid.") from None
    # Only the canonical spelling: base64's spare padding bits would otherwise let several
    # strings name one cursor, and a changed character go unnoticed.
    if not raw.startswith(_VERSION) or base64.urlsafe_b64encode(raw).rstrip(b"=").decode() != cursor:
        raise InvalidCursor("This cursor is not valid.")
    nonce, sealed = raw[1 : 1 + _NONCE_BYTES], raw[1 + _NONCE_BYTES :]
    for secret in (settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS):
        try:
            body = _cipher(secret).decrypt(nonce, sealed, _VERSION)
        except (InvalidTag, ValueError):
            continue
        if len(body) == _LAYOUT.size:
            fields: tuple[int, int, int, int, int, bytes] = _LAYOUT.unpack(body)
            return fields
    raise InvalidCursor("This cursor is not valid.")


def cursor_offset(*, cursor: str, scope: AgentScope, project: Project, query: str) -> int:
    """The position a cursor points at, if it was made for exactly this search."""
    workspace_id, connection_id, project_id, offset, issued, digest = _open(cursor)
    if time.time() - issued > settings.UNFORGETTER["CURSOR_TTL"].total_seconds():
        raise InvalidCursor("This cursor has expired.")
    if (workspace_id, connection_id) != (scope.workspace_id, scope.connection_id):
        raise InvalidCursor("This cursor was not issued to this credential.")
    if project_id != project.pk:
        raise InvalidCursor("This cursor belongs to another project.")
    if digest != _query_digest(query):
        raise InvalidCursor("This cursor belongs to another query.")
    return offset
