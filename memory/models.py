"""Canonical memory and the proposals that change it.

Updates never overwrite: a new Fact row supersedes the old one, so history is kept and "what is
true now" is `state in (active, open)`. Proposals are append-only: only their status, reason and
review fields ever change after they are stored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import date, datetime
from typing import Any, ClassVar, Protocol

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from memory.contract import Provenance
from memory.refs import new_proposal_ref, new_ref
from workspaces.models import Connection, DataClass, Project, Workspace


class Kind(models.TextChoices):
    FACT = "fact", "Fact"
    DECISION = "decision", "Decision"
    CONVENTION = "convention", "Convention"
    METHOD = "method", "Method"
    THREAD = "thread", "Thread"
    GOAL = "goal", "Goal"
    POLICY = "policy", "Policy"
    PERMISSION = "permission", "Permission"
    IDENTITY = "identity", "Identity"

    @classmethod
    def protected(cls) -> frozenset[str]:
        """Kinds only owners edit; agents can never target them."""
        return frozenset({cls.GOAL, cls.POLICY, cls.PERMISSION, cls.IDENTITY})

    @classmethod
    def live_state(cls, kind: str) -> str:
        """The state an item of this kind is in while it is current: a thread open, anything else active."""
        return State.OPEN if kind == cls.THREAD else State.ACTIVE

    @classmethod
    def states(cls, kind: str) -> frozenset[str]:
        """The states an item of this kind may be in (the `fact_state_matches_kind` constraint)."""
        if kind == cls.THREAD:
            return frozenset({State.OPEN, State.CLOSED, State.SUPERSEDED, State.RETRACTED})
        return frozenset({State.ACTIVE, State.SUPERSEDED, State.RETRACTED})


class State(models.TextChoices):
    ACTIVE = "active", "Active"
    SUPERSEDED = "superseded", "Superseded"
    RETRACTED = "retracted", "Retracted"
    OPEN = "open", "Open"
    CLOSED = "closed", "Closed"

    @classmethod
    def current(cls) -> tuple[str, str]:
        """States that make an item part of the working truth."""
        return (cls.ACTIVE, cls.OPEN)


class Taint(models.IntegerChoices):
    """Ordered; an item's taint is the maximum over everything it came from and never decreases."""

    CLEAN = 0, "clean"
    UNTRUSTED = 1, "untrusted"


