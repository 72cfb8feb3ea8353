"""The benchmark (`make bench`): seeds a database, serves, measures, prints one table with budgets.

1. Creates its own database (default `unforgetter_bench` on 127.0.0.1:5432), or empties the one
   `--database-url` names (SQLite or PostgreSQL), migrates it and seeds a workspace with
   `manage.py import_memory`: 100,000 items in the measured project and 1,000,000 across the
   workspace (10 projects of 100,000; `--projects 1` for 100k only), from generated JSONL with
   varied text (a few thousand words, Zipf-distributed, mixed kinds and data classes). Nothing is
   done to the database after the import: what import_memory leaves is what is measured.
2. Starts uvicorn with `--workers` workers (default: one per CPU) on a free loopback port and
   issues a token with `issue_token`.
3. Measures with kept-alive `httpx` clients sending 2026-07-28 (stateless) JSON-RPC POSTs:
   get_context and search_memory right after the import (fresh) and after a warm-up (warmed),
   each phase with tasks and queries of its own (a task asked again is the bundle cache's),
   list_projects, requests/s with 8 concurrent clients (on N workers and on 1), the import rate,
   the write path (bench/write.py) and the largest worker's resident memory.
4. Runs the official reference memory server (bench/reference.py) on the measured project's items
   and the same tasks and queries, and prints how many times slower it is (`--no-reference`: not).

`--quick` runs small sizes as a smoke test; `--keep` reuses a database seeded earlier with the
same sizes. If `bench/write.py` defines `run(base_url, token, workspace_slug, project_slug)`
returning rows `(metric, measured, budget)`, its rows are added to the table.
Traffic goes to 127.0.0.1 only; every loop is bounded in count and time.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import platform
import random
import re
import secrets
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import psycopg
import reference

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
WORKSPACE = "bench"
PROTOCOL = "2026-07-28"
# A throwaway database gets throwaway keys, fresh each run (no key lives in the repository).
KEYS = {"SECRET_KEY": secrets.token_urlsafe(48), "LEDGER_KEY": secrets.token_urlsafe(48)}


@dataclass
class Sizes:
    project_items: int
    projects: int
    latency_calls: int
    warmup_calls: int
    concurrent_seconds: float

    @property
    def workspace_items(self) -> int:
        return self.project_items * self.projects


FULL = Sizes(project_items=100_000, projects=10, latency_calls=300, warmup_calls=30, concurrent_seconds=10)
QUICK = Sizes(project_items=10_000, projects=3, latency_calls=150, warmup_calls=20, concurrent_seconds=3)


# --- Text generation --------------------------------------------------------------------------------

_TECH_WORDS_TEXT = """
deploy deploys deployment pipeline release rollback migration migrations database postgres index
query queries cache redis queue worker workers celery cron schedule backup restore replica primary
failover latency throughput timeout retry retries backoff circuit breaker rate limit quota tenant
workspace project service services api endpoint gateway proxy ingress egress load balancer cluster
node pod container image registry kubernetes helm terraform ansible docker build test tests lint
coverage flaky integration unit staging production canary feature flag toggle config secret vault
token credential oauth login session cookie password rotation audit log logs logging metric metrics
alert alerts pager oncall incident postmortem outage degradation capacity scaling autoscale memory
cpu disk network dns certificate tls ssl expiry renewal billing invoice payment refund customer
account user users admin owner reviewer review approval ticket jira github branch merge rebase
commit tag version semver changelog dependency upgrade python django node react typescript frontend
backend mobile ios android search ranking relevance embedding vector model prompt agent agents
memory context policy policies compliance gdpr retention deletion export import schema field column
table partition shard vacuum analyze lock deadlock transaction isolation snapshot consistency
latency budget slo sla error errors exception traceback bug fix hotfix patch regression performance
profile profiling trace tracing span sampling dashboard grafana prometheus sentry webhook event
events stream kafka topic consumer producer batch job jobs runbook playbook checklist handbook
onboarding docs documentation decision decided convention naming style format formatter review
weekly monday tuesday thursday window change freeze quarter roadmap goal goals team teams platform
infra security privacy encryption key keys rotation storage bucket object upload download file files
csv json yaml report reports
"""
_TECH_WORDS = _TECH_WORDS_TEXT.split()

_SYLLABLES_TEXT = """
ka ri to mo ne sa lu vi den por tal bri cor fen gal hux jor kel lim mar nov pex quin ros sul tev ul
var wex yor zan bel cas dor el fir gan hol ist jun kor lan mer nor osk pil rav sen tor und ver
"""
_SYLLABLES = _SYLLABLES_TEXT.split()


def vocabulary(size: int, rng: random.Random) -> list[str]:
    """Real engineering words first (the most frequent), then pronounceable made-up ones."""
    words = list(dict.fromkeys(_TECH_WORDS))
    seen = set(words)
    while len(words) < size:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    rng.shuffle(words)  # Zipf rank is assigned after the shuffle: tech words are spread out
    return words


class TextMaker:
    """Sentences whose words follow a Zipf distribution over the vocabulary, like real notes."""

    def __init__(self, words: Sequence[str], rng: random.Random) -> None:
        self.words = list(words)
        self.rng = rng
        weights = [1.0 / (rank + 1) ** 1.05 for rank in range(len(self.words))]
        total = sum(weights)
        acc = 0.0
        self.cumulative = []
        for w in weights:
            acc += w / total
            self.cumulative.append(acc)

    def words_of(self, count: int) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self.cumulative, k=count)

    def sentence(self, low: int, high: int) -> str:
        chosen = self.words_of(self.rng.randint(low, high))
        fillers = ("the", "for", "and", "with", "to", "of", "in", "on", "before", "after")
        out = []
        for i, word in enumerate(chosen):
            out.append(word)
            if i % 3 == 2 and i < len(chosen) - 1:
                out.append(self.rng.choice(fillers))
        text = " ".join(out)
        return text[0].upper() + text[1:] + "."


KIND_MIX = [
    ("fact", 0.46),
    ("decision", 0.16),
    ("convention", 0.12),
    ("thread", 0.14),
    ("method", 0.12),
]
PROTECTED_PER_PROJECT = [("policy", 8), ("goal", 3), ("permission", 2), ("identity", 1)]


def jsonl_lines(count: int, maker: TextMaker, rng: random.Random) -> Iterator[str]:
    kinds = [k for k, _ in KIND_MIX]
    weights = [w for _, w in KIND_MIX]
    protected = [kind for kind, n in PROTECTED_PER_PROJECT for _ in range(n)]
    for kind in protected:
        yield json.dumps({"kind": kind, "text": maker.sentence(10, 25), "actor": "owner"})
    for i in range(count - len(protected)):
        kind = rng.choices(kinds, weights)[0]
        text = (
            maker.sentence(12, 45) if kind != "method" else "\n".join(maker.sentence(6, 14) for _ in range(4))
        )
        item: dict[str, Any] = {
            "kind": kind,
            "text": text,
            "source": f"notes/{rng.randint(1, 400)}.md",
            "actor": rng.choice(["claude@ana", "codex@tom", "cursor@li", "owner", "import"]),
            "date": f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}",
        }
        if kind == "thread" and i % 3 == 0:
            item["state"] = "closed"
        roll = rng.random()
        if roll < 0.04:
            item["data_class"] = "confidential"
        elif roll < 0.05:
            item["data_class"] = "restricted"
        yield json.dumps(item)


# --- Processes and database ---------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def child_env(database_url: str, public_url: str = "http://127.0.0.1:8000") -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "DATABASE_URL": database_url,
            **KEYS,
            "PUBLIC_URL": public_url,
            "DEBUG": "0",
            "LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
            # The write bench times one consolidator in its own process; the server's embedded
            # one would race it for the same proposals.
            "EMBEDDED_WORKER": "false",
            # The benchmark measures speed with one token at full tilt, not the per-credential limits.
            "CREDENTIAL_CALLS_PER_SECOND": "0",
            "CREDENTIAL_CONCURRENCY": "0",
            "CREDENTIAL_IN_FLIGHT": "0",
            "CREDENTIAL_SERVER_MS_PER_SECOND": "0",
        }
    )
    env.pop("UNFORGETTER_TESTING", None)
    return env


def run_python(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """A Python child in the repository with the benchmark's settings, its output captured."""
    return subprocess.run(
        [PYTHON, *args], cwd=ROOT, env=child_env(database_url), capture_output=True, text=True, check=False
    )


