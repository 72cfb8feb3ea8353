"""Import of memory items: idempotent, identity-keeping, all or nothing.

Readers (memory/readers/) turn a format into items; this module decides what each item is to the
project it goes into, in large batches inside one transaction (never one save per item):

- an item seen before is **unchanged** and left alone: the same foreign id (`origin`), the same
  ref, or, for items without an id (a CLAUDE.md bullet), the same kind and text;
- an item whose id is known but whose content differs is **updated**: a new version that
  supersedes the previous one, as an owner's edit would;
- anything else is **imported**. A ref in Unforgetter's form is kept when it is free on this
  server and remapped when it clashes; the ref it came with stays as its origin, shown in its
  provenance, so a later import still finds it.

A bad input anywhere names itself (`line 3: ...`) and nothing of the import is kept.

Imported text is screened as a proposal's is: a secret in it is stored redacted
(memory.redaction), and a tainted item is fingerprinted (memory.services.taint_prints), so that
copying it into a proposal later passes its taint on.

The duplicate check looks texts up by their indexed digest (`Fact.text_digest`), never by the text.

An import that changed memory is a publication (bundles compiled before it are not served
after it), and on PostgreSQL it is followed by ANALYZE, so the next query is planned for the table
as it is.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from django.db import connection as db
from django.db import transaction
from django.db.models import QuerySet

from memory.forked_ahead import forked_ahead
from memory.models import Fact, Kind, State, Taint, text_digest
from memory.read_ahead import read_ahead
from memory.readers import Incoming, read_items
from memory.redaction import redact
from memory.refs import is_ref, ref_tails
from memory.services import FactRow, fact_row, fact_rows_insert, publication_record
from memory.services.taint_prints import prints_record
from memory.statistics import statistics_refresh
from workspaces.exceptions import InvalidRequest
from workspaces.models import Project

BATCH_SIZE = 5_000
# Refs longer than the column are foreign ids, however they look.
_REF_COLUMN_LENGTH = Fact._meta.get_field("ref").max_length or 32
_COMPARED = ("kind", "text", "state", "data_class", "taint")
_TAINTS = {taint.label: int(taint) for taint in Taint}


@dataclass(frozen=True)
class ImportReport:
    imported: int
    unchanged: int
    updated: int
    path: str
    redacted: int = 0  # items whose text held a secret, stored with it replaced

    @property
    def total(self) -> int:
        return self.imported + self.unchanged + self.updated


def _own_ref(ref: str | None) -> str | None:
    return ref if ref and len(ref) <= _REF_COLUMN_LENGTH and is_ref(ref) else None


class _Prepared(NamedTuple):
    """One batch as `_Importer.prepare` leaves it: each item with its row, the rows' digests and
    how many of its texts held a secret (redacted)."""

    items: list[tuple[Incoming, FactRow]]
    digests: list[int]
    redacted: int

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as plain tuples (memory.forked_ahead): a named tuple pickles through a Python
        # call of its own, which took a quarter of the forked reader's time.
        items = [tuple(item) for item, _ in self.items]
        rows = [tuple(row) for _, row in self.items]
        return (_prepared_from, (items, rows, self.digests, self.redacted))


def _prepared_from(
    items: list[tuple[Any, ...]], rows: list[tuple[Any, ...]], digests: list[int], redacted: int
) -> _Prepared:
    made = list(zip(map(Incoming._make, items), map(FactRow._make, rows), strict=True))
    return _Prepared(made, digests, redacted)


@dataclass
class _Importer:
    """One import's state across its batches: what it has matched, made and still has to link."""

    project: Project
    actor: str
    imported: int = 0
    unchanged: int = 0
    updated: int = 0
    redacted: int = 0
    # Sources already screened -> as stored: most items of a file share a handful of sources.
    sources: dict[str, str] = field(default_factory=dict)
    # Every identity seen in this import -> the ref that now stands for it.
    seen: dict[tuple[str, ...], str] = field(default_factory=dict)
    # The ids items of this import go by (their ref or origin) -> the ref they now have.
    resolved: dict[str, str] = field(default_factory=dict)
    # (new ref, the id in the file of the item it supersedes), linked once every item is in.
    pending_links: list[tuple[str, str, str]] = field(default_factory=list)
    used_refs: set[str] = field(default_factory=set)
    # When the project held no item as the import began, only rows this import inserted can be
    # what a later item is: their origins and text digests, kept here, say which lookups can
    # find anything (the first import of 100,000 items otherwise probes 100,000 digests for
    # nothing). None when the project held items: every lookup asks the database.
    inserted_origins: set[str] | None = None
    inserted_digests: set[int] | None = None

    def _row(self, item: Incoming, text: str) -> FactRow:
        """The validated row an item would be, with its text `text` (redacted, as a proposal's is:
        secrets are not kept in clear, whoever brings them); its errors prefixed with where it
        came from."""
        source = self.sources.get(item.source)
        if source is None:
            source = self.sources[item.source] = redact(item.source)
        try:
            if item.taint is not None and item.taint not in _TAINTS:
                raise InvalidRequest(f"taint {item.taint!r} is not one of {', '.join(_TAINTS)}.")
            return fact_row(
                project=self.project,
                kind=item.kind,
                text=text,
                state=item.state,
                data_class=item.data_class,
                source=source,
                source_date=item.source_date,
                actor=item.actor or self.actor,
                taint=_TAINTS[item.taint] if item.taint is not None else Taint.CLEAN,
                origin=item.origin,
                ref="",  # assigned once the item's identity is decided (apply)
            )
        except InvalidRequest as exc:
            raise InvalidRequest(f"{item.where}: {exc.message}") from None

    def prepare(self, batch: list[Incoming]) -> _Prepared:
        """A batch checked, screened and digested: the part of an import that needs no database,
        so that it can be done for the next batch while this one is written (memory.read_ahead)."""
        texts = [redact(item.text) for item in batch]
        items = [(item, self._row(item, text)) for item, text in zip(batch, texts, strict=True)]
        redacted = sum(text != item.text for item, text in zip(batch, texts, strict=True))
        return _Prepared(items, [text_digest(row.text) for _, row in items], redacted)

    def _existing(
        self, prepared: _Prepared
    ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], dict[tuple[str, str], dict[str, Any]]]:
        """Rows already on the server that this batch's items may be: by ref, origin, kind+text."""
        columns = ("id", "ref", "project_id", "origin", *_COMPARED)
        items = prepared.items
        refs = {r for item, _ in items if (r := _own_ref(item.ref))}
        by_ref = {row["ref"]: row for row in _in(Fact.objects.all(), "ref", refs).values(*columns)}
        origins = {o for item, _ in items for o in (item.origin, item.ref) if o}
        if self.inserted_origins is not None:
            origins &= self.inserted_origins
        by_origin: dict[str, dict[str, Any]] = {}
        # `origin > ''` adds nothing to the IN list (no origin asked for is empty) but lets both
        # planners use fact_project_origin, which holds only the rows that have an origin.
        with_origin = Fact.objects.filter(project=self.project, origin__gt="")
        for row in _in(with_origin, "origin", origins).order_by("id").values(*columns):
            by_origin[row["origin"]] = row  # the latest version wins
        digests = {
            digest
            for (item, _), digest in zip(items, prepared.digests, strict=True)
            if not item.origin and not item.ref
        }
        if self.inserted_digests is not None:
            digests &= self.inserted_digests
        by_text: dict[tuple[str, str], dict[str, Any]] = {}
        if digests:
            rows = _in(Fact.objects.filter(project=self.project), "text_digest", digests).order_by("id")
            for row in rows.values(*columns):  # a digest names candidates; the text itself decides
                by_text[(row["kind"], row["text"])] = row
        return by_ref, by_origin, by_text

    def apply(self, prepared: _Prepared) -> None:
        items = prepared.items
        self.redacted += prepared.redacted
        by_ref, by_origin, by_text = self._existing(prepared)
        new_rows: list[FactRow] = []
        new_digests: list[int] = []
        supersede: list[tuple[str, dict[str, Any]]] = []
        tails = iter(ref_tails(len(items)))  # a new ref is the item's kind and one of these
        for (item, row), digest in zip(items, prepared.digests, strict=True):
            ident = item.origin or item.ref
            key = ("id", ident) if ident else ("text", row.kind, row.text)
            if key in self.seen:  # the same item twice in one import
                self.unchanged += 1
                continue
            own = _own_ref(item.ref)
            match = None
            if item.origin:
                match = by_origin.get(item.origin)
            elif item.ref:
                in_project = by_ref.get(own) if own else None
                if in_project is not None and in_project["project_id"] != self.project.pk:
                    in_project = None
                match = by_origin.get(item.ref) or in_project
            else:
                match = by_text.get((row.kind, row.text))
            if match is not None:
                # Taint never decreases: a new version of an untrusted item stays untrusted, whatever
                # the file says (an export of this workspace says it; another tool's may not).
                row = row._replace(taint=max(row.taint, int(match["taint"])))
            if match is not None and all(match[c] == getattr(row, c) for c in _COMPARED):
                self.unchanged += 1
                ref = str(match["ref"])
            else:
                keep = own if own and own not in by_ref and own not in self.used_refs else None
                ref = keep or f"{row.kind}_{next(tails)}"
                origin = item.origin or ("" if keep else item.ref or "")
                if match is not None:
                    supersede.append((ref, match))
                    self.updated += 1
                else:
                    self.imported += 1
                    if item.supersedes:
                        self.pending_links.append((ref, item.supersedes, item.where))
                new_rows.append(_named(row, ref=ref, origin=origin))
                new_digests.append(digest)
            self.used_refs.add(ref)
            self.seen[key] = ref
            if ident:
                self.resolved[ident] = ref
        if new_rows:
            fact_rows_insert(project=self.project, rows=new_rows, digests=new_digests)
            if self.inserted_origins is not None and self.inserted_digests is not None:
                self.inserted_origins.update(row.origin for row in new_rows if row.origin)
                self.inserted_digests.update(new_digests)
            self._prints_record([row for row in new_rows if row.taint > Taint.CLEAN])
        if supersede:
            _link([(ref, int(old["id"])) for ref, old in supersede])
            live = [old["id"] for _, old in supersede if old["state"] == Kind.live_state(old["kind"])]
            Fact.objects.filter(pk__in=live).update(state=State.SUPERSEDED)

    def _prints_record(self, tainted: list[FactRow]) -> None:
        """Fingerprint the tainted items just inserted, as publishing does: a proposal that copies
        one of them inherits its taint (memory.services.taint_prints), however it got here."""
        if not tainted:
            return
        ids = dict(Fact.objects.filter(ref__in=[row.ref for row in tainted]).values_list("ref", "id"))
        prints_record(
            Fact(pk=ids[row.ref], workspace_id=self.project.workspace_id, text=row.text, taint=row.taint)
            for row in tainted
        )

    def link(self) -> None:
        """Restore supersession inside the import: each item points at the version it replaced."""
        if not self.pending_links:
            return
        parent = {ref: self.resolved.get(target, target) for ref, target, _ in self.pending_links}
        for ref, _, where in self.pending_links:
            seen, step = {ref}, parent.get(ref)
            while step is not None:
                if step in seen:
                    raise InvalidRequest(f"{where}: its supersession chain loops back to itself.")
                seen.add(step)
                step = parent.get(step)
        wanted = set(parent.values())
        ids = dict(Fact.objects.filter(project=self.project, ref__in=wanted).values_list("ref", "id"))
        pairs = []
        for ref, target, where in self.pending_links:
            target_id = ids.get(self.resolved.get(target, target))
            if target_id is None:
                raise InvalidRequest(
                    f"{where}: supersedes {target!r}, which is neither in the import nor here."
                )
            pairs.append((ref, target_id))
        _link(pairs)


