"""Import and export of memory items.

Import is the bulk path: items are parsed and validated in a streaming pass and inserted in large
batches (one transaction per batch), never saved one by one.
JSONL: one item per line, `{"kind", "text", "state"?, "data_class"?, "ref"?, "source"?, "actor"?, "date"?}`.
Markdown: CLAUDE.md / AGENTS.md style notes; each bullet or paragraph becomes one item, its kind
taken from the heading above it (Decisions, Conventions, Policies, Open questions, ...).
"""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, TextIO

from django.db import transaction

from memory.models import Fact, Kind, Proposal, State
from memory.refs import is_ref
from memory.services import FactRow, fact_row, fact_rows_insert
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
    return ImportReport(imported=total, path=str(path))


# --- Export -------------------------------------------------------------------------------------

EXPORT_README = """# {name}: Unforgetter export

Exported {exported_at} from workspace `{slug}`. Everything here opens without Unforgetter:

- `projects/<project>/memory.md`: the working truth of each project, by kind, each item with its
  ref, state, data class, taint and provenance (source, date, actor); then its history
  (superseded, retracted and closed items).
- `projects/<project>/items.jsonl`: the same items in the import format (`manage.py import_memory`).
- `proposals.jsonl`: every proposal agents made, with its status, reason and attestation (the
  hash chain `manage.py verify_ledger` checks).
- `manifest.json`: every item and file with its SHA-256, so a copy can be checked.
"""


_PLURALS = {
    Kind.FACT: "Facts",
    Kind.DECISION: "Decisions",
    Kind.CONVENTION: "Conventions",
    Kind.METHOD: "Methods",
    Kind.THREAD: "Threads",
    Kind.GOAL: "Goals",
    Kind.POLICY: "Policies",
    Kind.PERMISSION: "Permissions",
    Kind.IDENTITY: "Identity",
}


def _item_markdown(fact: Fact) -> str:
    prov = fact.provenance()
    lines = [f"- **{fact.ref}** ({fact.state}, {fact.data_class}, taint {fact.taint_label})"]
    lines += [f"  {line}" for line in fact.text.splitlines() or [""]]
    lines.append(f"  _source: {prov['source']} · date: {prov['date']} · actor: {prov['actor']}_")
    if fact.supersedes_id:
        lines.append(f"  _supersedes: {fact.supersedes.ref if fact.supersedes else fact.supersedes_id}_")
    return "\n".join(lines)


def _project_markdown(project: Project, facts: list[Fact]) -> str:
    current = [f for f in facts if f.state in State.current()]
    history = [f for f in facts if f.state not in State.current()]
    parts = [f"# {project.name} (`{project.slug}`, {project.data_class})", ""]
    if project.description:
        parts += [project.description, ""]
    for kind in Kind:
        items = [f for f in current if f.kind == kind]
        if items:
            parts += [f"## {_PLURALS.get(kind, kind.label)}", "", *(_item_markdown(f) for f in items), ""]
    if history:
        parts += ["## History", "", *(_item_markdown(f) for f in history), ""]
    return "\n".join(parts)


def _item_json(fact: Fact) -> dict[str, Any]:
    return {
        "ref": fact.ref,
        "kind": fact.kind,
        "state": fact.state,
        "text": fact.text,
        "data_class": fact.data_class,
        "source": fact.source,
        "actor": fact.actor,
        "date": (fact.source_date or fact.created_at.date()).isoformat(),
    }


def workspace_export(*, workspace: Any, output: Path) -> Path:
    """Write a readable, self-describing export of a workspace to a directory or a .zip file."""
    files: dict[str, bytes] = {}
    manifest_items: list[dict[str, Any]] = []
    for project in Project.objects.filter(workspace=workspace).order_by("slug"):
        facts = list(
            Fact.objects.filter(project=project).select_related("supersedes").order_by("kind", "created_at")
        )
        files[f"projects/{project.slug}/memory.md"] = _project_markdown(project, facts).encode()
        files[f"projects/{project.slug}/items.jsonl"] = "".join(
            json.dumps(_item_json(f), ensure_ascii=False) + "\n" for f in facts if f.state in State.current()
        ).encode()
        for fact in facts:
            entry = _item_json(fact)
            entry.update(
                project=project.slug,
                taint=fact.taint_label,
                supersedes=fact.supersedes.ref if fact.supersedes else None,
                text_sha256=hashlib.sha256(fact.text.encode()).hexdigest(),
            )
            manifest_items.append(entry)
    proposals = Proposal.objects.filter(workspace=workspace).select_related("project").order_by("seq")
    files["proposals.jsonl"] = "".join(
        json.dumps(
            {
                "seq": p.seq,
                "project": p.project.slug,
                "actor": p.actor,
                "zone": p.zone,
                "request_id": p.request_id,
                "op": p.op,
                "target": p.target,
                "text": p.text,
                "evidence": p.evidence,
                "status": p.status,
                "reason": p.reason,
                "taint": p.taint_label,
                "attestation": p.attestation,
                "created_at": p.created_at.isoformat(),
            },
            ensure_ascii=False,
        )
        + "\n"
        for p in proposals.iterator()
    ).encode()
    exported_at = datetime.now(UTC).isoformat(timespec="seconds")
    readme = EXPORT_README.format(name=workspace.name, slug=workspace.slug, exported_at=exported_at)
    files["README.md"] = readme.encode()
    manifest = {
        "workspace": workspace.slug,
        "exported_at": exported_at,
        "files": {name: hashlib.sha256(data).hexdigest() for name, data in sorted(files.items())},
        "items": manifest_items,
    }
    files["manifest.json"] = json.dumps(manifest, indent=2, ensure_ascii=False).encode()

    if output.suffix == ".zip":
        output.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(output, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name, data in files.items():
                archive.writestr(f"{workspace.slug}/{name}", data)
        return output
    for name, data in files.items():
        target = output / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return output
