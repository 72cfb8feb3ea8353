"""Writes of tenancy and credentials. The only code that creates or changes these rows."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from workspaces import tokens
from workspaces.exceptions import InvalidRequest, NotFound
from workspaces.models import (
    AuditEvent,
    Connection,
    DataClass,
    Membership,
    Project,
    TrustZone,
    Workspace,
    WorkspaceDeletion,
)
from workspaces.oauth import oauth_tokens_revoke
from workspaces.scopes import scopes_granted

# Every new workspace starts with these zones (DESIGN section 3).
DEFAULT_ZONES: Sequence[tuple[str, str, timedelta | None]] = (
    ("claude", TrustZone.Trust.HIGH, None),
    ("chatgpt", TrustZone.Trust.HIGH, None),
    ("codex", TrustZone.Trust.HIGH, None),
    ("cursor", TrustZone.Trust.HIGH, None),
    ("grok-bot", TrustZone.Trust.LOW, timedelta(hours=24)),
)


def audit_record(
    *,
    workspace: Workspace,
    action: str,
    actor: str,
    target: str = "",
    connection: Connection | None = None,
    user: User | None = None,
    detail: dict[str, Any] | None = None,
) -> AuditEvent:
    return AuditEvent.objects.create(
        workspace=workspace,
        action=action,
        actor=actor[:150],
        target=target[:200],
        connection=connection,
        user=user if user is not None and user.pk else None,
        detail=detail or {},
    )


@transaction.atomic
def owner_account_ensure(*, username: str, email: str, password: str) -> User:
    """An owner's login (a superuser, for the admin too), created or given this password."""
    user = User.objects.filter(username=username).first()
    if user is None:
        return User.objects.create_superuser(username, email, password)
    if not user.check_password(password):
        user.set_password(password)
        user.save(update_fields=["password"])
    return user


@transaction.atomic
def workspace_create(*, slug: str, name: str = "", owner: User | None = None) -> Workspace:
    if Workspace.objects.filter(slug=slug).exists():
        raise InvalidRequest(f"A workspace {slug!r} already exists.")
    workspace = Workspace.objects.create(slug=slug, name=name or slug)
    TrustZone.objects.bulk_create(
        TrustZone(workspace=workspace, name=zone, trust=trust, max_token_ttl=ttl)
        for zone, trust, ttl in DEFAULT_ZONES
    )
    if owner is not None:
        Membership.objects.create(workspace=workspace, user=owner, role=Membership.Role.OWNER)
    return workspace


def workspace_exports_dir(slug: str) -> Path:
    """Where the server keeps the exports it made of a workspace (purged after its deletion)."""
    return Path(settings.UNFORGETTER["EXPORTS_DIR"]) / slug


@transaction.atomic
def workspace_delete(
    *, workspace: Workspace, confirm: str, deleted_by: User | None = None
) -> WorkspaceDeletion:
    """Delete a workspace's tenancy rows (and, by cascade, whatever other apps keep under it).

    Memory is erased through `memory.services.workspace_erase`, which unlinks item history first.
    `confirm` must repeat the slug. Returns the receipt: what was removed, and when the exports
    the server made of the workspace will be purged (after the retention window).
    """
    if confirm != workspace.slug:
        raise InvalidRequest("Type the workspace's slug to confirm deletion.")
    for connection in Connection.objects.filter(workspace=workspace, kind=Connection.Kind.OAUTH):
        oauth_tokens_revoke(connection=connection)
    revoked, _ = Connection.objects.filter(workspace=workspace).delete()
    slug, name = workspace.slug, workspace.name
    _, counts = workspace.delete()
    removed = {label.split(".")[-1].lower(): n for label, n in sorted(counts.items()) if n}
    removed["connection"] = removed.get("connection", 0) + revoked
    now = timezone.now()
    exports = workspace_exports_dir(slug)
    files: list[str] = []
    if exports.is_dir():
        # Set aside at once: a new workspace of the same slug never sees them, the purge finds them.
        held = exports.with_name(f".deleted-{slug}-{now:%Y%m%dT%H%M%S%f}")
        exports.rename(held)
        files = sorted(str(path) for path in held.rglob("*") if path.is_file())
    return WorkspaceDeletion.objects.create(
        slug=slug,
        name=name,
        deleted_at=now,
        deleted_by=deleted_by if deleted_by is not None and deleted_by.pk else None,
        removed=removed,
        files=files,
        purge_after=now + settings.UNFORGETTER["DELETION_RETENTION"],
    )


