"""The one-token attack: how much one noisy credential slows another tenant.

Seeds two workspaces (a victim and an attacker, `--items` each, the read benchmark's generated
text) on a throwaway SQLite database (or `DATABASE_URL`), then for each server configuration
(per-credential limits and query budgets off, as before the hardening; then the defaults):

1. baseline: the victim alone sends `--calls` uncached get_context calls, one after another, as
   an agent does (one call at a time, at most one every `--interval` seconds: agents think
   between calls, and a script calling flat out is what the per-credential limits slow down);
2. attack: 16 threads of ONE attacker credential send uncached get_context tasks full of the
   corpus's most common words as fast as they can (ignoring retry_after), while the victim sends
   the same number of calls again.

Prints one table: the victim's p50/p95 in each phase and the attacker's calls served/refused.
`--set NAME=VALUE` changes a setting of the defaults row (to try a limit), `--skip-before` skips
the limits-off row.
The target is the victim's p95 under attack within 2x of its baseline. Every loop is bounded.

    .venv/bin/python bench/noisy_neighbour.py [--items 20000] [--calls 150] [--threads 16] [--interval 0.25]
        [--port N] [--set NAME=VALUE] [--skip-before]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

# The read benchmark's generators and client.
from run import (
    PYTHON,
    ROOT,
    Latency,
    McpHttp,
    TextMaker,
    child_env,
    free_port,
    jsonl_lines,
    log,
    manage,
    vocabulary,
)

LIMITS_OFF = {
    "CREDENTIAL_CALLS_PER_SECOND": "0",
    "CREDENTIAL_CONCURRENCY": "0",
    "CREDENTIAL_IN_FLIGHT": "0",
    "CREDENTIAL_SERVER_MS_PER_SECOND": "0",
    "SEARCH_STATEMENT_TIMEOUT_MS": "0",
}
# The shipped defaults: unset, so settings.py decides.
LIMITS_DEFAULT: dict[str, str] = {}


@dataclass
class Phase:
    victim: Latency
    served: int = 0
    refused: int = 0


def seed(database_url: str, items: int, data_dir: Path) -> tuple[str, str, list[str]]:
    """Two workspaces of `items` each; a token for each; the corpus's most common words."""
    manage(database_url, "migrate", "--noinput", "-v", "0")
    rng = random.Random(20261202)
    words = vocabulary(3000, rng)
    maker = TextMaker(words, rng)
    tokens = []
    for slug in ("victim", "attacker"):
        manage(database_url, "create_workspace", slug)
        manage(database_url, "create_project", slug, "main", "--data-class", "internal")
        path = data_dir / f"{slug}.jsonl"
        path.write_text("".join(line + "\n" for line in jsonl_lines(items, maker, rng)), encoding="utf-8")
        started = time.perf_counter()
        manage(database_url, "import_memory", slug, "main", str(path))
        log(f"  seeded {slug}: {items:,} items in {time.perf_counter() - started:.1f}s")
        issued = manage(
            database_url, "issue_token", slug, "--actor", f"{slug}@bench", "--zone", "claude", "--ttl", "1d"
        )
        tokens.append(issued.strip().splitlines()[-1])
    common = words[:40]  # Zipf rank 0..39: the words most items contain
    return tokens[0], tokens[1], common


