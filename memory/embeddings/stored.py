"""The stored vectors of some facts, as one matrix: what a bundle's near-duplicate check compares.

A vector index reads them in one gather (`VectorIndex.vectors_of`); kept as the matrix it made, a
row per fact, they are compared all at once (memory.context.duplicates) without a Python object
per vector or a copy back into a matrix.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np


class StoredVectors(Mapping[int, np.ndarray]):
    """Fact id -> its float32 vector: row n of `matrix` is the vector of `ids[n]`."""

    __slots__ = ("_rows", "ids", "matrix")

    def __init__(self, ids: list[int], matrix: np.ndarray) -> None:
        if len(ids) != len(matrix):
            raise ValueError("one row per fact id")
        self.ids = ids
        self.matrix = matrix
        self._rows = dict(zip(ids, range(len(ids)), strict=True))

    @classmethod
    def of(cls, vectors: Mapping[int, np.ndarray]) -> StoredVectors:
        """These vectors as one matrix (the same values, in the mapping's order)."""
        if isinstance(vectors, StoredVectors):
            return vectors
        ids = list(vectors)
        if not ids:
            return cls([], np.zeros((0, 0), np.float32))
        return cls(ids, np.stack([vectors[i] for i in ids]))

    def __getitem__(self, fact_id: int) -> np.ndarray:
        row: np.ndarray = self.matrix[self._rows[fact_id]]
        return row

    def __contains__(self, fact_id: object) -> bool:
        return fact_id in self._rows

    def __iter__(self) -> Iterator[int]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)
