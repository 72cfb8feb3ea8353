"""Unforgetter's JSONL import format, one item per line (also an export's `items.jsonl`).

`{"kind", "text", "state"?, "data_class"?, "ref"?, "id"?, "source"?, "actor"?, "date"?, "taint"?,
"supersedes"?}`. A `ref` in Unforgetter's own form is kept when it is free and remapped when it
clashes; any other `ref`, or an `id`, is a foreign id (kept as the item's origin).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TextIO

from memory.readers.base import Incoming, bad, foreign_id, iso_date, text_field

ITEM_KEYS = {
    "kind",
    "text",
    "state",
    "data_class",
    "ref",
    "id",
    "source",
    "actor",
    "date",
    "taint",
    "supersedes",
}


def item_from_json(
    item: Any, where: str, *, default_source: str = "", extra_keys: frozenset[str] = frozenset()
) -> Incoming:
    """One item object of the import format, checked for shape."""
    if not isinstance(item, dict):
        raise bad(where, "each item must be a JSON object.")
    unknown = set(item) - ITEM_KEYS - extra_keys
    if unknown:
        raise bad(where, f"unknown key {sorted(unknown)[0]!r}.")
    if not isinstance(item.get("text"), str) or not isinstance(item.get("kind", "fact"), str):
        raise bad(where, "'text' and 'kind' must be strings.")
    for key in ("state", "data_class", "source", "actor", "taint"):
        if item.get(key) is not None:
            text_field(item[key], where, key)
    ref = foreign_id(item["ref"], where, field="ref") if item.get("ref") is not None else None
    origin = foreign_id(item["id"], where) if item.get("id") is not None else ""
    supersedes = item.get("supersedes")
    return Incoming(
        where=where,
        kind=item.get("kind") or "fact",
        text=item["text"],
        state=item.get("state"),
        data_class=item.get("data_class"),
        source=item.get("source") or default_source,
        source_date=iso_date(item.get("date"), where),
        actor=item.get("actor") or "",
        taint=item.get("taint"),
        ref=ref,
        origin=origin,
        supersedes=foreign_id(supersedes, where, field="supersedes") if supersedes is not None else None,
    )


def jsonl_items(stream: TextIO, *, name: str) -> Iterator[Incoming]:
    for number, raw in enumerate(stream, start=1):
        if not raw.strip():
            continue
        where = f"line {number}"
        try:
            item = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise bad(where, f"not valid JSON ({exc.msg}).") from None
        if not isinstance(item, dict):
            raise bad(where, "each line must be a JSON object.")
        yield item_from_json(item, where, default_source=name)
