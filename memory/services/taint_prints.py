"""No laundering: a proposal that copies a tainted item's text inherits the item's taint.

`prints_record` stores the fingerprint bands of tainted items as they are published (by the
consolidator or on approval); `copies_taint` is what `propose_memory` does to new proposals before
they are attested: each takes the worst taint among the workspace's tainted items it nearly copies
(memory.fingerprints), and is quarantined for it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence

from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet

from memory.fingerprints import bands, copies, shingles
from memory.models import Fact, Proposal, Taint, TaintPrint
from workspaces.prepared import Beside, Prepared

_MAX_CANDIDATES = 20
# Every proposal reads this; compiled once per process and number of bands (workspaces.prepared).
_prints_sharing = Prepared(
    lambda workspace_id, wanted: TaintPrint.objects.filter(
        workspace_id=workspace_id, band__in=wanted
    ).values_list("fact_id", "band")
)


def prints_record(items: Iterable[Fact]) -> None:
    """Store the bands of the tainted ones among these saved items."""
    rows = [
        TaintPrint(workspace_id=item.workspace_id, fact_id=item.pk, band=band)
        for item in items
        if item.taint > Taint.CLEAN and item.pk is not None
        for band in bands(shingles(item.text))
    ]
    if rows:
        TaintPrint.objects.bulk_create(rows, batch_size=500)


@functools.lru_cache(maxsize=16)
def _printed(text: str) -> tuple[frozenset[int], tuple[int, ...]]:
    """A text's shingles and bands, worked out once for the probe beside a proposal's first
    statement and the check after it: the texts of the calls in flight (MCP_REQUEST_THREADS, 8
    by default), each at most 8,000 characters and a few thousand shingles: about 2 MB at most."""
    grams = shingles(text)
    return grams, tuple(bands(grams))


def shared_print_probe(workspace_id: int, text: str) -> Beside | None:
    """Whether any of the workspace's tainted items shares a band with `text`, as one value (1,
    or NULL for none) to read beside another statement; None for a text without bands. A NULL
    tells `copies_taint` it need not look these bands up (`unshared`)."""
    wanted = sorted(set(_printed(text)[1]))
    if not wanted:
        return None
    places = ", ".join(["%s"] * len(wanted))  # placeholders only: the bands are parameters
    sql = f'(SELECT 1 FROM "memory_taintprint" WHERE "workspace_id" = %s AND "band" IN ({places}) LIMIT 1)'  # noqa: S608
    return Beside(sql, [workspace_id, *wanted])


def unshared_bands(text: str) -> frozenset[int]:
    """The bands of `text`: those a NULL from `shared_print_probe` found no tainted item shares."""
    return frozenset(_printed(text)[1])


def copies_taint(
    workspace_id: int, proposals: Sequence[Proposal], *, unshared: frozenset[int] = frozenset()
) -> None:
    """Raise the taint (and so quarantine) of every unsaved proposal whose text is a near-copy of
    one of the workspace's tainted items. One lookup for all of them, however many; none where
    every band is among `unshared`, those no tainted item shared when this submission began."""
    printed = [_printed(p.text) for p in proposals]
    wanted = {band for _, text_bands in printed for band in text_bands}
    if not wanted or wanted <= unshared:
        return
    hits: dict[int, set[int]] = {}
    for fact_id, band in _prints_sharing.rows(workspace_id, sorted(wanted)):
        hits.setdefault(band, set()).add(fact_id)
    if not hits:
        return
    items = {
        pk: (shingles(text), taint)
        for pk, text, taint in Fact.objects.filter(
            pk__in={pk for ids in hits.values() for pk in ids}
        ).values_list("pk", "text", "taint")
    }
    for proposal, (text_grams, text_bands) in zip(proposals, printed, strict=True):
        candidates = {pk for band in text_bands for pk in hits.get(band, ())}
        for pk in sorted(candidates)[:_MAX_CANDIDATES]:
            item_grams, taint = items[pk]
            if taint > proposal.taint and copies(text_grams, item_grams):
                proposal.taint = taint
                proposal.status = Proposal.Status.QUARANTINED


def _unprinted(workspace_id: int | None) -> QuerySet[Fact]:
    """Tainted items (in any state: a retracted item's text is still tainted) with no prints."""
    items = Fact.objects.filter(taint__gt=Taint.CLEAN).filter(
        ~Exists(TaintPrint.objects.filter(fact_id=OuterRef("pk")))
    )
    return items.filter(workspace_id=workspace_id) if workspace_id is not None else items


def prints_missing(workspace_id: int | None = None) -> int:
    """How many tainted items have no prints (made before prints existed, or imported)."""
    return _unprinted(workspace_id).count()


def prints_backfill(
    *, workspace_id: int | None = None, batch_size: int = 500, progress: Callable[[int], None] | None = None
) -> int:
    """Record the prints of every tainted item that has none; return how many items got them.

    Idempotent (an item with prints is skipped, so a second run does nothing) and safe beside the
    consolidator, which records an item's prints in the transaction that creates it. Memory stays
    bounded: items are read `batch_size` at a time in pk order, only their id, workspace and text,
    and each batch commits on its own, so a stopped run keeps what it did.
    """
    done, after = 0, 0
    while True:
        with transaction.atomic():
            batch = list(
                _unprinted(workspace_id)
                .filter(pk__gt=after)
                .order_by("pk")
                .only("pk", "workspace_id", "text", "taint")[:batch_size]
            )
            if not batch:
                return done
            prints_record(batch)
        done += len(batch)
        after = batch[-1].pk
        if progress is not None:
            progress(done)
