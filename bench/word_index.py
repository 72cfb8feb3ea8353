"""The word index's memory and speed on a vocabulary and on one-off tokens: `python bench/word_index.py`.

get_context and search_memory rank every project's items with an in-process BM25 index
(memory.lexical_index). Its memory grows with the project's postings and its distinct words.
The other benchmarks' corpora hold a few thousand distinct words; engineering notes also hold
words met once (tickets, hashes, versions, paths), and each distinct word costs memory of its
own. This script builds the index of ITEMS generated items in a fresh process per corpus, and
prints per corpus: distinct words, postings, the index's resident memory (the process's growth
while building it, freed scratch handed back), the build's peak above where it started (VmHWM:
what the machine must have room for), build time, the time to add 50 new items (the first time
after the build, then the median of five more times), and a query's ranking time.

- "vocabulary": 25 words per item drawn from 2,000 (the shape of bench/run.py's corpus);
- "one-off tokens": the same, plus a ticket number, a commit hash and a version per item.

Nothing touches a database: the rows are generated in memory.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ("vocabulary", "one-off tokens")
COMMON_WORDS = 2_000
WORDS_PER_ITEM = 25
ADDED_ITEMS = 50
# Extensions timed one after another: the first after a build pays for fresh pages (glibc's
# heap then grows), the later ones are what publishing costs a serving process each time.
EXTENSIONS = 6
QUERIES = 200


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _rss_mb() -> float:
    return _status_mb("VmRSS")


def _peak_reset() -> None:
    """Start this process's peak resident size (VmHWM) over from its current size."""
    Path("/proc/self/clear_refs").write_text("5")


def _text(rng: random.Random, common: list[str], one_off: bool, i: int) -> str:
    text = " ".join(rng.choices(common, k=WORDS_PER_ITEM))
    if one_off:
        text += f" ticket-{rng.randrange(10**7)} sha{rng.getrandbits(40):x} v{i}.{rng.randrange(99)}"
    return text


def measure(corpus: str, items: int) -> dict[str, float]:
    """The figures of one corpus, in this process (run it in a fresh one)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "unforgetter.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from memory import lexical_index
    from memory.heap import release_freed_memory

    rng = random.Random(20261206)
    common = [f"term{i}" for i in range(COMMON_WORDS)]
    one_off = corpus == "one-off tokens"
    rows = [(i, "fact", "internal", "active", _text(rng, common, one_off, i)) for i in range(1, items + 1)]
    lexical_index.words("warm the stemmer up")
    release_freed_memory()
    before = _rss_mb()
    _peak_reset()
    started = time.perf_counter()
    index = lexical_index._built(iter(rows))
    built = time.perf_counter() - started
    peak = _status_mb("VmHWM") - before
    release_freed_memory()
    resident = _rss_mb() - before  # the generated rows were there before and after
    grown, extended = index, []
    for extension in range(EXTENSIONS):
        first = items + extension * ADDED_ITEMS
        more = [
            (first + i, "fact", "internal", "active", _text(rng, common, one_off, first + i))
            for i in range(1, ADDED_ITEMS + 1)
        ]
        started = time.perf_counter()
        grown = lexical_index._extended(grown, more)
        extended.append((time.perf_counter() - started) * 1000)
    times = []
    for _ in range(QUERIES):
        query = lexical_index.words(" ".join(rng.choices(common, k=6)) + f" ticket-{rng.randrange(10**7)}")
        started = time.perf_counter()
        grown.rank(query, classes=["internal"], states=["active"], kinds=None, limit=60)
        times.append(time.perf_counter() - started)
    return {
        "words": len(index.postings),
        "postings": len(index.postings.rows),
        "resident_mb": resident,
        "build_peak_mb": peak,
        "build_s": built,
        "extend_first_ms": extended[0],
        "extend_ms": statistics.median(extended[1:]),
        "rank_ms": statistics.median(times) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--corpus", choices=CORPORA, help=argparse.SUPPRESS)  # one corpus, as JSON
    options = parser.parse_args()
    if options.corpus:
        print(json.dumps(measure(options.corpus, options.items)))
        return
    print(f"Word index of {options.items:,} items, built in a fresh process per corpus")
    header = ["corpus", "distinct words", "postings", "resident", "build's peak", "build"]
    header += [f"+{ADDED_ITEMS} items, first / later p50", "rank p50"]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for corpus in CORPORA:
        done = subprocess.run(
            [sys.executable, __file__, "--items", str(options.items), "--corpus", corpus],
            capture_output=True,
            text=True,
            check=True,
        )
        f = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"| {corpus} | {f['words']:,} | {f['postings']:,} | {f['resident_mb']:.1f} MB | "
            f"{f['build_peak_mb']:.1f} MB | {f['build_s']:.2f} s | "
            f"{f['extend_first_ms']:.1f} / {f['extend_ms']:.1f} ms | {f['rank_ms']:.2f} ms |"
        )


if __name__ == "__main__":
    main()
