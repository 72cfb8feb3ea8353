"""The semantic side's two costs per call, measured in process: `python bench/vectors.py ROWS`.

Embedding every benchmark item with the local model would take long on this machine kind (the
int8 model embeds about 80 items of 40 words per second and core), so `bench/run.py` embeds a few
hundred items to run the hybrid ranking end to end, and this script times what grows with the
project and what a new task costs, at the full size:

- the vector index's top-k (memory.embeddings.index.VectorIndex.nearest: sign-bit shortlist, int8
  rescoring) over ROWS unit vectors, as many as get_context asks for;
- the query embedding of a task of 5-14 words with the configured local model.

Prints one JSON object: {"topk_ms": [...], "embed_ms": [...], "embed_threads": N, "popcount":
NAME} (the compiled sign-bit distance loop this processor runs, null where it is not built). Run by
bench/run.py with the benchmark's settings; the random vectors never reach a database.
"""

from __future__ import annotations

import json
import os
import sys
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "unforgetter.settings")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
django.setup()

import numpy as np  # noqa: E402

from memory.context.compile import RANK_CANDIDATES  # noqa: E402
from memory.embeddings import embedder  # noqa: E402
from memory.embeddings.index import VectorIndex, index_of  # noqa: E402
from memory.retrieval import STALE_MARGIN  # noqa: E402
from workspaces.models import DataClass  # noqa: E402

try:
    from memory.embeddings import _kernels
except ImportError:  # not built (setup.py)
    _kernels = None  # type: ignore[assignment]

# get_context fuses RANK_CANDIDATES of each side and asks the vectors for STALE_MARGIN times more
# (memory.context.compile, at the default bounds of a bundle).
CONTEXT_DEPTH = RANK_CANDIDATES
CALLS = 60
TASK = "Change the retry policy of invoice-worker for failed payments, run {i}"


def _index(rows: int, dimensions: int) -> VectorIndex:
    rng = np.random.default_rng(20261202)
    vectors = rng.standard_normal((rows, dimensions), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return index_of(
        vectors,
        ids=np.arange(1, rows + 1, dtype=np.int64),
        kinds=np.zeros(rows, dtype=np.uint8),
        classes=np.zeros(rows, dtype=np.uint8),
        newest_id=rows,
    )


def main() -> None:
    rows = int(sys.argv[1])
    model = embedder()
    dimensions = 384
    embed_ms: list[float] = []
    if model is not None:
        model.embed(["warm up the model"])
        for i in range(CALLS):
            started = time.perf_counter()
            model.embed([TASK.format(i=i)])
            embed_ms.append((time.perf_counter() - started) * 1000)
    index = _index(rows, dimensions)
    queries = _index(CALLS, dimensions).codes.astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    topk_ms = []
    for query in queries:
        started = time.perf_counter()
        index.nearest(query, limit=CONTEXT_DEPTH * STALE_MARGIN, kinds=None, classes=DataClass.values)
        topk_ms.append((time.perf_counter() - started) * 1000)
    # The local embedder's threads per call (EMBEDDER_THREADS, or as it chose by measuring).
    threads = getattr(model, "threads", None)
    popcount = _kernels.popcount() if _kernels is not None else None
    timings = {"topk_ms": topk_ms, "embed_ms": embed_ms, "embed_threads": threads, "popcount": popcount}
    print(json.dumps(timings))


if __name__ == "__main__":
    main()
