"""Paired A/B of two trees over HTTP: the figure a change moves, on a machine whose speed drifts.

    python bench/ab.py --base REV --database-url URL [--tool search_memory] [--calls 800]

On this machine kind the same code reads up to 30-40% apart from one run to the next, minutes
later, so a before/after pair of `make bench` runs cannot show a change of a few tenths of a
millisecond. This serves the database (one `bench/quality.py` seeded and embedded, or with
`--corpus run` one `bench/run.py --keep` seeded: bench/asked.py) with one worker of each tree at
once: A, the revision REV, checked out as a git worktree beside the system's temporary files and
set up with `make setup` on first use (it shares this tree's model files), and B, this working
tree. It issues a reader token, warms both servers, then asks each of them new tasks (or
questions) in turns of `--block` calls, A first in one round and B first in the next, so that both
meet the machine as it is at nearly the same moment, and prints each side's p50 and p95 and the
median of the paired differences (B minus A, the k-th call of each side).

With `--concurrent SECONDS` it measures throughput instead: requests/s of 8 clients on kept-alive
connections (bench/run.py's `concurrent_rps`), each side for SECONDS in turn, A first in one round
and B first in the next (`--rounds`), and prints each side's median and the median ratio B / A
of a round's two figures.

Turns of a block rather than alternated calls: the work a server does after its answer (the audit
record of a bundle) would land on the other server's next call, crediting a change that moves such
work with time it did not save. An A/A run (`--base HEAD` on a clean tree) reads within about
0.25 ms. The worktree is kept for the next run (`git worktree remove` it when done).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import run
from asked import CORPORA, asked
from corpus import TOOL_PHRASINGS


@dataclass(frozen=True)
class Turn:
    """`count` calls to one side (0: A, 1: B), starting at the `at`-th of that side's texts."""

    side: int
    at: int
    count: int


def turns(calls: int, block: int) -> Iterator[Turn]:
    """`calls` calls to each side in turns of `block`, the side that goes first alternating."""
    for round_number, at in enumerate(range(0, calls, block)):
        count = min(block, calls - at)
        first = round_number % 2
        yield Turn(first, at, count)
        yield Turn(1 - first, at, count)


@dataclass(frozen=True)
class Summary:
    a_p50: float
    a_p95: float
    b_p50: float
    b_p95: float
    paired: float  # median of B - A, call by call
    calls: int


def summary(a: list[float], b: list[float]) -> Summary:
    """Both sides' p50 and p95 and the median of their paired differences (same length each)."""
    if len(a) != len(b) or not a:
        raise ValueError("both sides need the same number of calls, at least one")

    def p95(values: list[float]) -> float:
        return sorted(values)[min(len(values) - 1, round(0.95 * (len(values) - 1)))]

    return Summary(
        statistics.median(a),
        p95(a),
        statistics.median(b),
        p95(b),
        statistics.median(y - x for x, y in zip(a, b, strict=True)),
        len(a),
    )


