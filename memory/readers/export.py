"""An Unforgetter export (directory or .zip from `export_workspace`), restored in full.

Its `manifest.json` lists every item of every project, history included: state, supersession,
provenance and taint. One project's items are read; each text is checked against its SHA-256,
so a damaged copy is refused rather than half restored.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memory.readers.base import Incoming, bad
from memory.readers.jsonl import item_from_json

_MANIFEST_KEYS = frozenset({"project", "text_sha256"})


def _manifest(path: Path) -> dict[str, Any]:
    try:
        if path.is_dir():
            return dict(json.loads((path / "manifest.json").read_text(encoding="utf-8")))
        with zipfile.ZipFile(path) as archive:
            member = next(n for n in archive.namelist() if n.rsplit("/", 1)[-1] == "manifest.json")
            return dict(json.loads(archive.read(member)))
    except (OSError, StopIteration, KeyError, zipfile.BadZipFile):
        raise bad(path.name, "not an Unforgetter export (no readable manifest.json).") from None
    except (json.JSONDecodeError, TypeError, ValueError):
        raise bad(path.name, "manifest.json is not a JSON object.") from None


def is_export(path: Path) -> bool:
    if path.is_dir():
        return (path / "manifest.json").is_file()
    if path.suffix == ".zip" and zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            return any(n.rsplit("/", 1)[-1] == "manifest.json" for n in archive.namelist())
    return False


def export_items(path: Path, *, project: str, source_project: str | None) -> Iterator[Incoming]:
    items = _manifest(path).get("items")
    if not isinstance(items, list):
        raise bad("manifest.json", "'items' must be a list.")
    projects = sorted({str(item.get("project")) for item in items if isinstance(item, dict)})
    chosen = source_project or (project if project in projects else None)
    if chosen is None and len(projects) == 1:
        chosen = projects[0]
    if chosen not in projects:
        raise bad(
            "manifest.json",
            f"choose a project of the export with --source-project ({', '.join(projects) or 'none'}).",
        )
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict) or item.get("project") != chosen:
            continue
        where = f"manifest item {number}"
        incoming = item_from_json(item, where, extra_keys=_MANIFEST_KEYS)
        digest = item.get("text_sha256")
        if digest is not None and hashlib.sha256(incoming.text.encode()).hexdigest() != digest:
            raise bad(where, "its text does not match its SHA-256 (a damaged copy).")
        if not incoming.source and incoming.ref:
            # Provenance keeps pointing at the item it was, even when its ref has to change.
            incoming = incoming._replace(source=f"unforgetter:{incoming.ref}")
        yield incoming
