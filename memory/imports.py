"""Import of memory items: the bulk path.

Items are parsed and validated in a streaming pass and inserted in large batches (one transaction
for the whole file), never saved one by one. An import is a publication that changed memory, and
on PostgreSQL it is followed by ANALYZE, so the next query is planned for the table as it is.
JSONL: one item per line, `{"kind", "text", "state"?, "data_class"?, "ref"?, "source"?, "actor"?, "date"?}`.
Markdown: CLAUDE.md / AGENTS.md style notes; each bullet or paragraph becomes one item, its kind
taken from the heading above it (Decisions, Conventions, Policies, Open questions, ...).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, TextIO

from django.db import connection as db
from django.db import transaction

from memory.models import Kind
from memory.refs import is_ref
from memory.services import FactRow, fact_row, fact_rows_insert, publication_record
from workspaces.exceptions import InvalidRequest
from workspaces.models import Project

BATCH_SIZE = 5_000
_JSONL_KEYS = {"kind", "text", "state", "data_class", "ref", "source", "actor", "date"}


@dataclass(frozen=True)
class ImportReport:
    imported: int
    path: str


def _parse_date(value: Any, line: int) -> date | None:
    if value in (None, ""):
        return None
    try:
        return date.fromisoformat(str(value)[:10])
    except ValueError:
        raise InvalidRequest(f"line {line}: date {value!r} is not an ISO date (YYYY-MM-DD).") from None


def jsonl_items(stream: TextIO, *, project: Project, default_actor: str, source: str) -> Iterator[FactRow]:
    for number, raw in enumerate(stream, start=1):
        if not raw.strip():
            continue
        try:
            item = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InvalidRequest(f"line {number}: not valid JSON ({exc.msg}).") from None
        if not isinstance(item, dict):
            raise InvalidRequest(f"line {number}: each line must be a JSON object.")
        unknown = set(item) - _JSONL_KEYS
        if unknown:
            raise InvalidRequest(f"line {number}: unknown key {sorted(unknown)[0]!r}.")
        if not isinstance(item.get("text"), str) or not isinstance(item.get("kind", "fact"), str):
            raise InvalidRequest(f"line {number}: 'text' and 'kind' must be strings.")
        ref = item.get("ref")
        if ref is not None and (not isinstance(ref, str) or not is_ref(ref)):
            raise InvalidRequest(
                f"line {number}: ref {ref!r} must look like kind_abc123 (lowercase, digits)."
            )
        try:
            yield fact_row(
                project=project,
                kind=item.get("kind", Kind.FACT),
                text=item["text"],
                state=item.get("state"),
                data_class=item.get("data_class"),
                source=str(item.get("source") or source),
                source_date=_parse_date(item.get("date"), number),
                actor=str(item.get("actor") or default_actor),
                ref=ref,
            )
        except InvalidRequest as exc:
            raise InvalidRequest(f"line {number}: {exc.message}") from None


_HEADING_KINDS = [
    (re.compile(r"decision|adr|chose|choice", re.I), Kind.DECISION),
    (re.compile(r"convention|style|standard|guideline|rule of thumb", re.I), Kind.CONVENTION),
    (re.compile(r"polic|must|never|security|compliance|rule", re.I), Kind.POLICY),
    (re.compile(r"goal|objective|mission", re.I), Kind.GOAL),
    (re.compile(r"permission|access", re.I), Kind.PERMISSION),
    (re.compile(r"identity|who we are|about", re.I), Kind.IDENTITY),
    (re.compile(r"open|question|todo|thread|follow", re.I), Kind.THREAD),
    (re.compile(r"how to|method|runbook|procedure|steps|playbook", re.I), Kind.METHOD),
]
_BULLET_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
_HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _kind_for_heading(heading: str) -> Kind:
    for pattern, kind in _HEADING_KINDS:
        if pattern.search(heading):
            return kind
    return Kind.FACT


def markdown_items(stream: TextIO, *, project: Project, default_actor: str, source: str) -> Iterator[FactRow]:
    """Bullets and paragraphs of CLAUDE.md/AGENTS.md-style notes; methods keep their whole section."""
    kind: Kind = Kind.FACT
    heading = ""
    block: list[str] = []
    method_lines: list[str] = []

    def flush_block() -> Iterator[FactRow]:
        text = " ".join(line.strip() for line in block).strip()
        block.clear()
        if text:
            yield fact_row(project=project, kind=kind, text=text, actor=default_actor, source=source)

    def flush_method() -> Iterator[FactRow]:
        text = "\n".join(method_lines).strip()
        method_lines.clear()
        if text:
            yield fact_row(
                project=project,
                kind=Kind.METHOD,
                text=f"{heading}\n{text}",
                actor=default_actor,
                source=source,
            )

    in_code = False
    for raw in stream:
        line = raw.rstrip("\n")
        if line.strip().startswith("```"):
            in_code = not in_code
        heading_match = None if in_code else _HEADING_RE.match(line)
        if heading_match:
            yield from flush_block()
            yield from flush_method()
            heading = heading_match.group(2)
            kind = _kind_for_heading(heading)
            continue
        if kind == Kind.METHOD:
            method_lines.append(line)
            continue
        bullet = None if in_code else _BULLET_RE.match(line)
        if bullet:
            yield from flush_block()
            block.append(bullet.group(1))
        elif not line.strip():
            yield from flush_block()
        else:
            block.append(line)
    yield from flush_block()
    yield from flush_method()


def _batches(items: Iterable[FactRow], size: int) -> Iterator[list[FactRow]]:
    batch: list[FactRow] = []
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
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Import a file into a project, all or nothing: a bad line names itself and nothing is kept."""
    parsers = {"jsonl": jsonl_items, "markdown": markdown_items}
    if fmt not in parsers:
        raise InvalidRequest(f"Unknown format {fmt!r}; use jsonl or markdown.")
    total = 0
    with path.open(encoding="utf-8") as stream:
        items = parsers[fmt](stream, project=project, default_actor=actor, source=path.name)
        for batch in _batches(items, BATCH_SIZE):
            total += fact_rows_insert(project=project, rows=batch)
            if progress:
                progress(total)
    # A changed content version: bundles compiled before the import are not served after it.
    publication_record(workspace=project.workspace, published_count=total, changed=True)
    transaction.on_commit(_analyze)
    return ImportReport(imported=total, path=str(path))


def _analyze() -> None:
    """Planner statistics for the imported rows at once, not when autovacuum gets round to it.

    A bulk load leaves PostgreSQL planning the next queries for the table as it was before (or,
    on a new database, for an empty one); SQLite plans from its indexes alone.
    """
    if db.vendor == "postgresql":
        with db.cursor() as cursor:
            cursor.execute("ANALYZE memory_fact")
