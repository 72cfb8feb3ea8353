"""Bearer credentials checked against the database on every call, at the cost of one small query.

Resolving a presented credential (`connection_for_bearer`, then `agent_scope`) costs about
1.4 ms of CPU per call on this machine kind, nearly all of it the ORM building its queries: the
database answers in microseconds. An agent calls several times a second with the same credential,
so the resolution is kept per process, and each call instead reads the rows it was resolved from
with a query compiled once per process (workspaces.prepared), unconverted. While those rows are
exactly as they were, the kept resolution is the one the ORM would build again; when anything in
them differs (revoked, expired or renewed, its data classes, projects, role or zone's trust
changed, an OAuth token refreshed or revoked, a new consent, a recorded use) the credential is
resolved again from scratch. So a revocation is still refused on the very next call in every
process, as before, and nothing is trusted on time alone.

What is read per call: for a personal token its Connection row with its zone's; for an OAuth
token DOT's access-token row and every unrevoked OAuth Connection of its client and user; and
the project list of a connection limited to some projects. Kept resolutions are keyed by a digest
of the credential, never the credential, bounded in number, and used only before the credential's
own expiry.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from contextvars import ContextVar
from datetime import datetime
from typing import Any

from django.utils import timezone
from oauth2_provider.models import get_access_token_model

from workspaces import tokens
from workspaces.models import Connection
from workspaces.oauth import oauth_token_checksum
from workspaces.prepared import Prepared, Read
from workspaces.scope import AgentScope
from workspaces.selectors import BearerMatch, connection_for_bearer, last_used_is_stale

MAX_KEPT = 10_000
MAX_CREDENTIAL_LENGTH = 4096

# Everything of a Connection and its zone that `agent_scope` and the verifier read.
_CONNECTION_STATE = (
    "pk",
    "workspace_id",
    "kind",
    "actor",
    "role",
    "data_classes",
    "all_projects",
    "expires_at",
    "revoked_at",
    "last_used_at",
    "oauth_application_id",
    "created_by_id",
    "zone_id",
    "zone__name",
    "zone__trust",
)
_ALL_PROJECTS = _CONNECTION_STATE.index("all_projects")

_PERSONAL = Prepared(
    lambda digest: Connection.objects.filter(token_digest=digest, kind=Connection.Kind.TOKEN).values_list(
        *_CONNECTION_STATE
    ),
    raw=True,
)
_ACCESS_TOKEN = Prepared(
    lambda checksum: (
        get_access_token_model()
        .objects.filter(token_checksum=checksum)
        .values_list("application_id", "user_id", "pk", "expires", "scope", "resource")
    ),
    raw=True,
)
_OAUTH_CONNECTIONS = Prepared(
    lambda application_id, user_id: Connection.objects.filter(
        kind=Connection.Kind.OAUTH,
        oauth_application_id=application_id,
        created_by_id=user_id,
        revoked_at__isnull=True,
    ).values_list(*_CONNECTION_STATE),
    raw=True,
)
_PROJECTS = Prepared(
    lambda connection_id: Connection.projects.through.objects.filter(connection_id=connection_id).values_list(
        "project_id"
    )
)

State = tuple[Any, ...]


def credential_state(raw: str, also: ReadAhead | None = None) -> State | None:
    """The rows a credential's authority is resolved from, as stored; None if it matches none.

    `also`: a read made for the scope the credential was last resolved to, run in the same
    statement as a personal token's (its rows are kept on it, for `read_with_credential`)."""
    if len(raw) > MAX_CREDENTIAL_LENGTH:
        return None
    if tokens.looks_like_personal_token(raw):
        if also is None:
            connections = _PERSONAL.rows(tokens.digest(raw))
        else:
            connections, also.found = _PERSONAL.rows_and_one((tokens.digest(raw),), also.read)
        head: list[tuple[Any, ...]] = []
    else:
        head = _ACCESS_TOKEN.rows(oauth_token_checksum(raw))
        if not head:
            return None
        application_id, user_id = head[0][:2]
        if application_id is None or user_id is None:
            return None
        connections = _OAUTH_CONNECTIONS.rows(application_id, user_id)
    if not connections:
        return None
    projects = [tuple(sorted(_PROJECTS.rows(row[0]))) for row in connections if not row[_ALL_PROJECTS]]
    return (*head, *sorted(connections, key=lambda row: row[0]), *projects)


