"""The proposal ledger: an HMAC chain over every proposal of a workspace, in seq order.

Each proposal's `attestation` is HMAC-SHA256(key, canonical(proposal) + previous attestation),
the first one chained to the empty string. The canonical form holds everything a proposal says
and nothing that may legitimately change later (status, reason, review fields), and not `seq`:
the chain itself is the order, so a reordering shows as a proposal whose content is intact but
whose predecessor is not the one it was chained to.

The key is UNFORGETTER["LEDGER_KEY"] (with a dedicated salt, `django.utils.crypto.salted_hmac`),
independent of SECRET_KEY: whoever can write the database but does not hold the key cannot forge
a chain that verifies, and rotating SECRET_KEY leaves the ledger verifiable. New proposals are
attested with the current key; verification also accepts the keys in LEDGER_KEY_FALLBACKS, so a
rotated ledger key keeps older proposals verifiable.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC
from typing import Any

from django.conf import settings
from django.utils.crypto import constant_time_compare, salted_hmac

from memory.models import Proposal, Publication
from workspaces.models import Workspace

_SALT = "unforgetter.memory.ledger.v1"
CANONICAL_FIELDS = (
    "workspace_id",
    "project_id",
    "ref",
    "actor",
    "zone",
    "request_id",
    "op",
    "kind",
    "target",
    "text",
    "supersedes",
    "evidence",
    "content_digest",
    "taint",
    "created_at",
)


def canonical(values: dict[str, Any]) -> bytes:
    """The canonical bytes of a proposal, from its model instance's fields or a `.values()` row."""
    body = {name: values[name] for name in CANONICAL_FIELDS}
    body["created_at"] = values["created_at"].astimezone(UTC).isoformat(timespec="microseconds")
    return json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def _fields(proposal: Proposal) -> dict[str, Any]:
    return {name: getattr(proposal, name) for name in CANONICAL_FIELDS}


def _mac(body: bytes, previous: str, key: str | None = None) -> str:
    secret = key if key is not None else settings.UNFORGETTER["LEDGER_KEY"]
    return salted_hmac(_SALT, body + b"|" + previous.encode(), secret=secret, algorithm="sha256").hexdigest()


def _verifies(body: bytes, previous: str, attestation: str) -> bool:
    """Whether `attestation` is the MAC of `body` after `previous` under the current or a retired key."""
    keys = [settings.UNFORGETTER["LEDGER_KEY"], *settings.UNFORGETTER.get("LEDGER_KEY_FALLBACKS", [])]
    return any(constant_time_compare(_mac(body, previous, key), attestation) for key in keys)


def attest(proposal: Proposal, previous: str) -> str:
    """The attestation of a proposal about to be stored after the one attested `previous`."""
    return _mac(canonical(_fields(proposal)), previous)


@dataclass(frozen=True)
class LedgerReport:
    workspace: str
    checked: int
    ok: bool
    problem: str = ""
    proposal_seq: int | None = None
    proposal_id: str = ""

    def describe(self) -> str:
        if self.ok:
            return f"{self.workspace}: ledger intact, {self.checked} proposals verified."
        ident = f"#{self.proposal_seq}" + (f" ({self.proposal_id})" if self.proposal_id else "")
        return (
            f"{self.workspace}: ledger broken at proposal {ident}: {self.problem} "
            f"{self.checked} proposals before it verified."
        )


def ledger_verify(*, workspace: Workspace) -> LedgerReport:
    """Recompute the chain of a workspace and name the first proposal edited, deleted or reordered.

    Deletions show as a gap in `seq` (or, for the newest proposals, as fewer proposals than the
    latest publication recorded); edits as a proposal whose attestation matches no predecessor;
    reorderings as one whose content is intact but chained to another predecessor.
    """
    rows = (
        Proposal.objects.filter(workspace=workspace)
        .order_by("seq")
        .values("seq", *CANONICAL_FIELDS, "attestation")
    )
    previous = ""
    expected = 1
    checked = 0
    slug = workspace.slug
    for row in rows.iterator(chunk_size=2000):
        if row["seq"] != expected:
            return LedgerReport(
                slug, checked, False,
                f"deleted: proposal #{expected} is missing (the ledger jumps to #{row['seq']}).",
                expected,
            )  # fmt: skip
        body = canonical(row)
        if not _verifies(body, previous, row["attestation"]):
            problem = (
                "reordered: its content is intact but it was attested after another proposal."
                if _chained_elsewhere(workspace, body, row["attestation"], previous)
                else "edited: its content no longer matches its attestation."
            )
            return LedgerReport(slug, checked, False, problem, row["seq"], row["ref"])
        previous = row["attestation"]
        expected += 1
        checked += 1
    recorded = (
        Publication.objects.filter(workspace=workspace, ledger_seq__gt=0)
        .order_by("-version")
        .values("ledger_seq", "ledger_head", "version")
        .first()
    )
    if recorded and recorded["ledger_seq"] >= expected:
        return LedgerReport(
            slug, checked, False,
            f"deleted: publication v{recorded['version']} recorded proposals up to "
            f"#{recorded['ledger_seq']}, the ledger ends at #{expected - 1}.",
            expected,
        )  # fmt: skip
    if recorded:
        at = (
            Proposal.objects.filter(workspace=workspace, seq=recorded["ledger_seq"])
            .values("attestation")
            .first()
        )
        if at is None or at["attestation"] != recorded["ledger_head"]:
            return LedgerReport(
                slug, checked, False,
                f"edited: proposal #{recorded['ledger_seq']} is not the one publication "
                f"v{recorded['version']} recorded.",
                recorded["ledger_seq"],
            )  # fmt: skip
    return LedgerReport(slug, checked, True)


def _chained_elsewhere(workspace: Workspace, body: bytes, attestation: str, previous: str) -> bool:
    """Whether the content verifies against some other predecessor (the start included)."""
    candidates = {"", *Proposal.objects.filter(workspace=workspace).values_list("attestation", flat=True)}
    candidates.discard(previous)
    return any(_verifies(body, c, attestation) for c in candidates)
