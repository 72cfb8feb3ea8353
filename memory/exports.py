"""Export of a workspace: readable Markdown per project, the import format, and a manifest.

An export opens without Unforgetter: every item with its provenance and taint, every proposal
with its attestation, and the SHA-256 of every file.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory.models import Fact, Kind, Proposal, State
from workspaces.models import AuditEvent, Project
from workspaces.services import audit_record, workspace_exports_dir

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
        "taint": fact.taint_label,
    }


def workspace_export(*, workspace: Any, output: Path, progress: Callable[[int], None] | None = None) -> Path:
    """Write a readable, self-describing export of a workspace to a directory or a .zip file.

    `progress` hears how many items are written so far, after each project.
    """
    files: dict[str, bytes] = {}
    done = 0
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
                supersedes=fact.supersedes.ref if fact.supersedes else None,
                text_sha256=hashlib.sha256(fact.text.encode()).hexdigest(),
            )
            manifest_items.append(entry)
        done += len(facts)
        if progress:
            progress(done)
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


def workspace_export_kept(*, workspace: Any, user: Any = None) -> Path:
    """An export the server makes and keeps (a console download), audited.

    A .zip in the workspace's exports folder; deleting the workspace purges it after the
    retention window.
    """
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    output = workspace_exports_dir(workspace.slug) / f"{workspace.slug}-{stamp}.zip"
    path = workspace_export(workspace=workspace, output=output)
    audit_record(
        workspace=workspace,
        action=AuditEvent.Action.EXPORT,
        actor=getattr(user, "username", "") or "operator",
        user=user,
        target=path.name,
    )
    return path
