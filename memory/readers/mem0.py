"""mem0 and OpenMemory exports: memories with their own ids.

Accepted: mem0's `get_all()` output (`{"results": [{"id", "memory", "created_at", ...}]}` or a
bare list), OpenMemory's backup `memories.json` (`{"memories": [{"id", "content", "state", ...}]}`),
or OpenMemory's backup zip holding it. Archived memories come in retracted; deleted ones are left out.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memory.models import Kind, State
from memory.readers.base import Incoming, bad, foreign_id, iso_date, text_field
from memory.readers.markdown import kind_for_heading

_STATES = {"active": State.ACTIVE, "paused": State.ACTIVE, "archived": State.RETRACTED}


def _records(data: Any, name: str) -> list[Any]:
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for key in ("results", "memories"):
            if isinstance(data.get(key), list):
                return list(data[key])
    raise bad(name, "expected a list of memories, or an object with 'results' or 'memories'.")


def _load(path: Path) -> Any:
    try:
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as archive:
                member = next(
                    (n for n in archive.namelist() if n.rsplit("/", 1)[-1] == "memories.json"), None
                )
                if member is None:
                    raise bad(path.name, "no memories.json in the archive.")
                return json.loads(archive.read(member))
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise bad(path.name, f"not valid JSON ({exc}).") from None
    except zipfile.BadZipFile:
        raise bad(path.name, "not a readable zip archive.") from None


def _kind(categories: Any) -> Kind:
    for category in categories if isinstance(categories, list) else []:
        kind = kind_for_heading(str(category))
        if kind != Kind.FACT:
            return kind
    return Kind.FACT


def mem0_items(path: Path) -> Iterator[Incoming]:
    for number, record in enumerate(_records(_load(path), path.name), start=1):
        where = f"memory {number}"
        if not isinstance(record, dict):
            raise bad(where, "each memory must be a JSON object.")
        if "id" not in record:
            raise bad(where, "a memory needs its 'id'.")
        state = str(record.get("state") or "active")
        if state == "deleted":
            continue
        if state not in _STATES:
            raise bad(where, f"state {state!r} is not one of active, paused, archived, deleted.")
        text = record.get("memory", record.get("content"))
        actor = record.get("user_id") or ""
        yield Incoming(
            where=where,
            kind=_kind(record.get("categories")),
            text=text_field(text, where, "memory"),
            state=_STATES[state],
            source=f"mem0:{path.name}",
            source_date=iso_date(record.get("created_at"), where),
            actor=f"mem0:{actor}" if isinstance(actor, str) and actor else "",
            origin=foreign_id(record["id"], where),
        )