def _named(row: FactRow, *, ref: str, origin: str) -> FactRow:
    """`row._replace(ref=ref, origin=origin)` at a third of its cost: namedtuple's `_replace`
    goes through a dict of keywords, once for each of an import's 100,000 rows."""
    kind, text, state, data_class, source, source_date, actor, _, taint, _ = row
    return FactRow(kind, text, state, data_class, source, source_date, actor, ref, taint, origin)


def _in(rows: QuerySet[Fact], column: str, values: Collection[Any]) -> QuerySet[Fact]:
    """`rows` whose `column` is one of `values`, the values passed as plain parameters: through
    `__in` the ORM prepares each of a batch's 5,000 values on its own, which costs more than the
    statement does."""
    if not values:
        return rows.none()
    where = f'"memory_fact"."{column}" IN ({", ".join(["%s"] * len(values))})'
    return rows.extra(where=[where], params=list(values))  # noqa: S610 - placeholders only


def _link(pairs: Iterable[tuple[str, int]]) -> None:
    """Set `supersedes` of the rows named by ref (bulk: refs to ids, one update per batch)."""
    pairs = list(pairs)
    ids = dict(Fact.objects.filter(ref__in=[ref for ref, _ in pairs]).values_list("ref", "id"))
    Fact.objects.bulk_update(
        [Fact(pk=ids[ref], supersedes_id=old) for ref, old in pairs], ["supersedes"], batch_size=1_000
    )