def text_digest(text: str) -> int:
    """The indexed stand-in for an item's text: import finds an item it has seen by it (`Fact.text`
    has no index, and a whole text is too long for one). 64 bits keep the index entries small; a
    rare collision only adds a candidate, which the text itself then rules out."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big", signed=True)


class FactQuerySet(models.QuerySet["Fact"]):
    def current(self) -> FactQuerySet:
        return self.filter(state__in=State.current())

    def bulk_create(self, objs: Iterable[Fact], *args: Any, **kwargs: Any) -> list[Fact]:
        """Every item created in bulk gets its text digest, as `Fact.save` gives one."""
        objs = list(objs)
        for fact in objs:
            fact.text_digest = text_digest(fact.text)
        return super().bulk_create(objs, *args, **kwargs)


class Fact(models.Model):
    """A canonical memory item (any kind). Each version is its own row with its own `ref`."""

    # No single-column indexes: the composite ones below lead with each, and every index is
    # maintained on every row an import inserts.
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="facts", db_index=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="facts", db_index=False)
    ref = models.CharField(max_length=32, unique=True, editable=False)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.FACT)
    text = models.TextField()
    # Filled from `text` on every save and bulk insert (text_digest); never edited.
    text_digest = models.BigIntegerField(default=0, editable=False)
    state = models.CharField(max_length=16, choices=State.choices, default=State.ACTIVE)
    data_class = models.CharField(max_length=16, choices=DataClass.choices)
    source = models.CharField(max_length=500, blank=True, help_text="Where this came from: a URL, file, ref.")
    source_date = models.DateField(null=True, blank=True)
    actor = models.CharField(max_length=150, help_text="Who asserted it: an agent actor or an owner.")
    taint = models.PositiveSmallIntegerField(choices=Taint.choices, default=Taint.CLEAN)
    origin = models.CharField(
        max_length=200, blank=True, default="", help_text="Its id in the tool it was imported from."
    )
    # These three are empty on most rows (every imported one): their indexes below are partial.
    supersedes = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="superseded_by",
        db_index=False,
    )
    proposal = models.ForeignKey(
        "Proposal", on_delete=models.SET_NULL, null=True, blank=True, related_name="facts", db_index=False
    )
    edited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        db_index=False,
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects: ClassVar[FactQuerySet] = FactQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # get_context: the current items of a project by kind, newest first.
            models.Index(fields=["project", "state", "kind", "-created_at"], name="fact_project_current"),
            models.Index(fields=["workspace", "state"], name="fact_ws_state"),
            # import: the versions of an item that came from elsewhere with its own id. Only rows
            # that have one: most have none (every item of a CLAUDE.md, of the benchmark's files),
            # and the lookup asks only for set ids, saying so (`origin > ''`) for the planner.
            models.Index(
                fields=["project", "origin"], name="fact_project_origin", condition=Q(origin__gt="")
            ),
            # the in-process word index (memory.lexical_index): rows committed since it last looked.
            models.Index(fields=["project", "id"], name="fact_project_id"),
            # import: an item without an id that was seen before, by its text.
            models.Index(fields=["project", "text_digest"], name="fact_project_text_digest"),
            # The foreign keys' lookups (`= id`, `IN (...)`: deletes, reverse relations) only ever ask
            # for set values: rows without one, all an import inserts, are left out of these indexes.
            models.Index(
                fields=["supersedes"], name="fact_supersedes", condition=Q(supersedes__isnull=False)
            ),
            models.Index(fields=["proposal"], name="fact_proposal", condition=Q(proposal__isnull=False)),
            models.Index(fields=["edited_by"], name="fact_edited_by", condition=Q(edited_by__isnull=False)),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind="thread", state__in=["open", "closed", "superseded", "retracted"])
                | (~Q(kind="thread") & Q(state__in=["active", "superseded", "retracted"])),
                name="fact_state_matches_kind",
            ),
        ]

    def __str__(self) -> str:
        return self.ref

    def save(self, *args: object, **kwargs: object) -> None:
        if not self.ref:
            self.ref = new_ref(self.kind)
        self.text_digest = text_digest(self.text)
        super().save(*args, **kwargs)  # type: ignore[arg-type]

    @property
    def is_protected(self) -> bool:
        return self.kind in Kind.protected()

    @property
    def is_live(self) -> bool:
        """Part of the working truth: not superseded, retracted or closed."""
        return self.state == Kind.live_state(self.kind)

    def provenance(self) -> Provenance:
        """Where this line came from: the source reference, its date and the asserting actor."""
        return provenance_of(self)

    @property
    def taint_label(self) -> str:
        return Taint(self.taint).label


class Provenanced(Protocol):
    """What provenance is made of: a Fact, or a row read without building one (context Item)."""

    @property
    def ref(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def source_date(self) -> date | None: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def actor(self) -> str: ...
    @property
    def origin(self) -> str: ...


def provenance_of(item: Provenanced) -> Provenance:
    """Where an item came from: the source reference, its date and the asserting actor."""
    provenance = Provenance(
        source=item.source or f"unforgetter:{item.ref}",
        date=(item.source_date or item.created_at.date()).isoformat(),
        actor=item.actor,
    )
    if item.origin:
        provenance["origin"] = item.origin
    return provenance


class Proposal(models.Model):
    """An agent's proposed change. Append-only, attested, consolidated exactly once."""

    class Op(models.TextChoices):
        ADD_FACT = "add_fact", "Add fact"
        UPDATE_FACT = "update_fact", "Update fact"
        OPEN_THREAD = "open_thread", "Open thread"
        CLOSE_THREAD = "close_thread", "Close thread"
        REJECT = "reject", "Retract item"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        QUARANTINED = "quarantined", "Quarantined"
        AWAITING_REVIEW = "awaiting_review", "Awaiting review"
        PUBLISHED = "published", "Published"
        REJECTED = "rejected", "Rejected"

        @classmethod
        def pending(cls) -> tuple[str, str]:
            """Waiting for the consolidator."""
            return (cls.QUEUED, cls.QUARANTINED)

    class Reason(models.TextChoices):
        SCHEMA = "schema", "Schema"
        SCOPE = "scope", "Scope"
        PROTECTED_TARGET = "protected_target", "Protected target"
        CONFLICT = "conflict", "Conflict with a newer version"
        INJECTION = "injection", "Injection signal"
        SECRET = "secret", "Secret in text"
        PREVIOUSLY_REJECTED = "previously_rejected", "Previously rejected"
        PROVENANCE = "provenance", "Provenance missing"
        REVIEWER = "reviewer", "Rejected by a reviewer"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="proposals")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="proposals")
    connection = models.ForeignKey(
        Connection, on_delete=models.SET_NULL, null=True, blank=True, related_name="proposals"
    )
    ref = models.CharField(
        max_length=32,
        unique=True,
        default=new_proposal_ref,
        editable=False,
        help_text="The proposal_id agents see.",
    )
    actor = models.CharField(max_length=150)
    zone = models.CharField(max_length=64)
    request_id = models.CharField(max_length=128)
    seq = models.BigIntegerField(help_text="Monotonic per workspace: the consolidator's watermark.")
    op = models.CharField(max_length=16, choices=Op.choices)
    kind = models.CharField(
        max_length=16, choices=Kind.choices, blank=True, help_text="The kind of item an add or update makes."
    )
    target = models.CharField(max_length=64, blank=True)
    text = models.TextField(blank=True)
    supersedes = models.CharField(max_length=64, blank=True)
    evidence = models.JSONField(default=list)
    content_digest = models.CharField(max_length=64, help_text="SHA-256 of the canonical proposed content.")
    status = models.CharField(max_length=16, choices=Status.choices)
    reason = models.CharField(max_length=32, choices=Reason.choices, blank=True)
    reason_detail = models.CharField(max_length=500, blank=True)
    signals = models.JSONField(
        default=list,
        blank=True,
        help_text="What the consolidator found: risk signals that held it, or the attack that rejected it.",
    )
    taint = models.PositiveSmallIntegerField(choices=Taint.choices, default=Taint.CLEAN)
    attestation = models.CharField(
        max_length=64, help_text="HMAC over the canonical proposal and the previous one."
    )
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_note = models.TextField(blank=True)

    class Meta:
        ordering = ["-seq"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "actor", "request_id"], name="proposal_request_once"
            ),
            models.UniqueConstraint(fields=["workspace", "seq"], name="proposal_seq_unique"),
        ]
        indexes = [
            # The consolidator's claim: pending proposals of a workspace in seq order.
            models.Index(fields=["workspace", "status", "seq"], name="proposal_claim"),
            models.Index(fields=["workspace", "content_digest"], name="proposal_content"),
            # Which workspaces have work for the consolidator: only pending rows are in it.
            models.Index(
                fields=["workspace"],
                condition=Q(status__in=["queued", "quarantined"]),
                name="proposal_pending",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.op} by {self.actor} ({self.status})"

    @property
    def taint_label(self) -> str:
        return Taint(self.taint).label


class TaintPrint(models.Model):
    """One MinHash band of a tainted item's text (memory.fingerprints): a proposal that shares a
    band with a tainted item and copies its text inherits its taint."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    fact = models.ForeignKey(Fact, on_delete=models.CASCADE, related_name="+")
    band = models.BigIntegerField()

    class Meta:
        indexes = [models.Index(fields=["workspace", "band"], name="taintprint_band")]

    def __str__(self) -> str:
        return f"{self.fact_id}:{self.band}"


class Publication(models.Model):
    """One consolidation/publish cycle of a workspace; the latest one is what `compiled_at` reports."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="publications")
    version = models.BigIntegerField()
    compiled_at = models.DateTimeField(default=timezone.now)
    published_count = models.PositiveIntegerField(default=0, help_text="Proposals published in this cycle.")
    changed = models.BooleanField(default=False, help_text="Whether the working truth changed.")
    content_version = models.BigIntegerField(
        default=0,
        help_text="The version of the last publication that changed memory; bundles are keyed by it.",
    )
    ledger_seq = models.BigIntegerField(default=0, help_text="The last proposal seq when this was published.")
    ledger_head = models.CharField(max_length=64, blank=True, help_text="That proposal's attestation.")

    class Meta:
        ordering = ["-version"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "version"], name="publication_version_unique")
        ]

    def __str__(self) -> str:
        return f"{self.workspace.slug} v{self.version}"


