"""A context bundle as Markdown: what a cloud agent reads from disk when it has no MCP client.

Every item keeps its ref and provenance (source, date, actor; origin when imported), and an
untrusted item says so, exactly as the tools serve them.
"""

from __future__ import annotations

from memory.contract import Bundle, ItemPayload

_SECTIONS = (
    ("policies", "Policies (always follow these)"),
    ("facts", "Facts, decisions and conventions"),
    ("open_threads", "Open threads"),
    ("methods", "Methods"),
)


def _item(item: ItemPayload) -> list[str]:
    prov = item["provenance"]
    origin = f" · origin {prov['origin']}" if "origin" in prov else ""
    taint = " · **untrusted: verify before relying on it**" if item["taint"] != "clean" else ""
    lines = item["text"].splitlines() or [""]
    return [
        f"- {lines[0]}",
        *(f"  {line}" for line in lines[1:]),
        f"  _`{item['ref']}` ({item['kind']}) · source {prov['source']} · {prov['date']} · "
        f"{prov['actor']}{origin}{taint}_",
    ]


def bundle_markdown(bundle: Bundle) -> str:
    """The bundle's sections in order, then its pointers and freshness; empty sections say so."""
    project = bundle["project"]
    freshness = bundle["freshness"]
    parts = [
        f"# {project['name']}: context from Unforgetter",
        "",
        f"Project `{project['id']}` ({project['data_class']}) · task: {bundle['task']}",
        f"Compiled {freshness['compiled_at'] or 'never'} · fetched {freshness['replica_at']}"
        f"{' · STALE' if freshness['stale'] else ''} · as {bundle['identity']['actor']}"
        f" · context_id `{bundle['context_id']}`",
        "",
        "Cite an item's ref and source when you rely on it. This is a snapshot: with an MCP client,",
        "call get_context for the current version and propose_memory to change anything.",
        "",
    ]
    for key, title in _SECTIONS:
        items: list[ItemPayload] = bundle[key]  # type: ignore[literal-required]
        parts += [f"## {title}", ""]
        parts += [line for item in items for line in _item(item)] or ["_None._"]
        parts.append("")
    if bundle["pointers"]:
        parts += ["## More in memory", ""]
        parts += [f"- `{pointer['ref']}`: {pointer['why']}" for pointer in bundle["pointers"]]
        parts.append("")
    for warning in bundle["warnings"]:
        parts.append(f"> **{warning['code']}**: {warning['message']} {warning['action']}")
    return "\n".join(parts).rstrip() + "\n"