class ReadAhead:
    """A call's first read, made for the scope its credential was last resolved to (a hint) and
    run in the credential's statement: one statement less on the call's path.

    Its rows are used only if the credential, verified by that same statement, carries that very
    scope (the kept resolution, unchanged: the same object); otherwise they are dropped and the
    call reads as it would anyway. Nothing is answered from the hint."""

    def __init__(self, scope: AgentScope, read: Read) -> None:
        self.scope = scope
        self.read = read
        self.found: list[tuple[Any, ...]] | None = None


_read_with_credential: ContextVar[ReadAhead | None] = ContextVar("read_with_credential", default=None)


def read_with_credential(scope: AgentScope, read: Read) -> list[tuple[Any, ...]] | None:
    """The rows of `read` if this call's credential statement read them for `scope`; taken once."""
    ahead = _read_with_credential.get()
    if ahead is None or ahead.scope is not scope or ahead.read != read or ahead.found is None:
        return None
    _read_with_credential.set(None)
    return ahead.found


class KeptBearers:
    """Resolutions of recently presented credentials, each with the state it was resolved from."""

    def __init__(self, size: int = MAX_KEPT) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._kept: OrderedDict[bytes, tuple[State, BearerMatch, AgentScope]] = OrderedDict()

    @staticmethod
    def _key(raw: str) -> bytes:
        return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).digest()

    def get(self, raw: str, state: State) -> tuple[BearerMatch, AgentScope] | None:
        key = self._key(raw)
        with self._lock:
            kept = self._kept.get(key)
            if kept is None:
                return None
            if kept[0] != state or kept[1].valid_until <= timezone.now():
                del self._kept[key]
                return None
            self._kept.move_to_end(key)
            return kept[1], kept[2]

    def put(self, raw: str, state: State, found: BearerMatch, scope: AgentScope) -> None:
        key = self._key(raw)
        with self._lock:
            self._kept[key] = (state, found, scope)
            self._kept.move_to_end(key)
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)

    def hint(self, raw: str) -> tuple[BearerMatch, AgentScope] | None:
        """The credential a kept resolution of `raw` found and the authority it carried,
        unchecked: a hint, never authority."""
        kept = self._kept.get(self._key(raw))
        return None if kept is None else kept[1:]

    def __len__(self) -> int:
        return len(self._kept)


_kept = KeptBearers()


def kept_scope(raw: str) -> AgentScope | None:
    """The scope `raw` was last resolved to in this process, without reading the database.

    For work done before the credential is verified (a call's concurrency slot, its query's
    embedding started early: see mcpbridge.direct), never for what is answered: the credential
    itself must still be verified by `bearer_verified`.
    """
    kept = _kept_hint(raw)
    return None if kept is None else kept[1]


def use_recorded_recently(raw: str, now: datetime) -> bool:
    """Whether verifying `raw` at `now` would write nothing, its use recorded less than
    LAST_USED_RESOLUTION ago (mcpbridge.auth), as this process last saw its connection (a kept
    resolution, whose connection `connection_touch` updates); False if it keeps none."""
    kept = _kept_hint(raw)
    return kept is not None and not last_used_is_stale(kept[0].connection, now)


def _kept_hint(raw: str) -> tuple[BearerMatch, AgentScope] | None:
    return None if len(raw) > MAX_CREDENTIAL_LENGTH else _kept.hint(raw)


def bearer_verified(raw: str, also: ReadAhead | None = None) -> tuple[BearerMatch, AgentScope] | None:
    """The usable credential behind `raw` and the authority it carries, checked against the
    database now; None when it is unknown, revoked, expired or otherwise unusable.

    `also` (see `ReadAhead`) is read in the credential's statement, and its rows are offered to
    the call (`read_with_credential`) only when the credential is verified with the very scope
    the read was made for.
    """
    state = credential_state(raw, also)
    if state is None:
        return None
    kept = _kept.get(raw, state)
    if kept is not None:
        if also is not None and also.found is not None and kept[1] is also.scope:
            _read_with_credential.set(also)
        return kept
    found = connection_for_bearer(raw)
    if found is None:
        return None
    scope = found.scope()
    # The state was read before the resolution: if the rows changed in between, the next call
    # reads a state that differs from the one kept here and resolves the credential again.
    _kept.put(raw, state, found, scope)
    return found, scope
