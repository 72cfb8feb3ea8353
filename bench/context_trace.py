"""Where a new task's get_context time goes, in the server: `bench/context_trace.py --database-url URL`.

Run against a database that `bench/quality.py --items N --database-url URL` seeded and embedded
(the generated engineering corpus, `bench/full_vectors.py` leaves one), or with `--corpus run` one
`bench/run.py --keep` seeded (bench/asked.py). It serves that database with one uvicorn worker
whose app is this module's `application`: the product's ASGI app, with each stage of a get_context
call (STAGES: the credential, the project's statement, the word ranking, the read-ahead, the wait
for the query's vector, the vector top-k, the second read, the bundle's filling, the response...)
wrapped to note when it started and ended, in milliseconds from the request's arrival. One
kept-alive client then asks `--tasks` new tasks (English, or run.py's generated ones) never asked
before, one at a time (after `--warm` others), and the table gives, per stage, the median start,
end and duration over those calls, in the order they start, beside the client's p50 and p95, and
the CPU time the stage's thread spent in it (`time.thread_time`): where the two differ, the stage
waited (for the vector, the database, or the GIL held by another thread).

The stages are read on one request at a time (the client waits for each answer), so a stage's
times are its own request's; only a call's after-answer work (its audit record, the bundle
cache) may still run once the client has sent the next call, as it does in bench/run.py.
Wrapping adds a few microseconds a stage, so the client's figures read a little above
`bench/full_vectors.py`'s. What ran before a stage started is the gap before
its start: the query's embedding overlaps the request thread's statements and word ranking until
the vector wait, and everything after the wait is on the critical path. Use it to see what a
change moves, beside an alternated A/B of two trees for the figure itself.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import quality
import run
from asgiref.typing import ASGIReceiveCallable, ASGISendCallable, ASGISendEvent, Scope
from asked import CORPORA, asked
from corpus import TOOL_PHRASINGS

if TYPE_CHECKING:
    from unforgetter.asgi import Router

# (module, attribute or Class.method, label): what is timed, each where its callers look it up.
STAGES: tuple[tuple[str, str, str], ...] = (
    ("mcpbridge.direct", "embed_ahead", "query embedding started"),
    ("mcpbridge.direct", "_verified_call", "request thread"),
    ("mcpbridge.direct", "authenticated_here", "credential"),
    ("memory.embeddings.shared", "SharedEmbedder.embed", "shared embedder call"),
    ("memory.context.serve", "project_for_context_beside", "project statement"),
    ("memory.context.serve", "compile_bundle", "compile_bundle"),
    ("memory.context.compile", "_ranked", "task-specific part"),
    ("memory.context.compile", "hybrid_rank", "hybrid_rank"),
    ("memory.lexical_index", "LexicalIndex.rank", "word ranking"),
    ("memory.context.compile", "agent_rows", "rows read"),
    ("memory.embeddings", "_QueryVectors.get", "vector wait"),
    ("memory.embeddings.index", "VectorIndex.nearest", "vector top-k"),
    ("memory.lexical_index", "LexicalIndex.admitted", "meaning's picks admitted"),
    ("memory.retrieval", "fuse", "fusion"),
    ("memory.embeddings.index", "VectorIndex.vectors_of", "vectors of the rows"),
    ("memory.context.compile", "_fill", "sections filled"),
    ("memory.context.duplicates", "_alike", "near-duplicate pairs"),
    ("memory.context.serve", "context_request_record", "audit record"),
    ("memory.context.serve", "_serve", "bundle served"),
    ("mcpbridge.results", "_text", "result's JSON"),
    ("mcpbridge.results", "modern_response", "response encoded"),
    # search_memory's own (`--tool search_memory`)
    ("memory.selectors", "project_for_context_beside", "project statement"),
    ("memory.selectors", "search_for_agent", "search_for_agent"),
    ("memory.selectors", "hybrid_rank", "hybrid_rank"),
    ("memory.retrieval", "_Checked.current", "candidates checked"),
    ("memory.retrieval", "fuse_scores", "fusion by scores"),
    ("memory.selectors", "excerpt", "excerpt"),
)


# A stage's label, start and end (ms from its request's arrival) and its thread's CPU time (ms;
# None for a mark).
Event = tuple[str, float, float, float | None]
_events: list[list[Event]] = []
_current: list[Event] | None = None
_arrived = 0.0


def _note(label: str, started: float, ended: float, cpu: float) -> None:
    if _current is not None:
        _noted(_current, _arrived, label, started, ended, cpu)


def _noted(
    events: list[Event], arrived: float, label: str, started: float, ended: float, cpu: float | None = None
) -> None:
    events.append(
        (label, (started - arrived) * 1000, (ended - arrived) * 1000, None if cpu is None else cpu * 1000)
    )


def _timed(label: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            _note(label, started, time.perf_counter(), time.thread_time() - cpu)

    return timed


def stage_targets() -> list[tuple[object, str, str]]:
    """Each stage's owner (module or class), attribute and label; an error names a stage gone."""
    targets = []
    for module_name, attribute, label in STAGES:
        owner: object = importlib.import_module(module_name)
        *classes, name = attribute.split(".")
        for class_name in classes:
            owner = getattr(owner, class_name)
        if not callable(getattr(owner, name, None)):
            raise LookupError(f"{module_name}.{attribute} ({label}) is not there to trace")
        targets.append((owner, name, label))
    return targets


