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

ITEM_KEYS = frozenset(
    {"kind", "text", "state", "data_class", "ref", "id", "source", "actor", "date", "taint", "supersedes"}
)
# The optional keys whose values, when given, must be strings (checked, and named, in this order).
_TEXT_KEYS = ("state", "data_class", "source", "actor", "taint")


def item_from_json(
    item: Any, where: str, *, default_source: str = "", extra_keys: frozenset[str] = frozenset()
) -> Incoming:
    """One item object of the import format, checked for shape.

    Written for an import's 100,000 calls: each key is looked up once, and the checks that find
    nothing wrong in a good item (most of them) are one test each; a failing one is then looked
    at again to name the first thing wrong, in the order the checks are listed.
    """
    if not isinstance(item, dict):
        raise bad(where, "each item must be a JSON object.")
    if not item.keys() <= ITEM_KEYS:
        unknown = set(item) - ITEM_KEYS - extra_keys
        if unknown:
            raise bad(where, f"unknown key {sorted(unknown)[0]!r}.")
    get = item.get
    text, kind = get("text"), get("kind", "fact")
    if not isinstance(text, str) or not isinstance(kind, str):
        raise bad(where, "'text' and 'kind' must be strings.")
    state, data_class = get("state"), get("data_class")
    source, actor, taint = get("source"), get("actor"), get("taint")
    for value in (state, data_class, source, actor, taint):
        if value is not None and not isinstance(value, str):
            for key in _TEXT_KEYS:  # name the first one wrong
                if item.get(key) is not None:
                    text_field(item[key], where, key)
    ref = get("ref")
    ref = foreign_id(ref, where, field="ref") if ref is not None else None
    origin = get("id")
    origin = foreign_id(origin, where) if origin is not None else ""
    source_date = iso_date(get("date"), where)
    supersedes = get("supersedes")
    return Incoming(
        where,
        kind or "fact",
        text,
        state,
        data_class,
        source or default_source,
        source_date,
        actor or "",
        taint,
        ref,
        origin,
        foreign_id(supersedes, where, field="supersedes") if supersedes is not None else None,
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
