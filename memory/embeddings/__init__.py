"""Sentence embeddings: the pluggable embedder, the query-vector cache and the vector index.

An embedder turns texts into unit-length float32 rows (`Embedder`). Which one runs is the
`EMBEDDER` setting: "local" (all-MiniLM-L6-v2 from its PyPI package, int8 on the CPU with ONNX
Runtime; see memory.embeddings.minilm), "openai" (any OpenAI-compatible `/embeddings` endpoint, see
memory.embeddings.remote) or "off". With none available retrieval is lexical alone, and every
vector-dependent step is skipped.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

import numpy as np
from django.conf import settings

from memory.embeddings import remote

QUERY_CACHE_SIZE = 2048
# Texts embedded ahead of their call at once per process (one core's worth on a small machine).
PREFETCH_THREADS = 2


class Embedder(Protocol):
    """Turns texts into unit-length vectors; `name` is stored with every vector it makes."""

    name: str

    def embed(self, texts: list[str]) -> np.ndarray: ...


_lock = threading.Lock()
_configured: dict[tuple[str, str, str], Embedder | None] = {}


def embedder() -> Embedder | None:
    """The configured embedder, built once per process and setting; None when there is none."""
    conf = settings.UNFORGETTER
    key = (conf["EMBEDDER"], conf["EMBEDDINGS_URL"], conf["EMBEDDINGS_MODEL"])
    if key not in _configured:
        with _lock:
            if key not in _configured:
                _configured[key] = _build(*key)
    return _configured[key]


def _build(kind: str, url: str, model: str) -> Embedder | None:
    if kind == "local":
        # Imported here: ONNX Runtime is 28-37 MB of every process that loads it,
        # and a process with another embedder (or none) never runs it.
        from memory.embeddings import minilm  # noqa: PLC0415

        path = minilm.model_zip()
        conf = settings.UNFORGETTER
        return (
            minilm.MiniLM(path, folder=conf["MODELS_DIR"], threads=conf["EMBEDDER_THREADS"]) if path else None
        )
    if kind == "openai" and url:
        return remote.RemoteEmbedder(url=url, model=model, api_key=settings.UNFORGETTER["EMBEDDINGS_API_KEY"])
    return None


class _QueryVectors:
    """The vector of each recent query or task text, per embedder: a repeated question costs nothing.

    `prefetch` starts embedding a text on a thread of its own, so that a call's other work (the
    credential's publication, the standing part, the word ranking) runs meanwhile; `get` then
    waits for that result instead of embedding the text again. ONNX Runtime releases the GIL
    while the model runs, so the two overlap.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._pending: dict[tuple[str, str], Future[np.ndarray]] = {}
        self._executor: ThreadPoolExecutor | None = None

    def get(self, model: Embedder, text: str) -> np.ndarray:
        key = (model.name, text)
        with self._lock:
            cached = self._vectors.get(key)
            if cached is not None:
                self._vectors.move_to_end(key)
                return cached
            pending = self._pending.get(key)
        if pending is not None:
            return pending.result()
        return self._embedded(model, text)

    def pending(self, model: Embedder, text: str) -> bool:
        """Whether `text` is being embedded in the background and its vector is not ready yet."""
        with self._lock:
            pending = self._pending.get((model.name, text))
        return pending is not None and not pending.done()

    def prefetch(self, model: Embedder, text: str) -> None:
        """Start embedding `text` in the background unless it is cached or under way."""
        key = (model.name, text)
        with self._lock:
            if key in self._vectors or key in self._pending:
                return
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=PREFETCH_THREADS, thread_name_prefix="embed")
            self._pending[key] = self._executor.submit(self._embedded, model, text)

    def _embedded(self, model: Embedder, text: str) -> np.ndarray:
        key = (model.name, text)
        try:
            vector: np.ndarray = model.embed([text])[0]
        except BaseException:
            with self._lock:
                self._pending.pop(key, None)
            raise
        with self._lock:
            self._vectors[key] = vector
            while len(self._vectors) > self._size:
                self._vectors.popitem(last=False)
            self._pending.pop(key, None)
        return vector

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()


query_vectors = _QueryVectors(QUERY_CACHE_SIZE)