def serve(database_url: str, limits: dict[str, str], port: int) -> tuple[subprocess.Popen[bytes], str]:
    port = port or free_port()
    public = f"http://127.0.0.1:{port}"
    env = child_env(database_url, public)
    for name in LIMITS_OFF:
        env.pop(name, None)
    env.update(limits)
    command = [str(Path(PYTHON).parent / "uvicorn"), "unforgetter.asgi:application", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--lifespan", "on", "--no-proxy-headers", "--no-access-log"]
    process = subprocess.Popen(
        [*command, "--log-level", "warning"],
        cwd=ROOT,
        env=env,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{public}/healthz", timeout=1).status_code == 200:
                return process, public
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    process.kill()
    raise SystemExit("The server did not start.")


# Victim calls that failed (timed out or refused), over the whole run.
failed = [0]


def victim_calls(url: str, token: str, calls: int, salt: str, maker: TextMaker, interval: float) -> Latency:
    """The victim: an agent making one call at a time, at most one every `interval` seconds."""
    client = McpHttp(url, token)
    latency = Latency()
    try:
        for i in range(calls):
            task = f"{salt} {i}: {maker.sentence(6, 12)}"  # never the same task twice: uncached
            started = time.perf_counter()
            try:
                client.call("get_context", {"project_id": "main", "task": task})
            except (httpx.HTTPError, RuntimeError):
                failed[0] += 1  # counted at the time it took to fail (a timeout: 30 s)
            took = time.perf_counter() - started
            latency.samples.append(took)
            time.sleep(max(interval - took, 0))
    finally:
        client.close()
    return latency


def attack(
    url: str, token: str, common: list[str], threads: int, stop: threading.Event, phase: Phase
) -> list[threading.Thread]:
    lock = threading.Lock()

    def hammer(slot: int) -> None:
        client = McpHttp(url, token)
        rng = random.Random(slot)
        n = 0
        try:
            while not stop.is_set() and n < 1_000_000:
                n += 1
                task = " ".join(rng.sample(common, 20)) + f" {slot}-{n}"
                try:
                    client.call("get_context", {"project_id": "main", "task": task})
                    served = True
                except RuntimeError:  # rate_limited: retried at once, as an attacker would
                    served = False
                except httpx.HTTPError:
                    served = False
                with lock:
                    if served:
                        phase.served += 1
                    else:
                        phase.refused += 1
        finally:
            client.close()

    started = [threading.Thread(target=hammer, args=(i,), daemon=True) for i in range(threads)]
    for thread in started:
        thread.start()
    return started


def measure(
    database_url: str, limits: dict[str, str], tokens: tuple[str, str], common: list[str], args: Any
) -> tuple[Latency, Phase]:
    process, url = serve(database_url, limits, args.port)
    maker = TextMaker(vocabulary(3000, random.Random(7)), random.Random(8))
    try:
        victim_calls(url, tokens[0], 20, "warm-up", maker, args.interval)
        baseline = victim_calls(url, tokens[0], args.calls, "baseline", maker, args.interval)
        stop = threading.Event()
        phase = Phase(victim=Latency())
        threads = attack(url, tokens[1], common, args.threads, stop, phase)
        time.sleep(2)  # the attack is in full swing before the victim is measured
        try:
            phase.victim = victim_calls(url, tokens[0], args.calls, "attack", maker, args.interval)
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=60)
        return baseline, phase
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--calls", type=int, default=150)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument(
        "--interval", type=float, default=0.25, help="the victim's seconds between call starts (at least)"
    )
    parser.add_argument("--port", type=int, default=0, help="the server's port (default: any free one)")
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="a setting of the defaults row"
    )
    parser.add_argument("--skip-before", action="store_true", help="measure the defaults row only")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="unforgetter-noisy-"))
    database_url = os.environ.get("DATABASE_URL") or f"sqlite:///{workdir / 'noisy.sqlite3'}"
    log(f"seeding {database_url}")
    victim, attacker, common = seed(database_url, args.items, workdir)
    rows = []
    defaults = {**LIMITS_DEFAULT, **dict(pair.split("=", 1) for pair in args.set)}
    configurations = [("limits off (before)", LIMITS_OFF), ("defaults (after)", defaults)]
    for name, limits in configurations[1:] if args.skip_before else configurations:
        log(f"measuring: {name}")
        baseline, phase = measure(database_url, limits, (victim, attacker), common, args)
        rows.append((name, baseline, phase))
        log(
            f"  {name}: victim p95 alone {baseline.pct(95):.1f} ms, attacked {phase.victim.pct(95):.1f} ms; "
            f"attacker served {phase.served}, refused {phase.refused}; victim calls failed so far {failed[0]}"
        )
    engine = "PostgreSQL" if database_url.startswith("postgres") else "SQLite"
    print(f"\nOne-token attack: {args.threads} threads of one credential, {args.items:,} items per")
    print(
        f"workspace, {engine}, 1 uvicorn worker; victim: {args.calls} uncached get_context calls per phase.\n"
    )
    header = (
        "| server | victim p50 alone | victim p95 alone | victim p50 attacked | victim p95 attacked "
        "| p95 ratio | attacker served/refused |"
    )
    print(header)
    print("|---|---|---|---|---|---|---|")
    for name, baseline, phase in rows:
        ratio = phase.victim.pct(95) / baseline.pct(95)
        alone = f"{baseline.pct(50):.1f} ms | {baseline.pct(95):.1f} ms"
        print(
            f"| {name} | {alone} | {phase.victim.pct(50):.1f} ms "
            f"| {phase.victim.pct(95):.1f} ms | {ratio:.2f}x {'(<= 2x)' if ratio <= 2 else '(> 2x)'} "
            f"| {phase.served:,} / {phase.refused:,} |"
        )


if __name__ == "__main__":
    main()