def worktree(revision: str) -> Path:
    """REV checked out beside the temporary files and set up, kept for later runs."""
    commit = subprocess.run(
        ["git", "rev-parse", "--verify", f"{revision}^{{commit}}"],
        cwd=run.ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    tree = Path(tempfile.gettempdir()) / "unforgetter-ab" / commit[:12]
    if not (tree / ".git").exists():
        tree.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), commit], cwd=run.ROOT, check=True)
    models = tree / "var" / "models"
    if not models.exists():
        models.parent.mkdir(parents=True, exist_ok=True)
        models.symlink_to(run.ROOT / "var" / "models", target_is_directory=True)
    subprocess.run(["make", "setup"], cwd=tree, check=True, stdout=subprocess.DEVNULL)
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", required=True, help="the revision measured as A (B: this working tree)")
    parser.add_argument(
        "--database-url", required=True, help="a database bench/quality.py (or run.py) seeded"
    )
    parser.add_argument("--items", type=int, default=100_000, help="the corpus size quality.py seeded")
    parser.add_argument("--tool", choices=TOOL_PHRASINGS, default="get_context")
    parser.add_argument(
        "--corpus", choices=CORPORA, default="quality", help="the database's seed (bench/asked.py)"
    )
    parser.add_argument("--calls", type=int, default=800, help="measured calls to each side")
    parser.add_argument("--block", type=int, default=40, help="calls to one side in a turn")
    parser.add_argument("--warm", type=int, default=30, help="calls to each side first, not measured")
    parser.add_argument(
        "--concurrent", type=float, metavar="SECONDS", help="requests/s of 8 clients, SECONDS a side a round"
    )
    parser.add_argument("--rounds", type=int, default=6, help="rounds of --concurrent")
    options = parser.parse_args()
    base = worktree(options.base)
    argument = TOOL_PHRASINGS[options.tool][0]
    needed = 2 * (options.warm + options.calls)
    texts, project, workspace, _ = asked(options.corpus, options.tool, needed, items=options.items)
    # Each side its own texts, none asked twice: a text's vector and bundle are cached per server.
    sides = [texts[side::2] for side in (0, 1)]
    token = run.manage(
        options.database_url, "issue_token", workspace, "--actor", "bench@ab", "--zone", "claude"
    ).strip()
    servers = [
        run.serve(options.database_url, root=base, python=str(base / ".venv" / "bin" / "python")),
        run.serve(options.database_url),
    ]
    if options.concurrent:
        try:
            throughput(options, servers, token, project, sides, argument)
        finally:
            for server in servers:
                server.stop()
        return
    clients = [run.McpHttp(server.url, token) for server in servers]
    try:
        for side in (0, 1):
            for text in sides[side][: options.warm]:
                clients[side].call(options.tool, {"project_id": project, argument: text})
        times: list[list[float]] = [[], []]
        for turn in turns(options.calls, options.block):
            first = options.warm + turn.at
            for text in sides[turn.side][first : first + turn.count]:
                started = time.perf_counter()
                clients[turn.side].call(options.tool, {"project_id": project, argument: text})
                times[turn.side].append((time.perf_counter() - started) * 1000)
    finally:
        for client in clients:
            client.close()
        for server in servers:
            server.stop()
    found = summary(*times)
    print(f"{options.tool}, {found.calls} new texts each, in turns of {options.block}:")
    print("| | p50 ms | p95 ms |")
    print("|---|---|---|")
    print(f"| A: {options.base} | {found.a_p50:.2f} | {found.a_p95:.2f} |")
    print(f"| B: this tree | {found.b_p50:.2f} | {found.b_p95:.2f} |")
    print(f"median paired difference B - A: {found.paired:+.3f} ms")


def throughput(
    options: argparse.Namespace,
    servers: list[run.Server],
    token: str,
    project: str,
    sides: list[list[str]],
    argument: str,
) -> None:
    """Requests/s of 8 clients on each side in turns; each call's text new to its server."""

    def rate(side: int, tag: str, seconds: float) -> float:
        texts = sides[side]

        def call(client: run.McpHttp, i: int) -> None:
            client.call(options.tool, {"project_id": project, argument: f"{texts[i % len(texts)]} {tag}{i}"})

        return run.concurrent_rps(call, servers[side].url, token, seconds)[0]

    for side in (0, 1):
        rate(side, "w", 1.0)  # warm-up, not counted
    rates: list[list[float]] = [[], []]
    for round_number in range(options.rounds):
        first = round_number % 2
        for side in (first, 1 - first):
            rates[side].append(rate(side, f"r{round_number}c", options.concurrent))
    ratios = [b / a for a, b in zip(*rates, strict=True)]
    print(
        f"{options.tool}, requests/s of 8 clients, {options.rounds} rounds of {options.concurrent:g} s each:"
    )
    print("| | median req/s | rounds |")
    print("|---|---|---|")
    for side, name in ((0, f"A: {options.base}"), (1, "B: this tree")):
        each = ", ".join(f"{r:.0f}" for r in rates[side])
        print(f"| {name} | {statistics.median(rates[side]):.0f} | {each} |")
    print(f"median ratio B / A: {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
