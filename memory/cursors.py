"""Opaque, signed, expiring search cursors.

A cursor binds the credential, the workspace, the project and the exact query to a position.
Anything else (another project, another query, another credential, tampering, age) is refused
with `invalid_cursor`, before any query runs.
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.core import signing

from memory.exceptions import InvalidCursor
from workspaces.models import Project
from workspaces.scope import AgentScope

_SALT = "unforgetter.search.cursor.v1"
MAX_CURSOR_LENGTH = 512


def _query_hash(query: str) -> str:
    return hashlib.sha256(query.encode("utf-8")).hexdigest()[:24]


def cursor_make(*, scope: AgentScope, project: Project, query: str, offset: int) -> str:
    payload = {
        "w": scope.workspace_id,
        "c": scope.connection_id,
        "p": project.pk,
        "q": _query_hash(query),
        "o": offset,
    }
    return signing.dumps(payload, salt=_SALT, compress=True)


def cursor_offset(*, cursor: str, scope: AgentScope, project: Project, query: str) -> int:
    """The position a cursor points at, if it was made for exactly this search."""
    if len(cursor) > MAX_CURSOR_LENGTH:
        raise InvalidCursor("This cursor is not valid.")
    try:
        payload = signing.loads(cursor, salt=_SALT, max_age=settings.UNFORGETTER["CURSOR_TTL"])
    except signing.SignatureExpired:
        raise InvalidCursor("This cursor has expired.") from None
    except (signing.BadSignature, ValueError, UnicodeError):
        raise InvalidCursor("This cursor is not valid.") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("o"), int) or payload["o"] < 0:
        raise InvalidCursor("This cursor is not valid.")
    if (payload.get("w"), payload.get("c")) != (scope.workspace_id, scope.connection_id):
        raise InvalidCursor("This cursor was not issued to this credential.")
    if payload.get("p") != project.pk:
        raise InvalidCursor("This cursor belongs to another project.")
    if payload.get("q") != _query_hash(query):
        raise InvalidCursor("This cursor belongs to another query.")
    return int(payload["o"])
