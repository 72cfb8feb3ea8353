"""Tenancy and credentials: who may see and propose what.

A Workspace is the tenant. Every Project, TrustZone and Connection belongs to exactly one, and
every read or write is evaluated inside the workspace of the credential that made it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import ClassVar

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class DataClass(models.TextChoices):
    """Sensitivity, ordered. `restricted` is never granted to an agent."""

    PUBLIC = "public", "Public"
    INTERNAL = "internal", "Internal"
    CONFIDENTIAL = "confidential", "Confidential"
    RESTRICTED = "restricted", "Restricted"

    @classmethod
    def rank(cls, value: str) -> int:
        return list(cls.values).index(value)

    @classmethod
    def grantable(cls) -> list[str]:
        """The classes an agent credential may carry."""
        return [c for c in cls.values if c != cls.RESTRICTED]


def default_publish_cadence() -> timedelta:
    cadence: timedelta = settings.UNFORGETTER["DEFAULT_PUBLISH_CADENCE"]
    return cadence


class Workspace(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    publish_cadence = models.DurationField(default=default_publish_cadence)
    review_every_proposal = models.BooleanField(
        default=False, help_text="Hold every proposal for an owner, whatever its trust."
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.CheckConstraint(
                condition=Q(publish_cadence__gte=timedelta(seconds=1)), name="workspace_cadence_positive"
            )
        ]

    def __str__(self) -> str:
        return self.slug


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        REVIEWER = "reviewer", "Reviewer"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.OWNER)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "user"], name="membership_unique")]

    def __str__(self) -> str:
        return f"{self.user} {self.role} of {self.workspace}"


class Project(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="projects")
    slug = models.SlugField(max_length=64, help_text="The project_id agents see; unique in the workspace.")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    data_class = models.CharField(max_length=16, choices=DataClass.choices, default=DataClass.INTERNAL)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["slug"]
        constraints = [models.UniqueConstraint(fields=["workspace", "slug"], name="project_slug_unique")]

    def __str__(self) -> str:
        return f"{self.workspace.slug}/{self.slug}"


class TrustZone(models.Model):
    class Trust(models.TextChoices):
        HIGH = "high", "High"
        STANDARD = "standard", "Standard"
        LOW = "low", "Low"

    class Review(models.TextChoices):
        """Which of the zone's proposals wait for an owner (tainted ones always do)."""

        SIGNALS = "signals", "Hold proposals with risk signals"
        ALL = "all", "Hold every proposal"
        ATTACKS = "attacks", "Publish risk signals; reject only concrete attacks"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="zones")
    name = models.SlugField(max_length=64)
    trust = models.CharField(max_length=16, choices=Trust.choices, default=Trust.STANDARD)
    max_token_ttl = models.DurationField(
        null=True, blank=True, help_text="Longest lifetime a credential in this zone may have; empty: no cap."
    )
    review = models.CharField(
        max_length=16,
        choices=Review.choices,
        default=Review.SIGNALS,
        help_text="Which untainted proposals from this zone wait for review; tainted ones always do.",
    )

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="zone_name_unique")]

    def __str__(self) -> str:
        return f"{self.name} ({self.trust})"

    @property
    def is_low_trust(self) -> bool:
        return self.trust == self.Trust.LOW


class ConnectionQuerySet(models.QuerySet["Connection"]):
    def usable(self) -> ConnectionQuerySet:
        """Not revoked and not expired, now."""
        return self.filter(revoked_at__isnull=True, expires_at__gt=timezone.now())


class Connection(models.Model):
    """One agent credential, bound to exactly one workspace.

    Either a personal bearer token (only its SHA-256 digest is stored) or an OAuth grant (DOT's
    tokens for `oauth_application`, consented by `created_by`). Authority comes from here, never
    from a tool argument.
    """

    class Role(models.TextChoices):
        READER = "reader", "Reader"
        CONTRIBUTOR = "contributor", "Contributor"

    class Kind(models.TextChoices):
        TOKEN = "token", "Personal token"
        OAUTH = "oauth", "OAuth grant"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="connections")
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.TOKEN)
    label = models.CharField(max_length=200, blank=True)
    actor = models.CharField(
        max_length=100, help_text="Who acts with this credential, e.g. claude-code@alice."
    )
    zone = models.ForeignKey(TrustZone, on_delete=models.PROTECT, related_name="connections")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.READER)
    all_projects = models.BooleanField(
        default=False, help_text="Every project whose data class is allowed, including future ones."
    )
    projects = models.ManyToManyField(Project, blank=True, related_name="connections")
    data_classes = models.JSONField(default=list, help_text="Data classes this credential may see.")
    token_digest = models.CharField(max_length=64, unique=True, null=True, blank=True, editable=False)
    token_hint = models.CharField(max_length=16, blank=True, editable=False)
    oauth_application = models.ForeignKey(
        settings.OAUTH2_PROVIDER_APPLICATION_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="unforgetter_connections",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    objects: ClassVar[ConnectionQuerySet] = ConnectionQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["workspace", "revoked_at"], name="connection_ws_revoked")]
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(kind="token", token_digest__isnull=False)
                    | Q(kind="oauth", oauth_application__isnull=False)
                ),
                name="connection_has_credential",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.actor} via {self.zone.name} ({self.workspace.slug})"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    def is_usable(self, now: object = None) -> bool:
        at = now or timezone.now()
        return self.revoked_at is None and self.expires_at > at  # type: ignore[operator]

    @property
    def can_propose(self) -> bool:
        return self.role == self.Role.CONTRIBUTOR


class AuditEvent(models.Model):
    """An append-only record of who did what in a workspace."""

    class Action(models.TextChoices):
        CONTEXT = "context", "Context requested"
        SEARCH = "search", "Memory searched"
        PROPOSAL = "proposal", "Proposal submitted"
        REVIEW = "review", "Proposal reviewed"
        TOKEN_ISSUED = "token_issued", "Credential issued"
        TOKEN_REVOKED = "token_revoked", "Credential revoked"
        OWNER_EDIT = "owner_edit", "Owner edited memory"
        ZONE_EDIT = "zone_edit", "Trust zone edited"
        EXPORT = "export", "Workspace exported"
        IMPORT = "import", "Memory imported"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="audit_events")
    at = models.DateTimeField(default=timezone.now)
    action = models.CharField(max_length=32, choices=Action.choices)
    actor = models.CharField(max_length=150, help_text="The agent actor or the owner's username.")
    connection = models.ForeignKey(
        Connection, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    target = models.CharField(max_length=200, blank=True)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["workspace", "-at"], name="audit_ws_at"),
            models.Index(fields=["workspace", "action", "-at"], name="audit_ws_action_at"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.target}"


class WorkspaceDeletion(models.Model):
    """The receipt of a deleted workspace: what was removed, when, and when the rest expires.

    The workspace's rows are gone at once; exports the server made of it are kept until
    `purge_after` (the retention window), then purged by a scheduled task (`purged_at`).
    """

    slug = models.SlugField(max_length=64)
    name = models.CharField(max_length=200)
    deleted_at = models.DateTimeField(default=timezone.now)
    deleted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    removed = models.JSONField(default=dict, help_text="Rows removed, by model.")
    files = models.JSONField(default=list, help_text="Server-made exports awaiting the purge.")
    purge_after = models.DateTimeField()
    purged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-deleted_at"]
        indexes = [models.Index(fields=["purged_at", "purge_after"], name="deletion_purge_due")]

    def __str__(self) -> str:
        return f"{self.slug} deleted {self.deleted_at:%Y-%m-%d}"