class Watermark(models.Model):
    """How far the consolidator has got in a workspace's proposals, in seq order.

    Claiming a batch means locking this row and advancing `seq` in the same transaction as the
    batch's effects, so a batch is consolidated exactly once or not at all.
    """

    workspace = models.OneToOneField(Workspace, on_delete=models.CASCADE, related_name="watermark")
    seq = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.workspace_id}@{self.seq}"


class ContextRequest(models.Model):
    """A compiled get_context bundle, recorded for audit and dedupe.

    `context_id` is derived from the credential, project, task and publication, so an identical
    request within one publication returns the same id and is recorded once.
    """

    context_id = models.CharField(max_length=40, unique=True)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="context_requests")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    connection = models.ForeignKey(Connection, on_delete=models.SET_NULL, null=True, related_name="+")
    actor = models.CharField(max_length=150)
    task = models.CharField(max_length=500)
    publication_version = models.BigIntegerField()
    refs = models.JSONField(default=list, help_text="Every item ref served in the bundle.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="context_ws_created")]

    def __str__(self) -> str:
        return self.context_id


class Embedding(models.Model):
    """One item version's vector under one embedding model: derived data, never the source of truth.

    Written off the request path (memory.services.embeddings) and rebuilt at will; a vector is
    only ever compared with vectors of the same `model`, so changing the model mixes nothing: the
    new model's vectors are written beside the old ones, which go once the new set is complete.
    `kind` and `data_class` copy the item's so the in-process index can skip what a search does
    not ask for; what a credential may see is still checked against the item itself.
    """

    fact = models.ForeignKey(Fact, on_delete=models.CASCADE, related_name="embeddings")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    model = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    data_class = models.CharField(max_length=16, choices=DataClass.choices)
    vector = models.BinaryField(help_text="Unit-length float16 components, little-endian.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["fact", "model"], name="embedding_once_per_model")]
        indexes = [
            # Loading a project's index, and noticing new vectors: the newest id per model.
            models.Index(fields=["project", "model", "id"], name="embedding_project_model"),
        ]

    def __str__(self) -> str:
        return f"{self.fact_id}@{self.model}"
