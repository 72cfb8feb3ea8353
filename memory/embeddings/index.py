"""An exact in-process vector index per project: every vector of one model, cosine by matrix product.

Each process keeps one index per (project, model), as float16 rows (768 bytes per item: 77 MB at
100,000 items) scored in float32 blocks. It is cached per vector version, the project's newest
embedding id: a statement reading that one id (an index probe) tells whether vectors were added,
and only the new ones are then loaded. Fewer or older vectors (a prune or a re-embedding under
another model) reload the index whole.

The index only proposes candidates, with the kind and data class its vectors were written with;
callers check every candidate against the item's current row and the credential's scope before
anything is ranked or shown (see memory.retrieval).
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from dataclasses import dataclass

import numpy as np
from django.db.models import Max

from memory.models import Embedding

BLOCK_ROWS = 16_384


@dataclass
class VectorIndex:
    newest_id: int
    ids: np.ndarray  # int64 fact ids, one per row
    vectors: np.ndarray  # float16 (rows, dimensions)
    kinds: np.ndarray  # object array of kind names
    classes: np.ndarray  # object array of data classes

    def __len__(self) -> int:
        return len(self.ids)

    def nearest(
        self, query: np.ndarray, *, limit: int, kinds: Collection[str] | None, classes: Collection[str]
    ) -> list[tuple[int, float]]:
        """The `limit` most similar fact ids with their cosine, among the given kinds and classes."""
        if not len(self.ids) or limit <= 0:
            return []
        q = query.astype(np.float32)
        scores = np.empty(len(self.ids), dtype=np.float32)
        for start in range(0, len(self.ids), BLOCK_ROWS):
            block = self.vectors[start : start + BLOCK_ROWS].astype(np.float32)
            scores[start : start + BLOCK_ROWS] = block @ q
        allowed = np.isin(self.classes, list(classes))
        if kinds is not None:
            allowed &= np.isin(self.kinds, list(kinds))
        scores[~allowed] = -np.inf
        count = min(limit, int(allowed.sum()))
        if count == 0:
            return []
        top = np.argpartition(-scores, count - 1)[:count]
        # Best first; equal scores go to the newest item, as the lexical ranking breaks ties.
        top = top[np.lexsort((-self.ids[top], -scores[top]))]
        return [(int(self.ids[i]), float(scores[i])) for i in top]

    def vectors_of(self, fact_ids: Collection[int]) -> dict[int, np.ndarray]:
        """The stored vectors of these facts (those that have one)."""
        wanted = np.isin(self.ids, list(fact_ids))
        pairs = zip(self.ids[wanted], self.vectors[wanted], strict=True)
        return {int(i): v.astype(np.float32) for i, v in pairs}


def _rows(project_id: int, model: str, after: int) -> VectorIndex:
    rows = list(
        Embedding.objects.filter(project_id=project_id, model=model, id__gt=after)
        .order_by("id")
        .values_list("id", "fact_id", "kind", "data_class", "vector")
    )
    if not rows:
        empty = _objects([])
        return VectorIndex(after, np.zeros(0, np.int64), np.zeros((0, 0), np.float16), empty, empty)
    vectors = np.frombuffer(b"".join(bytes(r[4]) for r in rows), dtype="<f2").reshape(len(rows), -1)
    return VectorIndex(
        newest_id=rows[-1][0],
        ids=np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows)),
        vectors=vectors,
        kinds=_objects([r[2] for r in rows]),
        classes=_objects([r[3] for r in rows]),
    )


def _objects(values: list[str]) -> np.ndarray:
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def _joined(old: VectorIndex, new: VectorIndex) -> VectorIndex:
    if not len(new):
        return old
    if not len(old):
        return new
    return VectorIndex(
        newest_id=new.newest_id,
        ids=np.concatenate([old.ids, new.ids]),
        vectors=np.concatenate([old.vectors, new.vectors]),
        kinds=np.concatenate([old.kinds, new.kinds]),
        classes=np.concatenate([old.classes, new.classes]),
    )


class _Indexes:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._indexes: dict[tuple[int, str], VectorIndex] = {}

    def get(self, project_id: int, model: str) -> VectorIndex | None:
        """The project's index for this model, brought up to date; None while it has no vectors."""
        vectors = Embedding.objects.filter(project_id=project_id, model=model)
        newest = vectors.aggregate(newest=Max("id"))["newest"]
        key = (project_id, model)
        with self._lock:
            cached = self._indexes.get(key)
            if newest is None:
                self._indexes.pop(key, None)
                return None
            if cached is not None and cached.newest_id == newest:
                return cached
            if cached is not None and cached.newest_id < newest:
                index = _joined(cached, _rows(project_id, model, cached.newest_id))
            else:
                index = _rows(project_id, model, 0)
            self._indexes[key] = index
            return index

    def clear(self) -> None:
        with self._lock:
            self._indexes.clear()


indexes = _Indexes()
