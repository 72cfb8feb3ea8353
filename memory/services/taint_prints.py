"""No laundering: a proposal that copies a tainted item's text inherits the item's taint.

`prints_record` stores the fingerprint bands of tainted items as they are published (by the
consolidator or on approval); `copies_taint` is what `propose_memory` does to new proposals before
they are attested: each takes the worst taint among the workspace's tainted items it nearly copies
(memory.fingerprints), and is quarantined for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memory.fingerprints import bands, copies, shingles
from memory.models import Fact, Proposal, Taint, TaintPrint
from memory.prepared import Prepared

_MAX_CANDIDATES = 20
# Every proposal reads this; compiled once per process and number of bands (memory.prepared).
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


def copies_taint(workspace_id: int, proposals: Sequence[Proposal]) -> None:
    """Raise the taint (and so quarantine) of every unsaved proposal whose text is a near-copy of
    one of the workspace's tainted items. One lookup for all of them, however many."""
    grams = [shingles(p.text) for p in proposals]
    wanted = {band for g in grams for band in bands(g)}
    if not wanted:
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
    for proposal, text_grams in zip(proposals, grams, strict=True):
        candidates = {pk for band in bands(text_grams) for pk in hits.get(band, ())}
        for pk in sorted(candidates)[:_MAX_CANDIDATES]:
            item_grams, taint = items[pk]
            if taint > proposal.taint and copies(text_grams, item_grams):
                proposal.taint = taint
                proposal.status = Proposal.Status.QUARANTINED
