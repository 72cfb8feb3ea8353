"""Readers of the memory formats people already have, each yielding `Incoming` items.

| format | what | identity |
|---|---|---|
| `jsonl` | Unforgetter's import format, an export's `items.jsonl` | `ref` / `id` |
| `export` | an Unforgetter export, directory or .zip (history, supersession, taint) | `ref` |
| `markdown` | CLAUDE.md / AGENTS.md-style notes | the text |
| `mcp-memory` | the official MCP memory server's knowledge graph (JSONL) | entity name, relation |
| `basic-memory` | a basic-memory folder of Markdown notes | permalink |
| `mem0` | mem0 `get_all()` JSON, OpenMemory's backup (`memories.json` or its zip) | memory id |
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

from memory.readers.base import Incoming
from memory.readers.basic_memory import basic_memory_items
from memory.readers.export import export_items, is_export
from memory.readers.jsonl import jsonl_items
from memory.readers.knowledge_graph import knowledge_graph_items, looks_like_knowledge_graph
from memory.readers.markdown import kind_for_heading, markdown_items
from memory.readers.mem0 import mem0_items
from workspaces.exceptions import InvalidRequest

FORMATS = ("jsonl", "export", "markdown", "mcp-memory", "basic-memory", "mem0")

__all__ = ["FORMATS", "Incoming", "detect_format", "kind_for_heading", "read_items"]


def detect_format(path: Path) -> str:
    """The format of a file or folder, from its shape: what `--format` would say."""
    if is_export(path):
        return "export"
    if path.is_dir():
        return "basic-memory"
    suffix = path.suffix.lower()
    if suffix in (".md", ".markdown"):
        return "markdown"
    if suffix in (".json", ".zip"):
        return "mem0"
    with path.open(encoding="utf-8", errors="replace") as stream:
        first = next((line for line in stream if line.strip()), "")
    return "mcp-memory" if looks_like_knowledge_graph(first) else "jsonl"


def read_items(
    path: Path, *, fmt: str, project: str, source_project: str | None = None
) -> Iterator[Incoming]:
    """Every item of `path` in format `fmt`, streamed; a bad input raises InvalidRequest naming it."""
    streamed: dict[str, Callable[..., Iterator[Incoming]]] = {
        "jsonl": jsonl_items,
        "markdown": markdown_items,
        "mcp-memory": knowledge_graph_items,
    }
    if fmt in (*streamed, "mem0") and not path.is_file():
        raise InvalidRequest(f"A {fmt} import takes a file; {path.name} is not one.")
    if fmt in streamed:
        with ExitStack() as stack:
            try:
                stream = stack.enter_context(path.open(encoding="utf-8"))
                yield from streamed[fmt](stream, name=path.name)
            except UnicodeDecodeError:
                raise InvalidRequest(f"{path.name} is not UTF-8 text.") from None
        return
    if fmt == "export":
        yield from export_items(path, project=project, source_project=source_project)
    elif fmt == "basic-memory":
        if not path.is_dir():
            raise InvalidRequest("A basic-memory import takes a folder of Markdown notes.")
        yield from basic_memory_items(path)
    elif fmt == "mem0":
        yield from mem0_items(path)
    else:
        raise InvalidRequest(f"Unknown format {fmt!r}; use one of {', '.join(FORMATS)}.")
