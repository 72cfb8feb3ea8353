"""The official MCP memory server's knowledge graph (`memory.jsonl` of server-memory).

One JSON object per line: `{"type": "entity", "name", "entityType", "observations": [...]}` or
`{"type": "relation", "from", "to", "relationType"}`. An entity becomes one fact holding its
observations, identified by its name; a relation becomes one fact, identified by its three parts,
so a later import of a grown entity supersedes the earlier version.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TextIO

from memory.models import Kind
from memory.readers.base import Incoming, bad, foreign_id, text_field


def _entity(line: dict[str, Any], where: str, name: str) -> Incoming:
    entity = text_field(line.get("name"), where, "name").strip()
    entity_type = text_field(line.get("entityType", ""), where, "entityType").strip()
    observations = line.get("observations", [])
    if not isinstance(observations, list) or not all(isinstance(o, str) for o in observations):
        raise bad(where, "'observations' must be a list of strings.")
    heading = f"{entity} ({entity_type})" if entity_type else entity
    text = "\n".join([heading, *(f"- {o.strip()}" for o in observations if o.strip())])
    return Incoming(
        where=where, kind=Kind.FACT, text=text, source=name, origin=foreign_id(f"entity:{entity}", where)
    )


def _relation(line: dict[str, Any], where: str, name: str) -> Incoming:
    parts = [text_field(line.get(key), where, key).strip() for key in ("from", "relationType", "to")]
    if not all(parts):
        raise bad(where, "a relation needs 'from', 'relationType' and 'to'.")
    return Incoming(
        where=where,
        kind=Kind.FACT,
        text=" ".join(parts),
        source=name,
        origin=foreign_id("relation:" + "|".join(parts), where),
    )


def knowledge_graph_items(stream: TextIO, *, name: str) -> Iterator[Incoming]:
    for number, raw in enumerate(stream, start=1):
        if not raw.strip():
            continue
        where = f"line {number}"
        try:
            line = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise bad(where, f"not valid JSON ({exc.msg}).") from None
        if not isinstance(line, dict) or line.get("type") not in ("entity", "relation"):
            raise bad(where, "each line must be an object with type 'entity' or 'relation'.")
        yield _entity(line, where, name) if line["type"] == "entity" else _relation(line, where, name)


def looks_like_knowledge_graph(first_line: str) -> bool:
    """Whether a JSONL file's first line is a knowledge-graph entity or relation."""
    try:
        line = json.loads(first_line)
    except json.JSONDecodeError:
        return False
    return isinstance(line, dict) and line.get("type") in ("entity", "relation") and "text" not in line
