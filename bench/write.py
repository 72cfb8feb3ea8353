"""Write-path benchmark: proposals accepted by propose_memory, and consolidated per worker.

    python bench/write.py                       # starts its own server on SQLite and measures
    DATABASE_URL=postgres://... python bench/write.py --port 8103
    python bench/write.py --workers 1           # one uvicorn worker (default: one per CPU, as run.py)

On its own it measures an empty database; bench/run.py calls `run` against its seeded one (1M items).

As a library (bench/run.py): `run(base_url, token, workspace_slug, project_slug)` returns rows of
(metric, measured, budget). It needs Django configured on the server's database (it seeds and
consolidates in this process); it configures it from the environment if nobody has.

- propose_memory accepted/s: 8 concurrent clients, each one kept-alive HTTP connection, posting
  JSON-RPC tools/call for a fixed number of distinct proposals; only non-error, non-duplicate
  results count.
- consolidation/s per worker: proposals seeded through proposal_submit into a fresh project, then
  consolidated by one worker in this process. Only batches this worker claimed count, timed from
  claim to commit; a consolidator elsewhere (the server's embedded worker) taking a batch
  meanwhile does not inflate the rate.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PROPOSE_BUDGET = 300.0
CONSOLIDATE_BUDGET = 1_000.0
CLIENTS = 8


def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "unforgetter.settings")
    import django
    from django.apps import apps

    if not apps.ready:
        django.setup()


async def _propose_client(base_url: str, token: str, project: str, count: int, tag: str) -> tuple[int, int]:
    import httpx

    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    accepted = failed = 0
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=30) as client:
        for i in range(count):
            arguments = {
                "project_id": project,
                "request_id": f"bench-{tag}-{i}",
                "change": {
                    "op": "add_fact",
                    "text": f"Bench note {tag}-{i}: queue consumers deduplicate by message id.",
                },
                "evidence": [{"ref": f"bench/{tag}/{i}.md", "trust": "trusted"}],
            }
            body = {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": "propose_memory", "arguments": arguments},
            }
            response = await client.post("/mcp", json=body)
            result = response.json().get("result", {}) if response.status_code == 200 else {}
            content = result.get("structuredContent") or {}
            if result.get("isError") or "proposal_id" not in content or content.get("duplicate_request"):
                failed += 1
            else:
                accepted += 1
    return accepted, failed


async def _propose_all(base_url: str, token: str, project: str, per_client: int) -> tuple[int, int, float]:
    run_tag = uuid.uuid4().hex[:8]
    # A warm-up call per client opens its connection and warms the server's caches.
    await asyncio.gather(
        *(_propose_client(base_url, token, project, 1, f"{run_tag}-warm{c}") for c in range(CLIENTS))
    )
    started = time.perf_counter()
    results = await asyncio.gather(
        *(_propose_client(base_url, token, project, per_client, f"{run_tag}-{c}") for c in range(CLIENTS))
    )
    elapsed = time.perf_counter() - started
    return sum(a for a, _ in results), sum(f for _, f in results), elapsed


def measure_propose(base_url: str, token: str, project_slug: str, per_client: int = 150) -> tuple[float, int]:
    accepted, failed, elapsed = asyncio.run(_propose_all(base_url, token, project_slug, per_client))
    return accepted / elapsed, failed


def measure_consolidation(workspace_slug: str, proposals: int = 3_000) -> float:
    """Seed pending proposals in a fresh project through the service; time one worker on them."""
    _django()
    from memory.services import proposal_consolidate, proposal_submit
    from workspaces.models import Connection, Workspace
    from workspaces.selectors import agent_scope
    from workspaces.services import project_create, token_issue

    workspace = Workspace.objects.get(slug=workspace_slug)
    project = project_create(workspace=workspace, slug=f"bench-{uuid.uuid4().hex[:8]}")
    issued = token_issue(
        workspace=workspace,
        actor="bench-consolidation",
        zone="claude",
        role=Connection.Role.CONTRIBUTOR,
        projects=[project.slug],
    )
    for i in range(proposals):
        op = "open_thread" if i % 10 == 0 else "add_fact"
        proposal_submit(
            scope=agent_scope(issued.connection),
            project_id=project.slug,
            request_id=f"seed-{project.slug}-{i}",
            op=op,
            text=f"Service {i} exposes /healthz and /metrics; alerts page the platform on-call.",
            evidence=[{"ref": f"runbooks/{i}.md", "trust": "trusted" if i % 7 else "untrusted"}],
        )
    claimed = 0
    busy_time = 0.0
    while True:
        started = time.perf_counter()
        report = proposal_consolidate(workspace_id=workspace.pk)
        if report.busy:
            time.sleep(0.001)
            continue
        if report.claimed == 0:
            break
        busy_time += time.perf_counter() - started
        claimed += report.claimed
    return claimed / busy_time if busy_time else 0.0


def run(base_url: str, token: str, workspace_slug: str, project_slug: str) -> list[tuple[str, str, str]]:
    """Rows of (metric, measured, budget) for the write path."""
    rate, failed = measure_propose(base_url, token, project_slug)
    rows = [
        (
            f"propose_memory accepted ({CLIENTS} kept-alive clients)",
            f"{rate:,.0f}/s" + (f" ({failed} refused)" if failed else ""),
            f">= {PROPOSE_BUDGET:,.0f}/s",
        )
    ]
    consolidated = measure_consolidation(workspace_slug)
    rows.append(
        ("consolidation per worker", f"{consolidated:,.0f} proposals/s", f">= {CONSOLIDATE_BUDGET:,.0f}/s")
    )
    return rows


def _standalone(port: int, workers: int) -> list[tuple[str, str, str]]:
    """Migrate a database, create a workspace and a token, serve it with uvicorn, measure."""
    if not os.environ.get("DATABASE_URL"):
        path = Path(tempfile.mkdtemp(prefix="unforgetter-bench-")) / "bench.sqlite3"
        os.environ["DATABASE_URL"] = f"sqlite:///{path}"
    os.environ.setdefault("UNFORGETTER_TESTING", "1")  # a throwaway database needs no real SECRET_KEY
    # The benchmark measures speed with one token at full tilt, not the per-credential limits.
    os.environ.setdefault("CREDENTIAL_CALLS_PER_SECOND", "0")
    os.environ.setdefault("CREDENTIAL_CONCURRENCY", "0")
    os.environ.setdefault("CREDENTIAL_IN_FLIGHT", "0")
    os.environ["PUBLIC_URL"] = f"http://127.0.0.1:{port}"
    env = dict(os.environ)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True
    )
    _django()
    from memory.services import workspace_open
    from workspaces.models import Connection
    from workspaces.services import project_create, token_issue

    slug = f"bench-{uuid.uuid4().hex[:6]}"
    workspace = workspace_open(slug=slug)
    project_create(workspace=workspace, slug="platform")
    token = token_issue(
        workspace=workspace, actor="bench", zone="claude", role=Connection.Role.CONTRIBUTOR
    ).token
    server = subprocess.Popen(
        [
            *(sys.executable, "-m", "unforgetter.serve", "--host", "127.0.0.1", "--port", str(port)),
            *("--workers", str(workers), "--log-level", "warning"),
        ],
        cwd=ROOT,
        env=env,
    )
    try:
        _wait_for(f"http://127.0.0.1:{port}/healthz", server)
        return run(f"http://127.0.0.1:{port}", token, slug, "platform")
    finally:
        server.terminate()
        server.wait(15)


def _wait_for(url: str, server: subprocess.Popen[Any]) -> None:
    import httpx

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit("the server exited before it served")
        try:
            if httpx.get(url, timeout=1).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"no answer from {url}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--port", type=int, default=8103, help="Port for the server this script starts.")
    parser.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="uvicorn workers (default: one per CPU)"
    )
    options = parser.parse_args(argv)
    rows = _standalone(options.port, options.workers)
    width = max(len(r[0]) for r in rows)
    for metric, measured, budget in rows:
        print(f"{metric:<{width}}  {measured:>22}  budget {budget}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
