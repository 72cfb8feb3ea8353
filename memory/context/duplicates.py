"""Near-duplicate items: the same fact imported or proposed twice takes one slot in a bundle.

Two items are the same when their telling words are (case, punctuation and stop words aside),
or when their vectors, where both have one, are at least DUPLICATE_COSINE alike and they hold
the same numbers. Vectors alone would merge facts that differ in what matters most: "retries
5 times" and "retries 6 times" are 0.96 alike under all-MiniLM-L6-v2. The first one offered (the
better ranked) is kept.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from memory.embeddings.stored import StoredVectors
from memory.lexical_index import split_words, telling

DUPLICATE_COSINE = 0.95
# Pairs whose cosine, computed all at once, is at least this much below DUPLICATE_COSINE cannot
# reach it when computed one by one (float32 rounding over a few hundred dimensions is orders of
# magnitude smaller); the others are decided one by one, exactly as they always were.
_SURE_MARGIN = 1e-3


class NearDuplicates:
    """Remembers the items kept so far, and tells whether another one repeats one of them.

    `vectors` are the stored vectors of the items that may be offered (fact id -> vector), and
    `told` what their texts tell (`memory.lexical_index.telling`), as the project's word index
    worked it out with their words (`LexicalIndex.told_of`); an item it does not hold is told
    from its text. Which of them are alike is worked out once, on the first item offered with
    one: every pair's cosine at once (one matrix product), and the pairs that come within
    _SURE_MARGIN of DUPLICATE_COSINE decided one by one, exactly as each pair always was. An item
    then repeats a kept one when they are alike and hold the same numbers: a set lookup per item
    offered.
    """

    def __init__(
        self, vectors: Mapping[int, np.ndarray], told: Mapping[int, tuple[int, int]] | None = None
    ) -> None:
        self._vectors = vectors
        self._told = told or {}
        self._keys: set[int] = set()
        # The items kept so far that have a vector, by their words holding a digit: only those
        # can match.
        self._kept: dict[int, set[int]] = {}
        self._alike: dict[int, set[int]] | None = None

    def repeats(self, fact_id: int, text: str) -> bool:
        told = self._told.get(fact_id)
        key, numbers = told if told is not None else telling(split_words(text))
        if key in self._keys:
            return True
        if fact_id in self._vectors:
            kept = self._kept.setdefault(numbers, set())
            alike = self._alike_pairs().get(fact_id)
            if alike is not None and not alike.isdisjoint(kept):
                return True
            kept.add(fact_id)
        self._keys.add(key)
        return False

    def _alike_pairs(self) -> dict[int, set[int]]:
        """Each item's vector-alike others (cosine at least DUPLICATE_COSINE), both ways."""
        if self._alike is None:
            self._alike = _alike(self._vectors)
        return self._alike


def _alike(vectors: Mapping[int, np.ndarray]) -> dict[int, set[int]]:
    stored = StoredVectors.of(vectors)
    ids, matrix = stored.ids, stored.matrix
    rows, columns = np.nonzero(matrix @ matrix.T >= DUPLICATE_COSINE - _SURE_MARGIN)
    above = rows < columns  # each pair once, as the upper triangle holds it
    alike: dict[int, set[int]] = {}
    for row, column in zip(rows[above].tolist(), columns[above].tolist(), strict=True):
        first, second = ids[row], ids[column]
        # The one-by-one product: the same value whichever of the two comes first.
        if float(matrix[row] @ matrix[column]) >= DUPLICATE_COSINE:
            alike.setdefault(first, set()).add(second)
            alike.setdefault(second, set()).add(first)
    return alike
