"""Sentence embeddings: the pluggable embedder, the query-vector cache and the vector index.

An embedder turns texts into unit-length float32 rows (`Embedder`). Which one runs is the
`EMBEDDER` setting: "local" (all-MiniLM-L6-v2 from its PyPI package, numpy on the CPU; see
memory.embeddings.minilm), "openai" (any OpenAI-compatible `/embeddings` endpoint, see
memory.embeddings.remote) or "off". With none available retrieval is lexical alone, and every
vector-dependent step is skipped.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Protocol

import numpy as np
from django.conf import settings

from memory.embeddings import minilm, remote

QUERY_CACHE_SIZE = 2048


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
        path = minilm.model_zip()
        return minilm.MiniLM(path) if path else None
    if kind == "openai" and url:
        return remote.RemoteEmbedder(url=url, model=model, api_key=settings.UNFORGETTER["EMBEDDINGS_API_KEY"])
    return None


class _QueryVectors:
    """The vector of each recent query or task text, per embedder: a repeated question costs nothing."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()

    def get(self, model: Embedder, text: str) -> np.ndarray:
        key = (model.name, text)
        with self._lock:
            cached = self._vectors.get(key)
            if cached is not None:
                self._vectors.move_to_end(key)
                return cached
        vector: np.ndarray = model.embed([text])[0]
        with self._lock:
            self._vectors[key] = vector
            while len(self._vectors) > self._size:
                self._vectors.popitem(last=False)
        return vector

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()


query_vectors = _QueryVectors(QUERY_CACHE_SIZE)