def _batches(items: Iterable[Incoming], size: int) -> Iterator[list[Incoming]]:
    batch: list[Incoming] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


@transaction.atomic
def memory_import(
    *,
    project: Project,
    path: Path,
    fmt: str,
    actor: str = "import",
    source_project: str | None = None,
    progress: Callable[[int], None] | None = None,
    forked: bool = False,
) -> ImportReport:
    """Import a file or folder into a project, all or nothing: a bad input names itself, nothing is kept.

    `forked`: the batches are read and checked in a child process (memory.forked_ahead), on
    another core; only for a process that owns its threads (the import command), never a server.
    """
    _page_cache_widen()
    # Imports into one project take turns (SQLite's write lock already makes every writer do so):
    # whether the project held anything is then true for the whole import.
    Project.objects.select_for_update().filter(pk=project.pk).values_list("pk", flat=True).get()
    empty = not Fact.objects.filter(project=project).exists()
    importer = _Importer(
        project=project,
        actor=actor,
        inserted_origins=set() if empty else None,
        inserted_digests=set() if empty else None,
    )
    items = read_items(path, fmt=fmt, project=project.slug, source_project=source_project)
    done = 0
    # The next batch is read and checked while this one is written; an error in it is raised
    # here, after the batches before it, as it would be in line.
    prepared_batches = (importer.prepare(batch) for batch in _batches(items, BATCH_SIZE))
    ahead = forked_ahead if forked and hasattr(os, "fork") else read_ahead
    for prepared in ahead(prepared_batches):
        importer.apply(prepared)
        done += len(prepared.items)
        if progress:
            progress(done)
    importer.link()
    changed = importer.imported + importer.updated
    if changed:
        # A changed content version: bundles compiled before the import are not served after it.
        publication_record(workspace=project.workspace, published_count=changed, changed=True)
        transaction.on_commit(_analyze)
    return ImportReport(
        imported=importer.imported,
        unchanged=importer.unchanged,
        updated=importer.updated,
        path=str(path),
        redacted=importer.redacted,
    )


# SQLite's default page cache is 2 MB: a bulk load of memory_fact, its indexes and the full-text
# index then writes and rereads the same pages through the OS many times over.
_IMPORT_PAGE_CACHE_KIB = 256 * 1024


def _page_cache_widen() -> None:
    """Give this connection a page cache the size of a large import (SQLite; a no-op elsewhere).

    Memory is taken only as pages are used, and only by the process that imports.
    """
    if db.vendor == "sqlite":
        with db.cursor() as cursor:
            cursor.execute(f"PRAGMA cache_size = -{_IMPORT_PAGE_CACHE_KIB}")


def _analyze() -> None:
    """Statistics for the imported rows at once (memory.statistics)."""
    statistics_refresh(Fact._meta.db_table)
