"""The fleet under faults: two web workers, two Celery workers and a beat on PostgreSQL and Redis.

Everything runs on a PostgreSQL cluster and a Redis server of the test's own (ports 8125 and
8126, data in a temporary directory), so the machine's shared services are never touched. While
four credentials send a bounded load of proposals and reads, the test SIGKILLs and restarts a
web worker, a Celery worker and the beat, restarts Redis, and restarts PostgreSQL once; Celery's
visibility timeout is two seconds, so unacknowledged tasks are redelivered and run twice.
Afterwards: no accepted proposal is lost, none has two effects, the ledger verifies, every
proposal is decided, and the clients saw only retryable errors. Run: `pytest -m fleet`.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from celery import Celery

from memory.dispatch import CONSOLIDATE_TASK
from memory.embeddings import local_model, shared
from tests.processes import ROOT, shared_embedders
from workspaces.keys import new_key

pytestmark = [pytest.mark.fleet, pytest.mark.slow]

PG_PORT = 8125
REDIS_PORT = 8126
WEB_PORTS = (8121, 8122)
CREDENTIALS = 4
PROPOSALS_PER_CREDENTIAL = 40
PROTOCOL = "2026-07-28"
PG_BIN = next(iter(sorted(Path("/usr/lib/postgresql").glob("*/bin"))), Path("/nonexistent"))
RETRYABLE_TOOL_ERRORS = {"rate_limited", "internal_error"}
RETRYABLE_STATUSES = {429, 500, 502, 503, 504}


def _as_postgres(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """PostgreSQL refuses to run as root: its tools run as the `postgres` user then."""
    if os.geteuid() == 0:
        args = ["runuser", "-u", "postgres", "--", *args]
    return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False, **kwargs)


@dataclass
class Fleet:
    root: Path
    env: dict[str, str]
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    restarts: Counter[str] = field(default_factory=Counter)

    @property
    def database_url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{PG_PORT}/fleet"

    # --- PostgreSQL and Redis of the test's own -------------------------------------------------

    def pg(self, *args: str) -> None:
        done = _as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(self.root / "pg"), "-w", "-t", "60", *args])
        assert done.returncode == 0, done.stdout + done.stderr

    def pg_init(self) -> None:
        data = self.root / "pg"
        data.mkdir()
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            os.chown(data, user.pw_uid, user.pw_gid)
        done = _as_postgres([str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"])
        assert done.returncode == 0, done.stdout + done.stderr
        options = f"-p {PG_PORT} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self.pg("-o", options, "-l", str(self.root / "pg.log"), "start")
        with psycopg.connect(f"postgres://postgres@127.0.0.1:{PG_PORT}/postgres", autocommit=True) as conn:
            conn.execute("CREATE DATABASE fleet")

    def redis_start(self) -> None:
        self.processes["redis"] = subprocess.Popen(
            [
                "redis-server",
                *("--port", str(REDIS_PORT), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"),
                *("--dir", str(self.root)),
            ],
            stdout=(self.root / "redis.log").open("ab"),
            stderr=subprocess.STDOUT,
        )
        _wait(lambda: _redis_ping(), "redis to answer")

    # --- the fleet's own processes --------------------------------------------------------------

    def start(self, name: str) -> None:
        self.processes[name] = subprocess.Popen(
            self.command(name),
            cwd=ROOT,
            env=self.env,
            stdout=(self.root / f"{name}.log").open("ab"),
            stderr=subprocess.STDOUT,
        )
        if name.startswith("web"):
            port = WEB_PORTS[int(name[-1]) - 1]
            _wait(lambda: _answers(f"http://127.0.0.1:{port}/healthz"), f"{name} to serve")

    def command(self, name: str) -> list[str]:
        celery = [sys.executable, "-m", "celery", "-A", "unforgetter"]
        if name.startswith("web"):
            port = WEB_PORTS[int(name[-1]) - 1]
            return [
                *(sys.executable, "-m", "uvicorn", "unforgetter.asgi:application"),
                *("--host", "127.0.0.1", "--port", str(port), "--lifespan", "on"),
                *("--no-proxy-headers", "--no-access-log", "--log-level", "warning"),
            ]
        if name.startswith("worker"):
            return [
                *celery,
                *("worker", "--pool=solo", "--loglevel=INFO", "-n", f"{name}@fleet"),
                *("--without-gossip", "--without-mingle"),
            ]
        return [*celery, "beat", "--loglevel=INFO", "--schedule", str(self.root / "beat-schedule")]

    def kill(self, name: str) -> None:
        """SIGKILL: no shutdown handler runs, unacknowledged tasks stay with the broker."""
        process = self.processes[name]
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)

    def kill_and_restart(self, name: str, pause: float = 1.0) -> None:
        self.kill(name)
        time.sleep(pause)
        if name == "redis":
            self.redis_start()
        else:
            self.start(name)
        self.restarts[name] += 1

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def stop_all(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                process.wait(timeout=30)
        _as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(self.root / "pg"), "-m", "immediate", "stop"])


def _redis_ping() -> bool:
    try:
        done = subprocess.run(
            ["redis-cli", "-p", str(REDIS_PORT), "ping"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False
    return done.stdout.strip() == "PONG"


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _wait(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.1)


@pytest.fixture
def fleet() -> Iterator[Fleet]:
    if not (PG_BIN / "initdb").exists() or not shutil.which("redis-server"):
        pytest.skip("the fleet test needs PostgreSQL's server binaries and redis-server")
    # Not under pytest's (private) temporary directory: the postgres user must reach it.
    root = Path(tempfile.mkdtemp(prefix="unforgetter-fleet-"))
    root.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.pop("UNFORGETTER_TESTING", None)
    broker = f"redis://127.0.0.1:{REDIS_PORT}/0"
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "unforgetter.settings",
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:{PG_PORT}/fleet",
            "CELERY_BROKER_URL": broker,
            "CELERY_QUEUE": "fleet",
            "CELERY_VISIBILITY_TIMEOUT_SECONDS": "2",
            "HEARTBEAT_TICK_SECONDS": "1",
            "SECRET_KEY": new_key(),
            "LEDGER_KEY": new_key(),
            "PUBLIC_URL": f"http://127.0.0.1:{WEB_PORTS[0]}",
            "LOG_LEVEL": "INFO",
            "PYTHONUNBUFFERED": "1",
            "DB_POOL_MAX": "8",
            # The web processes share one embedder (memory.embeddings.shared), the fleet's own.
            "EMBEDDER_SOCKET": str(root / "embedder.sock"),
        }
    )
    env.pop("CACHE_URL", None)
    fleet = Fleet(root=root, env=env)
    try:
        fleet.pg_init()
        fleet.redis_start()
        fleet.manage("migrate", "--noinput", "-v", "0")
        fleet.manage("create_workspace", "fleet")
        fleet.manage("create_project", "fleet", "platform", "--data-class", "internal")
        for name in ("web1", "web2", "worker1", "worker2", "beat"):
            fleet.start(name)
        yield fleet
    finally:
        fleet.stop_all()
        for log in sorted(root.glob("*.log")):
            print(f"--- {log.name} (tail)\n{log.read_text(errors='replace')[-1500:]}")
        if not os.environ.get("FLEET_KEEP"):
            shutil.rmtree(root, ignore_errors=True)


@dataclass
class Outcomes:
    lock: threading.Lock = field(default_factory=threading.Lock)
    sent: set[str] = field(default_factory=set)
    accepted: dict[str, str] = field(default_factory=dict)  # request_id -> proposal_id
    unanswered: list[str] = field(default_factory=list)
    retryable: Counter[str] = field(default_factory=Counter)
    fatal: list[str] = field(default_factory=list)
    reads: int = 0


def _rpc(tool: str, arguments: dict[str, Any]) -> str:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": tool,
                "arguments": arguments,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
                    "io.modelcontextprotocol/clientInfo": {"name": "fleet-test", "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
    )


def _call(client: httpx.Client, port: int, tool: str, arguments: dict[str, Any], out: Outcomes) -> Any:
    """One call, retried (same arguments, so the same request_id) while its errors are retryable."""
    deadline = time.monotonic() + 90
    attempt = 0
    while time.monotonic() < deadline:
        target = WEB_PORTS[(WEB_PORTS.index(port) + attempt) % 2]  # the next try goes to the other worker
        attempt += 1
        try:
            response = client.post(
                f"http://127.0.0.1:{target}/mcp",
                content=_rpc(tool, arguments),
                headers={"Mcp-Method": "tools/call", "Mcp-Name": tool},
            )
        except httpx.TransportError as exc:
            with out.lock:
                out.retryable[type(exc).__name__] += 1
            time.sleep(0.2)
            continue
        if response.status_code in RETRYABLE_STATUSES:
            with out.lock:
                out.retryable[f"HTTP {response.status_code}"] += 1
            time.sleep(0.2)
            continue
        if response.status_code != 200:
            with out.lock:
                out.fatal.append(f"{tool}: HTTP {response.status_code} {response.text[:200]}")
            return None
        result = response.json()["result"]
        if result.get("isError"):
            code = result["structuredContent"]["error"]["code"]
            if code in RETRYABLE_TOOL_ERRORS:
                with out.lock:
                    out.retryable[code] += 1
                time.sleep(0.2)
                continue
            with out.lock:
                out.fatal.append(f"{tool}: {code}")
            return None
        return result["structuredContent"]
    return None


def _agent(token: str, index: int, out: Outcomes) -> None:
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": PROTOCOL,
    }
    with httpx.Client(headers=headers, timeout=30) as client:
        for n in range(PROPOSALS_PER_CREDENTIAL):
            port = WEB_PORTS[n % 2]
            request_id = f"fleet-{index}-{n}-{uuid.uuid4().hex[:8]}"
            with out.lock:
                out.sent.add(request_id)
            arguments = {
                "project_id": "platform",
                "request_id": request_id,
                "change": {
                    "op": "add_fact",
                    "kind": "fact",
                    "text": f"Service {index}-{n} pages its owner first.",
                },
                "evidence": [{"ref": f"runbooks/{index}-{n}.md", "trust": "trusted"}],
            }
            receipt = _call(client, port, "propose_memory", arguments, out)
            with out.lock:
                if receipt is None:
                    out.unanswered.append(request_id)
                else:
                    out.accepted[request_id] = receipt["proposal_id"]
            task = {"project_id": "platform", "task": f"who is paged first for service {index}-{n}"}
            if _call(client, port, "get_context", task, out) is not None:
                with out.lock:
                    out.reads += 1
            time.sleep(0.15)  # bounded load: an agent's pace, not a flood


def _faults(fleet: Fleet) -> None:
    """The fault schedule, one after another while the load runs."""
    time.sleep(3)
    fleet.kill_and_restart("web1")
    time.sleep(2)
    fleet.kill_and_restart("worker1")
    time.sleep(2)
    fleet.kill_and_restart("beat")
    time.sleep(2)
    fleet.kill_and_restart("redis")
    time.sleep(3)
    fleet.pg("-m", "fast", "-l", str(fleet.root / "pg.log"), "restart")
    fleet.restarts["postgresql"] += 1
    time.sleep(2)
    fleet.kill_and_restart("worker2")


def _redelivery(fleet: Fleet, token: str, out: Outcomes) -> None:
    """The broker delivers one consolidation task twice, to both workers at once.

    Both workers are stopped (SIGSTOP) while proposals pile up and the same task message (one task
    id) is published twice, as Redis does when a task outlives its visibility timeout or its
    worker dies before acknowledging it; then both resume and race for the same work. The
    database's claim must still give every proposal exactly one effect.
    """
    for name in ("worker1", "worker2"):
        fleet.processes[name].send_signal(signal.SIGSTOP)
    try:
        _agent_burst(token, out)
        workspace_id = _rows(fleet.database_url, "SELECT id FROM workspaces_workspace WHERE slug = 'fleet'")[
            0
        ][0]
        broker = Celery(broker=fleet.env["CELERY_BROKER_URL"])
        task_id = f"redelivered-{uuid.uuid4().hex}"
        for _ in range(2):
            broker.send_task(CONSOLIDATE_TASK, args=(workspace_id,), task_id=task_id, queue="fleet")
        broker.close()
    finally:
        for name in ("worker1", "worker2"):
            fleet.processes[name].send_signal(signal.SIGCONT)


def _agent_burst(token: str, out: Outcomes, count: int = 20) -> None:
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": PROTOCOL,
    }
    with httpx.Client(headers=headers, timeout=30) as client:
        for n in range(count):
            request_id = f"fleet-redelivery-{n}-{uuid.uuid4().hex[:8]}"
            out.sent.add(request_id)
            arguments = {
                "project_id": "platform",
                "request_id": request_id,
                "change": {"op": "add_fact", "kind": "fact", "text": f"Queue {n} drains before a deploy."},
                "evidence": [{"ref": f"runbooks/queue-{n}.md", "trust": "trusted"}],
            }
            receipt = _call(client, WEB_PORTS[n % 2], "propose_memory", arguments, out)
            if receipt is None:
                out.unanswered.append(request_id)
            else:
                out.accepted[request_id] = receipt["proposal_id"]


def _redelivered(fleet: Fleet) -> int:
    """Consolidation task ids the workers received more than once (from their logs)."""
    received: Counter[str] = Counter()
    for log in fleet.root.glob("worker*.log"):
        for line in log.read_text(errors="replace").splitlines():
            if line.rstrip().endswith("received") and f"{CONSOLIDATE_TASK}[" in line:
                received[line.split(f"{CONSOLIDATE_TASK}[", 1)[1].split("]", 1)[0]] += 1
    return sum(1 for n in received.values() if n > 1)


def _rows(url: str, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchall()


def test_the_fleet_survives_kill_9_and_restarts_with_nothing_lost_or_doubled(fleet: Fleet) -> None:
    tokens = [
        fleet.manage(
            "issue_token", "fleet", "--actor", f"agent{i}@fleet", "--zone", "claude", "--role", "contributor"
        ).strip()
        for i in range(CREDENTIALS)
    ]
    out = Outcomes()
    agents = [threading.Thread(target=_agent, args=(token, i, out)) for i, token in enumerate(tokens)]
    for agent in agents:
        agent.start()
    _faults(fleet)
    for agent in agents:
        agent.join(timeout=300)
    assert not any(agent.is_alive() for agent in agents), "the load is bounded"

    url = fleet.database_url
    _redelivery(fleet, tokens[0], out)
    pending = "SELECT count(*) FROM memory_proposal WHERE status IN ('queued', 'quarantined')"
    _wait(lambda: _rows(url, pending)[0][0] == 0, "every proposal to be decided", timeout=120)

    stored = dict(_rows(url, "SELECT request_id, count(*) FROM memory_proposal GROUP BY request_id"))
    statuses = Counter(dict(_rows(url, "SELECT status, count(*) FROM memory_proposal GROUP BY status")))
    effects = _rows(
        url,
        "SELECT proposal_id, count(*) FROM memory_fact WHERE proposal_id IS NOT NULL GROUP BY proposal_id",
    )
    published_without_effect = _rows(
        url,
        "SELECT count(*) FROM memory_proposal p WHERE p.status = 'published' "
        "AND NOT EXISTS (SELECT 1 FROM memory_fact f WHERE f.proposal_id = p.id)",
    )[0][0]
    lost = [r for r in out.accepted if r not in stored]
    duplicated = [r for r, n in stored.items() if n > 1] + [p for p, n in effects if n > 1]
    # Both deliveries of the duplicated task run (a liveness wait: they may still be queued).
    _wait(lambda: _redelivered(fleet) >= 1, "the duplicated task to run twice", timeout=60)
    redelivered = _redelivered(fleet)
    ledger = fleet.manage("verify_ledger", "fleet")

    print(
        "\nFleet: "
        f"proposals sent {len(out.sent)}, accepted {len(out.accepted)}, stored {sum(stored.values())}, "
        f"published {statuses['published']}, rejected {statuses['rejected']}, lost {len(lost)}, "
        f"duplicated {len(duplicated)}, unanswered {len(out.unanswered)}; reads {out.reads}; "
        f"retryable errors seen {dict(out.retryable)}; tasks redelivered {redelivered}; "
        f"restarts survived {dict(fleet.restarts)}; {ledger.strip()}"
    )
    assert out.fatal == [], out.fatal
    assert out.unanswered == []
    assert len(out.accepted) == len(out.sent) == CREDENTIALS * PROPOSALS_PER_CREDENTIAL + 20
    assert redelivered >= 1, "the duplicated task message reached the workers twice"
    assert lost == []
    assert duplicated == []
    assert published_without_effect == 0
    assert statuses["published"] == len(out.accepted), statuses
    assert "ledger intact" in ledger
    assert sum(fleet.restarts.values()) == 6
    # web1 ran the shared embedder (it started first) and its kill -9 ended it too; web2 took it
    # over, and the restarted web1 left it there: one answers, for both.
    if local_model.model_zip() is not None:
        assert shared.answers(fleet.root / "embedder.sock")
        services = {name: shared_embedders(fleet.processes[name].pid) for name in ("web1", "web2")}
        assert sorted(len(pids) for pids in services.values()) == [0, 1], services
