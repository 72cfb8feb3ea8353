"""The official MCP reference memory server, measured on the same facts and queries as Unforgetter.

`@modelcontextprotocol/server-memory` keeps a knowledge graph in one JSONL file (MEMORY_FILE_PATH)
and answers `search_nodes` by reading the file and scanning every entity. It is loaded here with
the benchmark's facts (one entity per item: its kind as entityType, its text as the observation),
written straight into its file, then driven over stdio by the official `mcp` SDK client, one call
after another on one session, as bench/run.py drives Unforgetter over HTTP.

get_context has no counterpart there: its closest call for a task is `search_nodes` with the task,
and search_memory's is `search_nodes` with the query. Needs `npx` (Node.js) on the PATH.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

PACKAGE = "@modelcontextprotocol/server-memory@2026.8.31"


def write_graph(path: Path, items: Iterable[dict[str, Any]]) -> int:
    """The reference server's memory file holding `items` as entities; returns how many."""
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for index, item in enumerate(items):
            entity = {
                "type": "entity",
                "name": f"item-{index}",
                "entityType": item["kind"],
                "observations": [item["text"]],
            }
            out.write(json.dumps(entity) + "\n")
            count += 1
    return count


async def _timed(client: Client, queries: Sequence[str]) -> list[float]:
    samples = []
    for query in queries:
        started = time.perf_counter()
        result = await client.call_tool("search_nodes", {"query": query})
        samples.append(time.perf_counter() - started)
        if result.is_error:
            raise RuntimeError(f"search_nodes failed: {result.content}")
    return samples


async def _measure(
    graph: Path, warmup: Sequence[str], runs: dict[str, Sequence[str]]
) -> dict[str, list[float]]:
    params = StdioServerParameters(
        command="npx", args=["-y", PACKAGE], env={**os.environ, "MEMORY_FILE_PATH": str(graph)}
    )
    async with Client(params) as client:
        await _timed(client, warmup)
        return {name: await _timed(client, queries) for name, queries in runs.items()}


def available() -> bool:
    return shutil.which("npx") is not None


def measure(graph: Path, warmup: Sequence[str], runs: dict[str, Sequence[str]]) -> dict[str, list[float]]:
    """Round-trip seconds of `search_nodes` for each named list of queries, after `warmup`."""
    return asyncio.run(_measure(graph, warmup, runs))