def workspace_deletions_purge(*, now: datetime | None = None) -> int:
    """Purge what deleted workspaces left past their retention window: the server's exports.

    Idempotent and safe to run often (the scheduled task runs it hourly); returns how many
    receipts it completed.
    """
    now = now or timezone.now()
    done = 0
    for receipt in WorkspaceDeletion.objects.filter(purged_at__isnull=True, purge_after__lte=now):
        for name in receipt.files:
            Path(name).unlink(missing_ok=True)
        for folder in {Path(name).parent for name in receipt.files}:
            with contextlib.suppress(OSError):  # left alone if anything else is in it
                folder.rmdir()
        receipt.purged_at = now
        receipt.save(update_fields=["purged_at"])
        done += 1
    return done


def membership_add(*, workspace: Workspace, user: User, role: str = Membership.Role.OWNER) -> Membership:
    membership, _ = Membership.objects.update_or_create(
        workspace=workspace, user=user, defaults={"role": role}
    )
    return membership


@transaction.atomic
def project_create(
    *,
    workspace: Workspace,
    slug: str,
    name: str = "",
    data_class: str = DataClass.INTERNAL,
    description: str = "",
) -> Project:
    if data_class not in DataClass.values:
        raise InvalidRequest(f"Unknown data class {data_class!r}; use one of {', '.join(DataClass.values)}.")
    if Project.objects.filter(workspace=workspace, slug=slug).exists():
        raise InvalidRequest(f"Project {slug!r} already exists in {workspace.slug}.")
    return Project.objects.create(
        workspace=workspace, slug=slug, name=name or slug, data_class=data_class, description=description
    )


@dataclass(frozen=True)
class OAuthConsent:
    connection: Connection
    scopes: list[str]  # what the client's tokens carry


@dataclass(frozen=True)
class IssuedToken:
    connection: Connection
    token: str  # shown once, never stored


def _check_data_classes(data_classes: Iterable[str]) -> list[str]:
    chosen = list(dict.fromkeys(data_classes))
    unknown = [c for c in chosen if c not in DataClass.values]
    if unknown:
        raise InvalidRequest(
            f"Unknown data class {unknown[0]!r}; use one of {', '.join(DataClass.grantable())}."
        )
    if DataClass.RESTRICTED in chosen:
        raise InvalidRequest("The restricted data class can never be granted to an agent.")
    if not chosen:
        raise InvalidRequest("Grant at least one data class.")
    return sorted(chosen, key=DataClass.rank)


def _resolve_zone(workspace: Workspace, zone: str | TrustZone) -> TrustZone:
    if isinstance(zone, TrustZone):
        if zone.workspace_id != workspace.pk:
            raise NotFound("No such trust zone.")
        return zone
    found = TrustZone.objects.filter(workspace=workspace, name=zone).first()
    if found is None:
        names = ", ".join(TrustZone.objects.filter(workspace=workspace).values_list("name", flat=True))
        raise InvalidRequest(f"No trust zone {zone!r} in {workspace.slug}; zones: {names}.")
    return found


def _authority(
    workspace: Workspace,
    role: str,
    zone: str | TrustZone,
    data_classes: Iterable[str],
    projects: Sequence[str] | None,
) -> tuple[TrustZone, list[str], list[Project]]:
    """Check what a credential is to carry: its role, zone, data classes and projects.

    `projects=None` means every allowed project (an empty list is returned for it).
    """
    if role not in Connection.Role.values:
        raise InvalidRequest(f"Unknown role {role!r}; use reader or contributor.")
    trust_zone = _resolve_zone(workspace, zone)
    classes = _check_data_classes(data_classes)
    chosen_projects: list[Project] = []
    if projects is not None:
        slugs = list(dict.fromkeys(projects))
        chosen_projects = list(Project.objects.filter(workspace=workspace, slug__in=slugs))
        missing = sorted(set(slugs) - {p.slug for p in chosen_projects})
        if missing:
            raise InvalidRequest(f"No project {missing[0]!r} in {workspace.slug}.")
        if not chosen_projects:
            raise InvalidRequest("Grant at least one project, or all of them.")
    return trust_zone, classes, chosen_projects


def _expiry(zone: TrustZone, ttl: timedelta | None, now: datetime) -> datetime:
    lifetime = ttl or settings.UNFORGETTER["TOKEN_DEFAULT_TTL"]
    if zone.max_token_ttl is not None:
        if ttl is not None and ttl > zone.max_token_ttl:
            raise InvalidRequest(
                f"Zone {zone.name} allows credentials of at most {zone.max_token_ttl}; asked for {ttl}."
            )
        lifetime = min(lifetime, zone.max_token_ttl)
    return now + lifetime