def manage(database_url: str, *args: str) -> str:
    done = run_python(database_url, "manage.py", *args)
    if done.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args[:2])} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def server_url(admin_url: str, name: str) -> str:
    return admin_url.rsplit("/", 1)[0] + "/" + name


_SEEDED_COUNT = (
    "SELECT count(*) FROM memory_fact f JOIN workspaces_workspace w ON w.id = f.workspace_id "
    "JOIN workspaces_project p ON p.id = f.project_id WHERE w.slug = {0} AND p.slug LIKE 'p%'"
)


def database_ready(url: str, sizes: Sizes) -> bool:
    """Whether a database seeded earlier with exactly these sizes exists (for --keep)."""
    # Only the seeded projects count: the write bench adds projects of its own.
    row = query_row(url, _SEEDED_COUNT, [WORKSPACE])
    return row is not None and row[0] == sizes.workspace_items


def query_row(url: str, sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
    """The first row of `sql` on the database at `url` (`{0}` marks each parameter), or None
    when there is no such database or it cannot answer."""
    if url.startswith("sqlite:"):
        path = url.removeprefix("sqlite:///")
        if not Path(path).exists():
            return None
        try:
            with sqlite3.connect(path) as conn:
                found: tuple[Any, ...] | None = conn.execute(sql.format("?"), params).fetchone()
                return found
        except sqlite3.Error:
            return None
    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            return conn.execute(sql.format("%s").replace("%'", "%%'"), params).fetchone()
    except psycopg.Error:
        return None


def database_recreate(admin_url: str, name: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def database_empty(url: str) -> None:
    """Make a given database new: a SQLite file removed, a PostgreSQL schema dropped and recreated.

    For a database the runner may use but not create (one per engineer on a shared server); a
    recreated schema has no planner statistics, like a new database.
    """
    if url.startswith("sqlite:"):
        path = Path(url.removeprefix("sqlite:///"))
        for leftover in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            leftover.unlink(missing_ok=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        return
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS public CASCADE")
        conn.execute("CREATE SCHEMA public")


@dataclass
class Seeded:
    import_seconds: float = 0.0
    imported: int = 0
    first_project_rate: float = 0.0
    reused: bool = False


def project_slug(index: int) -> str:
    return f"p{index:02d}"


def seed(url: str, sizes: Sizes, data_dir: Path) -> Seeded:
    manage(url, "migrate", "--noinput", "-v", "0")
    manage(url, "create_workspace", WORKSPACE, "--name", "Benchmark")
    rng = random.Random(20261130)
    maker = TextMaker(vocabulary(4000, rng), rng)
    data_dir.mkdir(parents=True, exist_ok=True)
    result = Seeded()
    for index in range(sizes.projects):
        slug = project_slug(index)
        manage(url, "create_project", WORKSPACE, slug, "--data-class", "internal")
        path = data_dir / f"{slug}-{sizes.project_items}.jsonl"
        if not path.exists():
            tmp = path.with_suffix(".tmp")
            with tmp.open("w", encoding="utf-8") as out:
                for line in jsonl_lines(sizes.project_items, maker, rng):
                    out.write(line + "\n")
            tmp.rename(path)
        started = time.perf_counter()
        manage(url, "import_memory", WORKSPACE, slug, str(path))
        elapsed = time.perf_counter() - started
        result.import_seconds += elapsed
        result.imported += sizes.project_items
        if index == 0:
            result.first_project_rate = sizes.project_items / elapsed
        log(f"  imported {slug}: {sizes.project_items:,} items in {elapsed:.1f}s")
    # Measured as imported: import_memory runs ANALYZE itself; nothing else is done for it.
    return result


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def _is_shared_embedder(pid: int) -> bool:
    try:
        return b"memory.embeddings.service" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _rollup_mb(pid: int) -> dict[str, float]:
    """A process's /proc/<pid>/smaps_rollup figures (Rss, Pss, Anonymous, ...), in MB."""
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return {}
    figures = {}
    for line in rollup.splitlines()[1:]:
        key, _, value = line.partition(":")
        if value.strip().endswith("kB"):
            figures[key] = int(value.split()[0]) / 1024
    return figures


def _memory_mb(pid: int) -> tuple[float, float]:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0, 0.0
    values = {}
    for line in status.splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            key, value = line.split(":", 1)
            values[key] = int(value.split()[0]) / 1024
    return values.get("VmRSS", 0.0), values.get("VmHWM", 0.0)


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    url: str

    def serving(self) -> list[int]:
        """The processes that serve: with --workers the first one only supervises its children."""
        children = [pid for pid in _children(self.process.pid) if not _is_shared_embedder(pid)]
        return children or [self.process.pid]

    def shared_embedder(self) -> list[int]:
        """The machine's shared embedder (memory.embeddings.service), a child of one worker."""
        return [pid for worker in self.serving() for pid in _children(worker) if _is_shared_embedder(pid)]

    def rss_mb(self) -> tuple[float, float]:
        """The largest resident and peak resident memory of one serving process (a worker)."""
        figures = [_memory_mb(pid) for pid in self.serving()]
        return max(f[0] for f in figures), max(f[1] for f in figures)

    def parts_rows(self) -> list[tuple[str, str, str, bool | None]]:
        """Of the serving process with the largest RSS: its proportional set size (each shared
        page split among its sharers), and its anonymous memory beside its file-backed pages
        (libraries and the model's weights, shared with other processes that map them); and the
        RSS and PSS of the machine's shared embedder, where the workers share one."""
        rollup = max((_rollup_mb(pid) for pid in self.serving()), key=lambda r: r.get("Rss", 0.0))
        anon, pss = rollup.get("Anonymous", 0.0), rollup.get("Pss", 0.0)
        files = rollup.get("Rss", 0.0) - anon
        rows: list[tuple[str, str, str, bool | None]] = [
            ("PSS of one web worker (shared pages split among workers)", f"{pss:.0f} MB", "-", None),
            ("its RSS: anonymous / file-backed (shared)", f"{anon:.0f} / {files:.0f} MB", "-", None),
        ]
        embedder = [_rollup_mb(pid) for pid in self.shared_embedder()]
        if embedder:
            rows.append(
                (
                    "RSS / PSS of the shared embedder (one per machine)",
                    f"{embedder[0].get('Rss', 0.0):.0f} / {embedder[0].get('Pss', 0.0):.0f} MB",
                    "-",
                    None,
                )
            )
        return rows

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def serve(url: str, workers: int = 1, *, root: Path = ROOT, python: str = PYTHON) -> Server:
    """The server of the tree at `root`, run by its virtualenv's `python` (bench/ab.py serves two)."""
    port = free_port()
    public = f"http://127.0.0.1:{port}"
    if workers > 1:
        # As `make run` serves: each worker on a socket of its own (unforgetter.serve).
        command = [python, "-m", "unforgetter.serve", "--workers", str(workers)]
    else:
        command = [str(Path(python).parent / "uvicorn"), "unforgetter.asgi:application", "--lifespan", "on"]
        command += ["--no-proxy-headers", "--no-access-log"]
    process = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
        cwd=root,
        env=child_env(url, public),
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{public}/healthz", timeout=1).status_code == 200:
                return Server(process=process, url=public)
        except httpx.HTTPError:
            pass
        if process.poll() is not None:
            break
        time.sleep(0.2)
    process.kill()
    raise SystemExit("The server did not start.")


# --- Measuring ---------------------------------------------------------------------------------


class ToolRefused(RuntimeError):
    """The server answered a call with a tool error."""


class McpHttp:
    """A kept-alive client sending stateless (2026-07-28) tools/call requests."""

    def __init__(self, base_url: str, token: str) -> None:
        self.client = httpx.Client(
            base_url=base_url,
            timeout=30,
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
                "MCP-Protocol-Version": PROTOCOL,
                "Mcp-Method": "tools/call",
            },
        )
        self.next_id = 0

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        body = {
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": "tools/call",
            "params": {
                "name": tool,
                "arguments": arguments,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
                    "io.modelcontextprotocol/clientInfo": {"name": "unforgetter-bench", "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
        response = self.client.post("/mcp", content=json.dumps(body), headers={"Mcp-Name": tool})
        response.raise_for_status()
        result = response.json()["result"]
        if result.get("isError"):
            raise ToolRefused(f"{tool} failed: {result.get('structuredContent')}")
        structured: dict[str, Any] = result["structuredContent"]
        return structured

    def close(self) -> None:
        self.client.close()


@dataclass
class Latency:
    samples: list[float] = field(default_factory=list)
    refused: int = 0

    def pct(self, p: float) -> float:
        ordered = sorted(self.samples)
        index = min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))
        return ordered[index] * 1000


@contextmanager
def client_collector_paused() -> Iterator[None]:
    """The benchmark client's own cyclic garbage collector held off while calls are timed.

    A benchmark process may hold a whole corpus (bench/full_vectors.py and context_trace.py keep
    100,000 generated items): a full collection of it took 160-210 ms and landed on whichever
    call was being timed, about one call in 120 after a start, on either database. That pause is
    the client's, not the server's. Collected once before; the collector is back on after.
    """
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def timed(client: McpHttp, tool: str, calls: Sequence[dict[str, Any]]) -> Latency:
    """Round-trip latency of each call, one after another on one kept-alive connection, with the
    client's collector held off (`client_collector_paused`).

    A call refused with a tool error is timed too (it was answered) and counted in `refused`.
    """
    latency = Latency()
    with client_collector_paused():
        for arguments in calls:
            started = time.perf_counter()
            try:
                client.call(tool, arguments)
            except ToolRefused:
                latency.refused += 1
            latency.samples.append(time.perf_counter() - started)
    return latency


def concurrent_rps(
    make_call: Callable[[McpHttp, int], Any], base_url: str, token: str, seconds: float
) -> tuple[float, int]:
    """Answered requests per second over `seconds` with 8 clients, each on one kept-alive connection.

    A call the server refuses with a tool error (a work budget, a rate limit) is counted apart and
    not as answered; any other failure stops the run.
    """
    counts = [0] * 8
    refused = [0] * 8
    errors: list[BaseException] = []
    start = threading.Barrier(9)
    stop_at = [0.0]

    def worker(slot: int) -> None:
        client = McpHttp(base_url, token)
        try:
            start.wait()
            n = 0
            while time.perf_counter() < stop_at[0] and n + refused[slot] < 100_000:
                try:
                    make_call(client, slot * 100_000 + n + refused[slot])
                    n += 1
                except ToolRefused:
                    refused[slot] += 1
            counts[slot] = n
        except BaseException as exc:
            errors.append(exc)
        finally:
            client.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    began = time.perf_counter()
    stop_at[0] = began + seconds
    start.wait()
    for thread in threads:
        thread.join(timeout=seconds + 60)
    elapsed = time.perf_counter() - began
    if errors:
        raise SystemExit(f"a concurrent client failed: {errors[0]}")
    return sum(counts) / elapsed, sum(refused)


def meets(measured: str, budget: str) -> bool | None:
    """Whether a figure such as "76/s" meets a budget such as ">= 300/s" (None if not comparable)."""
    numbers = [re.search(r"[\d,]+(?:\.\d+)?", text) for text in (measured, budget)]
    if not budget.startswith(">=") or not all(numbers):
        return None
    value, floor = (float(n.group().replace(",", "")) for n in numbers if n)
    return value >= floor


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# The write bench proposes into a project of its own: what it publishes must not change the size
# of the measured project (and with it what `--keep` reuses).
WRITES_PROJECT = "writes"


def _writes_project(url: str) -> None:
    try:
        manage(url, "create_project", WORKSPACE, WRITES_PROJECT, "--data-class", "internal")
    except SystemExit as exc:
        if "already exists" not in str(exc):
            raise


def write_rows(base_url: str, token: str, project: str, database_url: str) -> list[tuple[str, str, str]]:
    path = Path(__file__).with_name("write.py")
    if not path.exists():
        return []
    # bench/write.py seeds and consolidates in this process, through Django on the server's database.
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("UNFORGETTER_TESTING", "1")
    spec = importlib.util.spec_from_file_location("bench_write", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.run(base_url, token, WORKSPACE, project)
    return [(str(m), str(v), str(b)) for m, v, b in rows]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument("--keep", action="store_true", help="reuse the seeded database if it matches")
    parser.add_argument(
        "--admin-url", default=os.environ.get("BENCH_ADMIN_URL", "postgres://root@127.0.0.1:5432/postgres")
    )
    parser.add_argument("--db-name", default=os.environ.get("BENCH_DB", "unforgetter_bench"))
    parser.add_argument(
        "--database-url",
        default=os.environ.get("BENCH_DATABASE_URL", ""),
        help="measure on this database (sqlite:///path or postgres://...), emptied first; "
        "instead of creating --db-name",
    )
    parser.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="uvicorn workers (default: one per CPU)"
    )
    parser.add_argument("--no-reference", action="store_true", help="skip the reference memory server")
    parser.add_argument(
        "--vectors",
        type=int,
        default=500,
        help="items to embed before measuring, so both sides of the hybrid ranking run, the query "
        "embedding included (default 500; the local model embeds ~80 items/s per core, so all of "
        "them would take an hour: the vector top-k at the full size is timed by bench/vectors.py)",
    )
    parser.add_argument("--projects", type=int, help="projects to seed (default: 10, --quick 3)")
    parser.add_argument("--items", type=int, help="items per project (default: 100,000, --quick 10,000)")
    parser.add_argument(
        "--data-dir", type=Path, default=Path(os.environ.get("BENCH_DATA", "/tmp/unforgetter-bench"))
    )
    options = parser.parse_args()
    sizes = QUICK if options.quick else FULL
    sizes = replace(
        sizes,
        projects=options.projects or sizes.projects,
        project_items=options.items or sizes.project_items,
    )
    db_name = options.db_name + ("_quick" if options.quick else "")
    url = options.database_url or server_url(options.admin_url, db_name)
    if options.database_url:
        db_name = url.rsplit("/", 1)[-1]

    seeded = Seeded(reused=True)
    if options.keep and database_ready(url, sizes):
        log(f"Reusing {db_name} ({sizes.workspace_items:,} items).")
    else:
        log(f"Seeding {db_name}: {sizes.project_items:,} items x {sizes.projects} projects ...")
        if options.database_url:
            database_empty(url)
        else:
            database_recreate(options.admin_url, db_name)
        seeded = seed(url, sizes, options.data_dir)
    if options.vectors:
        log(f"Embedding up to {options.vectors:,} items with the local model (the hybrid side) ...")
        log("  " + manage(url, "embed_backfill", "--limit", str(options.vectors)).strip().splitlines()[-1])

    _writes_project(url)
    token = manage(
        url, "issue_token", WORKSPACE, "--actor", "bench@runner", "--zone", "claude", "--role", "contributor"
    ).strip()
    rng = random.Random(7)
    maker = TextMaker(vocabulary(4000, random.Random(20261130)), rng)
    project = project_slug(0)
    n = sizes.latency_calls
    tasks = [f"{maker.sentence(5, 14)} #{i}" for i in range(n)]
    queries = [" ".join(maker.words_of(rng.randint(1, 2))) for _ in range(n)]
    # The fresh phase asks tasks and queries of its own. Asked again when warmed, a third of the
    # warmed tasks were served from the bundle cache (the same task again) and the warmed p50 was
    # that of the other tasks' fastest two thirds.
    third = max(n // 3, 1)
    fresh_tasks = [f"{maker.sentence(5, 14)} #f{i}" for i in range(third)]
    fresh_queries = [" ".join(maker.words_of(rng.randint(1, 2))) for _ in range(third)]
    k = f"{sizes.project_items // 1000}k"
    total = sizes.workspace_items
    m = f"{total / 1e6:g}M" if total >= 1e6 else f"{total // 1000}k"

    rows: list[tuple[str, str, str, bool | None]] = []
    if not seeded.reused:
        rows.append(
            _floor_row(f"import_memory items/s (first {k})", seeded.first_project_rate, IMPORT_BUDGET)
        )
        if sizes.projects > 1:
            rate = seeded.imported / seeded.import_seconds
            rows.append(_floor_row("import_memory items/s (whole seed)", rate, IMPORT_BUDGET))
    else:
        rows.append(("import_memory items/s", "not measured (--keep)", f">= {IMPORT_BUDGET:,}/s", None))

    workers = options.workers
    server = serve(url, workers)
    ours: dict[str, Latency] = {}
    try:
        client = McpHttp(server.url, token)
        # Fresh: the first calls after the import and the server's start, nothing warmed.
        state = "fresh import" if not seeded.reused else "fresh server"
        fresh_ctx = timed(client, "get_context", [{"project_id": project, "task": t} for t in fresh_tasks])
        fresh_srch = timed(
            client, "search_memory", [{"project_id": project, "query": q} for q in fresh_queries]
        )
        rows += _latency_rows(f"get_context ({k} in project, {state})", fresh_ctx, 8, 20)
        search_p95 = 40 if total >= 1_000_000 else 15
        rows += _latency_rows(f"search_memory ({m} in workspace, {state})", fresh_srch, None, search_p95)

        log("Warming up ...")
        for i in range(sizes.warmup_calls):
            client.call("get_context", {"project_id": project, "task": f"warm {tasks[i]}"})
            client.call("search_memory", {"project_id": project, "query": queries[i]})

        log("Measuring list_projects (the fixed cost of a call) ...")
        floor = timed(client, "list_projects", [{}] * n)
        log("Measuring get_context ...")
        ctx = timed(client, "get_context", [{"project_id": project, "task": t} for t in tasks])
        repeat = tasks[: max(n // 4, 1)]
        cached = timed(client, "get_context", [{"project_id": project, "task": t} for t in repeat])
        log("Measuring search_memory ...")
        srch = timed(client, "search_memory", [{"project_id": project, "query": q} for q in queries])
        client.close()
        ours = {"get_context": ctx, "search_memory": srch}
        rows.append(_ceiling_row("list_projects p50 (the fixed cost of a call)", floor.pct(50), 2))
        rows += _latency_rows(f"get_context ({k} in project, warmed)", ctx, 8, 20)
        rows.append(("get_context p50, same task again", f"{cached.pct(50):.1f} ms", "-", None))
        rows += _latency_rows(f"search_memory ({m} in workspace, warmed)", srch, None, search_p95)

        log(f"Measuring 8 concurrent clients on {workers} worker(s) ...")
        rows += _throughput_rows(server.url, token, project, tasks, queries, sizes, f"{workers} workers")
        for metric, measured, budget in write_rows(server.url, token, WRITES_PROJECT, url):
            rows.append((metric, measured, budget, meets(measured, budget)))
        rss, peak = server.rss_mb()
        rows.append(_ceiling_row(f"RSS of one web worker after the run ({m} in workspace)", rss, 250, "MB"))
        rows.append(_ceiling_row("peak RSS of one web worker (VmHWM)", peak, 250, "MB"))
        rows += server.parts_rows()
    finally:
        server.stop()

    if workers > 1:
        log("Measuring 8 concurrent clients on 1 worker ...")
        single = serve(url, 1)
        try:
            rows += _throughput_rows(single.url, token, project, tasks, queries, sizes, "1 worker")
        finally:
            single.stop()

    rows += _semantic_rows(url, sizes.project_items)
    if not options.no_reference and reference.available() and ours:
        rows += _reference_rows(sizes, options.data_dir, tasks, queries, ours)
    print_table(rows, sizes, db_name, url, workers)


IMPORT_BUDGET = 20_000


def _semantic_rows(database_url: str, items: int) -> list[tuple[str, str, str, bool | None]]:
    """What the semantic side costs a call at the full size, timed in process (bench/vectors.py)."""
    log(f"Timing the vector top-k over {items:,} rows and a task's query embedding ...")
    done = run_python(database_url, str(ROOT / "bench" / "vectors.py"), str(items))
    if done.returncode != 0:
        return [("semantic side (bench/vectors.py)", "failed: " + done.stderr.strip()[-200:], "-", False)]
    timings = json.loads(done.stdout.strip().splitlines()[-1])
    rows: list[tuple[str, str, str, bool | None]] = []
    threads = timings.get("embed_threads")
    per_call = f", {threads} thread{'s' if threads != 1 else ''} a call" if threads else ""
    loop = f", {timings['popcount']} distances" if timings.get("popcount") else ""
    for key, name in (
        ("topk_ms", f"vector top-k over {items:,} rows{loop}"),
        ("embed_ms", f"query embedding of a task{per_call}"),
    ):
        samples = Latency([ms / 1000 for ms in timings[key]])
        if samples.samples:
            rows.append(
                (
                    f"{name} p50 / p95 (in process)",
                    f"{samples.pct(50):.1f} / {samples.pct(95):.1f} ms",
                    "-",
                    None,
                )
            )
    return rows


def _ceiling_row(metric: str, value: float, budget: float, unit: str = "ms") -> tuple[str, str, str, bool]:
    return (metric, f"{value:.1f} {unit}", f"<= {budget:g} {unit}", value <= budget)


def _floor_row(metric: str, value: float, budget: float) -> tuple[str, str, str, bool]:
    return (metric, f"{value:,.0f}/s", f">= {budget:,.0f}/s", value >= budget)


def _latency_rows(
    name: str, latency: Latency, p50_budget: float | None, p95_budget: float | None
) -> list[tuple[str, str, str, bool | None]]:
    rows: list[tuple[str, str, str, bool | None]] = []
    for p, budget in ((50, p50_budget), (95, p95_budget), (99, None)):
        value = latency.pct(p)
        if budget is None:
            rows.append((f"{name} p{p}", f"{value:.1f} ms", "-", None))
        else:
            rows.append(_ceiling_row(f"{name} p{p}", value, budget))
    if latency.refused:
        calls = len(latency.samples)
        rows.append((f"{name}: calls refused", f"{latency.refused} of {calls}", "0", False))
    return rows


def _throughput_rows(
    base_url: str,
    token: str,
    project: str,
    tasks: list[str],
    queries: list[str],
    sizes: Sizes,
    label: str,
) -> list[tuple[str, str, str, bool | None]]:
    n = len(tasks)
    ctx_rps = concurrent_rps(
        lambda c, i: c.call("get_context", {"project_id": project, "task": f"{tasks[i % n]} c{i}"}),
        base_url,
        token,
        sizes.concurrent_seconds,
    )
    search_rps = concurrent_rps(
        lambda c, i: c.call("search_memory", {"project_id": project, "query": queries[i % n]}),
        base_url,
        token,
        sizes.concurrent_seconds,
    )
    return [
        (f"{tool} req/s, 8 clients, {label}", f"{rps:,.0f}/s" + (f" ({refused} refused)" if refused else ""),
         "grows with workers", None)
        for tool, (rps, refused) in (("get_context", ctx_rps), ("search_memory", search_rps))
    ]  # fmt: skip


def _reference_rows(
    sizes: Sizes, data_dir: Path, tasks: list[str], queries: list[str], ours: dict[str, Latency]
) -> list[tuple[str, str, str, bool | None]]:
    """The reference memory server on the measured project's items and the same calls."""
    log(f"Measuring the reference server ({reference.PACKAGE}) ...")
    graph = data_dir / f"reference-{sizes.project_items}.jsonl"
    source = data_dir / f"{project_slug(0)}-{sizes.project_items}.jsonl"
    with source.open(encoding="utf-8") as lines:
        reference.write_graph(graph, (json.loads(line) for line in lines))
    # It reads and scans its whole file per call and answers every match (seconds for a common
    # word at 100k): fewer calls keep the run bounded.
    calls = max(sizes.latency_calls // 15, 10)
    measured = reference.measure(
        graph, queries[:3], {"get_context": tasks[:calls], "search_memory": queries[:calls]}
    )
    rows: list[tuple[str, str, str, bool | None]] = []
    for tool, samples in measured.items():
        theirs = Latency(samples)
        rows.append(
            (
                f"reference search_nodes for {tool} p50 / p95 ({len(samples)} calls)",
                f"{theirs.pct(50):.1f} / {theirs.pct(95):.1f} ms",
                "-",
                None,
            )
        )
        ratio = theirs.pct(50) / max(ours[tool].pct(50), 1e-9)
        rows.append((f"{tool} p50: reference / Unforgetter", f"{ratio:.1f}x", ">= 3x", ratio >= 3))
    return rows


def cpu_model() -> str:
    """The CPU's model and whether it multiplies int8 in one instruction (VNNI).

    Machines of one kind differ in CPU. The local embedder's int8 model took 1.6 ms per task on a
    CPU with VNNI and 6.1 ms on one without, which moves every get_context figure. So two tables
    are comparable only if this line is the same in both.
    """
    try:
        first = Path("/proc/cpuinfo").read_text().split("\n\n", 1)[0]
    except OSError:
        return platform.processor() or "unknown CPU"
    fields = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in first.splitlines())}
    flags = fields.get("flags", "").split()
    vnni = "int8 VNNI" if {"avx512_vnni", "avx_vnni"} & set(flags) else "no VNNI"
    family, model = fields.get("cpu family", "?"), fields.get("model", "?")
    return f"{fields.get('model name', 'unknown CPU')} (family {family} model {model}, {vnni})"


def print_table(
    rows: list[tuple[str, str, str, bool | None]], sizes: Sizes, db_name: str, url: str, workers: int
) -> None:
    header = ("metric", "measured", "budget", "ok?")
    table = [header] + [(m, v, b, "-" if ok is None else ("yes" if ok else "NO")) for m, v, b, ok in rows]
    widths = [max(len(str(r[i])) for r in table) for i in range(4)]
    line = "+-" + "-+-".join("-" * w for w in widths) + "-+"
    load = os.getloadavg()[0]
    print(
        f"Unforgetter bench: {db_name}, {sizes.workspace_items:,} items, "
        f"{sizes.project_items:,} in the measured project, "
        f"{'SQLite' if url.startswith('sqlite:') else 'PostgreSQL'}, {workers} uvicorn worker(s), "
        f"{os.cpu_count()} CPUs, load average {load:.1f} at the end"
    )
    print(f"CPU: {cpu_model()}")
    print(line)
    for i, row in enumerate(table):
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
        if i == 0:
            print(line)
    print(line)


if __name__ == "__main__":
    main()