def _dump(*_: object) -> None:
    Path(os.environ["TRACE_OUT"]).write_text(json.dumps(_events))


_app: Router | None = None


async def application(scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
    """The product's ASGI app, each HTTP request's stages noted (the server side of this tool)."""
    global _app, _current, _arrived
    if _app is None:
        from unforgetter.asgi import application as product  # Django's settings first

        for owner, name, label in stage_targets():
            setattr(owner, name, _timed(label, getattr(owner, name)))
        signal.signal(signal.SIGUSR1, _dump)
        _app = product
    if scope["type"] != "http":
        await _app(scope, receive, send)
        return
    _arrived, _current = time.perf_counter(), []
    arrived, events = _arrived, _current

    def mark(label: str) -> None:  # this request's, even once the next one has arrived
        now = time.perf_counter()
        _noted(events, arrived, label, now, now)

    async def sent(message: ASGISendEvent) -> None:
        if message["type"] == "http.response.body":
            mark("response sent")
        await send(message)

    try:
        await _app(scope, receive, sent)
    finally:
        mark("request done (after-answer work included)")
        _events.append(events)


Row = tuple[str, int, float, float, float, float | None]


def _table(requests: list[list[Event]]) -> list[Row]:
    """Per stage (a stage run twice in a request: its second run apart), the calls that ran it and
    the median start, end, duration and CPU time (None for a mark), ordered by start."""
    runs: dict[str, list[tuple[float, float, float | None]]] = {}
    for request in requests:
        seen: dict[str, int] = {}
        for label, started, ended, cpu in request:
            seen[label] = seen.get(label, 0) + 1
            key = label if seen[label] == 1 else f"{label} ({seen[label]})"
            runs.setdefault(key, []).append((started, ended, cpu))
    rows = []
    for key, times in runs.items():
        cpus = [c for _, _, c in times if c is not None]
        rows.append(
            (
                key,
                len(times),
                statistics.median(s for s, _, _ in times),
                statistics.median(e for _, e, _ in times),
                statistics.median(e - s for s, e, _ in times),
                statistics.median(cpus) if cpus else None,
            )
        )
    return sorted(rows, key=lambda row: row[2])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--database-url", required=True, help="a database bench/quality.py seeded and embedded"
    )
    parser.add_argument("--items", type=int, default=100_000, help="the corpus size quality.py seeded")
    parser.add_argument("--tasks", type=int, default=300, help="new tasks measured")
    parser.add_argument("--warm", type=int, default=40, help="new tasks asked first, not measured")
    parser.add_argument(
        "--tool",
        choices=TOOL_PHRASINGS,
        default="get_context",
        help="get_context for new English tasks, or search_memory for new questions",
    )
    parser.add_argument(
        "--corpus",
        choices=CORPORA,
        default="quality",
        help="the database's seed: bench/quality.py's corpus, or bench/run.py's (its generated "
        "sentences, asked of its first project as run.py asks them)",
    )
    options = parser.parse_args()
    quality._django(options.database_url)
    stage_targets()  # a stage renamed fails here, before the server starts
    argument, phrasing = TOOL_PHRASINGS[options.tool]
    texts, project, workspace, language = asked(
        options.corpus, options.tool, options.warm + options.tasks, items=options.items
    )
    calls = [{"project_id": project, argument: text} for text in texts]
    token = run.manage(
        options.database_url, "issue_token", workspace, "--actor", "bench@trace", "--zone", "claude"
    )
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "events.json"
        port = run.free_port()
        env = run.child_env(options.database_url, f"http://127.0.0.1:{port}")
        env["TRACE_OUT"] = str(out)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).parent), env.get("PYTHONPATH")]))
        command = [str(Path(run.PYTHON).parent / "uvicorn"), "context_trace:application", "--port", str(port)]
        command += ["--host", "127.0.0.1", "--lifespan", "on", "--no-access-log", "--log-level", "warning"]
        server = subprocess.Popen(command, cwd=run.ROOT, env=env)
        try:
            _wait_until_up(f"http://127.0.0.1:{port}", server)
            client = run.McpHttp(f"http://127.0.0.1:{port}", token.strip())
            for arguments in calls[: options.warm]:
                client.call(options.tool, arguments)
            measured = run.timed(client, options.tool, calls[options.warm :])
            latencies = [seconds * 1000 for seconds in measured.samples]
            client.close()
            server.send_signal(signal.SIGUSR1)
            deadline = time.monotonic() + 10
            while not out.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            requests = json.loads(out.read_text())[-len(latencies) :]
        finally:
            server.terminate()
            server.wait()
    latencies.sort()
    print(
        f"{options.tool} over HTTP, {len(latencies)} new {language} {phrasing}s, one worker: client p50 "
        f"{statistics.median(latencies):.2f} ms, p95 {latencies[int(0.95 * (len(latencies) - 1))]:.2f} ms\n"
    )
    print("| stage (ms from the request's arrival, medians) | calls | start | end | duration | its CPU |")
    print("|---|---|---|---|---|---|")
    for label, count, started, ended, took, cpu in _table(requests):
        spent = "" if cpu is None else f"{cpu:.2f}"
        print(f"| {label} | {count} | {started:.2f} | {ended:.2f} | {took:.2f} | {spent} |")


def _wait_until_up(url: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and server.poll() is None:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit("The traced server did not start.")


if __name__ == "__main__":
    main()