@transaction.atomic
def token_issue(
    *,
    workspace: Workspace,
    actor: str,
    zone: str | TrustZone,
    role: str = Connection.Role.READER,
    projects: Sequence[str] | None = None,
    data_classes: Iterable[str] = (DataClass.PUBLIC, DataClass.INTERNAL),
    ttl: timedelta | None = None,
    label: str = "",
    issued_by: User | None = None,
) -> IssuedToken:
    """Create a personal-token Connection. The raw token is returned once and never stored.

    `projects=None` grants every project whose data class is allowed, including future ones.
    """
    actor = actor.strip()
    if not actor:
        raise InvalidRequest("An actor name is required.")
    raw = tokens.generate()
    connection = _connection_create(
        workspace=workspace,
        authority=_authority(workspace, role, zone, data_classes, projects),
        role=role,
        ttl=ttl,
        created_by=issued_by,
        fields={
            "kind": Connection.Kind.TOKEN,
            "label": label,
            "actor": actor,
            "all_projects": projects is None,
            "token_digest": tokens.digest(raw),
            "token_hint": tokens.hint(raw),
        },
    )
    return IssuedToken(connection=connection, token=raw)


def _connection_create(
    *,
    workspace: Workspace,
    authority: tuple[TrustZone, list[str], list[Project]],
    role: str,
    ttl: timedelta | None,
    created_by: User | None,
    fields: dict[str, Any],
    audit: dict[str, Any] | None = None,
) -> Connection:
    """Store a checked credential, its projects and the audit event of its issue."""
    trust_zone, classes, chosen_projects = authority
    now = timezone.now()
    connection = Connection.objects.create(
        workspace=workspace,
        zone=trust_zone,
        role=role,
        data_classes=classes,
        created_by=created_by,
        created_at=now,
        expires_at=_expiry(trust_zone, ttl, now),
        **fields,
    )
    if chosen_projects:
        connection.projects.set(chosen_projects)
    audit_record(
        workspace=workspace,
        action=AuditEvent.Action.TOKEN_ISSUED,
        actor=getattr(created_by, "username", "") or "operator",
        user=created_by,
        connection=connection,
        target=connection.actor,
        detail={
            **(audit or {}),
            "zone": trust_zone.name,
            "role": role,
            "data_classes": classes,
            "expires_at": connection.expires_at.isoformat(),
        },
    )
    return connection


@transaction.atomic
def connection_revoke(*, connection: Connection, revoked_by: User | None = None) -> Connection:
    """Revoke a credential. Effective on the next call everywhere: verifiers read the row each time."""
    locked = Connection.objects.select_for_update().get(pk=connection.pk)
    if locked.revoked_at is None:
        locked.revoked_at = timezone.now()
        locked.save(update_fields=["revoked_at"])
        audit_record(
            workspace=locked.workspace,
            action=AuditEvent.Action.TOKEN_REVOKED,
            actor=getattr(revoked_by, "username", "") or "operator",
            user=revoked_by,
            connection=locked,
            target=locked.actor,
        )
        # OAuth grants lose their DOT tokens with the connection (see workspaces.oauth).
        if locked.kind == Connection.Kind.OAUTH:
            oauth_tokens_revoke(connection=locked)
    return locked


def connection_for_operator(*, token_or_id: str) -> Connection:
    """Find a connection by its raw token or its numeric id (the operator's CLI)."""
    if tokens.looks_like_personal_token(token_or_id):
        found = Connection.objects.filter(token_digest=tokens.digest(token_or_id)).first()
    elif token_or_id.isdigit():
        found = Connection.objects.filter(pk=int(token_or_id)).first()
    else:
        found = None
    if found is None:
        raise NotFound("No connection matches that token or id.")
    return found


def connection_touch(*, connection: Connection, now: datetime) -> None:
    """Record use at most once per LAST_USED_RESOLUTION: a conditional update, no lock, no race."""
    resolution = settings.UNFORGETTER["LAST_USED_RESOLUTION"]
    Connection.objects.filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - resolution), pk=connection.pk
    ).update(last_used_at=now)
    connection.last_used_at = now


@transaction.atomic
def zone_create(
    *,
    workspace: Workspace,
    name: str,
    trust: str,
    max_token_ttl: timedelta | None,
    created_by: User | None = None,
) -> TrustZone:
    """A new trust zone: a lowercase name unique in the workspace, its trust and its token cap."""
    name = name.strip().lower()
    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,63}", name):
        raise InvalidRequest("A zone's name is 1-64 lowercase letters, digits, - or _ (e.g. ci-bots).")
    if trust not in TrustZone.Trust.values:
        raise InvalidRequest(f"Unknown trust level {trust!r}.")
    if TrustZone.objects.filter(workspace=workspace, name=name).exists():
        raise InvalidRequest(f"There is already a zone named {name!r}.")
    zone = TrustZone.objects.create(workspace=workspace, name=name, trust=trust, max_token_ttl=max_token_ttl)
    audit_record(
        workspace=workspace,
        action=AuditEvent.Action.ZONE_EDIT,
        actor=getattr(created_by, "username", "") or "operator",
        user=created_by,
        target=name,
        detail={
            "created": True,
            "trust": trust,
            "max_token_ttl": max_token_ttl.total_seconds() if max_token_ttl else None,
        },
    )
    return zone


@transaction.atomic
def zone_update(
    *,
    zone: TrustZone,
    trust: str,
    max_token_ttl: timedelta | None,
    review: str | None = None,
    edited_by: User | None = None,
) -> TrustZone:
    """Change a zone's trust, token lifetime cap and review policy (`review` None: unchanged)."""
    if trust not in TrustZone.Trust.values:
        raise InvalidRequest(f"Unknown trust level {trust!r}.")
    if review is not None and review not in TrustZone.Review.values:
        raise InvalidRequest(f"Unknown review policy {review!r}.")
    zone.trust = trust
    zone.max_token_ttl = max_token_ttl
    zone.review = review or zone.review
    zone.save(update_fields=["trust", "max_token_ttl", "review"])
    audit_record(
        workspace=zone.workspace,
        action=AuditEvent.Action.ZONE_EDIT,
        actor=getattr(edited_by, "username", "") or "operator",
        user=edited_by,
        target=zone.name,
        detail={
            "trust": trust,
            "max_token_ttl": max_token_ttl.total_seconds() if max_token_ttl else None,
            "review": zone.review,
        },
    )
    return zone


@transaction.atomic
def oauth_registration_withdraw(*, application: Any, registration_token: Any) -> bool:
    """A client deletes its registration (RFC 7592); False if nobody ever consented to it.

    A client somebody consented to keeps its record, made unusable (no redirect URI, so no
    authorization request can succeed), and loses its connections with their tokens: the
    connections and their audit trail keep pointing at what they were granted to. A client
    nobody consented to is the caller's to delete outright.
    """
    if not Connection.objects.filter(oauth_application=application).exists():
        return False
    for connection in Connection.objects.filter(oauth_application=application, revoked_at__isnull=True):
        connection_revoke(connection=connection)
    application.redirect_uris = ""
    application.save(update_fields=["redirect_uris", "updated"])
    registration_token.delete()
    return True


@transaction.atomic
def oauth_connection_grant(
    *,
    application: Any,
    user: User,
    workspace: Workspace,
    zone: str | TrustZone,
    role: str = Connection.Role.READER,
    projects: Sequence[str] | None = None,
    data_classes: Iterable[str] = (DataClass.PUBLIC, DataClass.INTERNAL),
    requested_scopes: Iterable[str] = (),
) -> OAuthConsent:
    """Create the Connection an OAuth consent grants: the authority the client's tokens carry.

    Only an owner of the workspace may grant it. One usable OAuth connection per (application,
    user): a new consent revokes the previous one, with its grants and tokens, so DOT tokens for
    the pair always mean exactly the authority consented last. `projects=None` grants every
    project whose data class is allowed, including future ones. Expiry is the zone's cap (or the
    default credential lifetime); refreshing never outlives it. The token's scopes are what was
    requested, narrowed to the role, and memory:read always.
    """
    if not Membership.objects.filter(workspace=workspace, user=user, role=Membership.Role.OWNER).exists():
        raise NotFound("No such workspace.")
    authority = _authority(workspace, role, zone, data_classes, projects)
    previous = Connection.objects.filter(
        kind=Connection.Kind.OAUTH, oauth_application=application, created_by=user, revoked_at__isnull=True
    )
    for old in previous:
        connection_revoke(connection=old, revoked_by=user)
    client_name = (application.name or "OAuth client").strip()
    connection = _connection_create(
        workspace=workspace,
        authority=authority,
        role=role,
        ttl=None,
        created_by=user,
        fields={
            "kind": Connection.Kind.OAUTH,
            "label": client_name[:200],
            "actor": f"{client_name}@{user.username}"[:100],
            "all_projects": projects is None,
            "oauth_application": application,
        },
        audit={
            "kind": Connection.Kind.OAUTH,
            "client_id": application.client_id,
            "registration": application.registration_source,
        },
    )
    return OAuthConsent(connection=connection, scopes=scopes_granted(role, requested_scopes))
