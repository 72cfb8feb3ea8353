"""Near-duplicate items: the same fact imported or proposed twice takes one slot in a bundle.

Two items are the same when their telling words are (case, punctuation and stop words aside),
or when their vectors, where both have one, are at least DUPLICATE_COSINE alike and they hold
the same numbers. Vectors alone would merge facts that differ in what matters most: "retries
5 times" and "retries 6 times" are 0.96 alike under all-MiniLM-L6-v2. The first one offered (the
better ranked) is kept.
"""

from __future__ import annotations

import hashlib

import numpy as np

from memory.lexical_index import split_words
from memory.stopwords import STOP_WORDS

DUPLICATE_COSINE = 0.95
# Kept vectors whose cosine, computed all at once, is at least this much below DUPLICATE_COSINE
# cannot reach it when computed one by one (float32 rounding over a few hundred dimensions is
# orders of magnitude smaller); the others are decided one by one, exactly as they always were.
_SURE_MARGIN = 1e-3


# What an item's text tells (`_telling`), kept per item id for about this many items: an item's
# text never changes in place, and the same few hundred items fill most bundles of a project.
# A 16-byte digest stands for the words: about 100 bytes an item.
TELLING_KEPT = 20_000
_told: dict[int, tuple[bytes, frozenset[str]]] = {}


def _telling(fact_id: int, text: str) -> tuple[bytes, frozenset[str]]:
    """The item's telling words (a digest of them, in order) and its words holding a digit.

    Equal telling words mean the same statement; vectors alike must also hold the same numbers.
    """
    told = _told.get(fact_id)
    if told is None:
        found = split_words(text)
        key = " ".join(w for w in found if w not in STOP_WORDS)
        # The words holding a digit (or anything else but letters) must match too.
        numbers = frozenset(w for w in found if not w.isalpha())
        told = (hashlib.blake2b(key.encode(), digest_size=16).digest(), numbers)
        if len(_told) >= TELLING_KEPT:
            _told.clear()
        _told[fact_id] = told
    return told


def telling_clear() -> None:
    """Forget what items' texts told (for writes that change a text in place, e.g. tests)."""
    _told.clear()


class _Kept:
    """The vectors kept for one set of numbers, as given and as the rows of one matrix."""

    def __init__(self, vector: np.ndarray) -> None:
        self.vectors = [vector]
        self.matrix = np.empty((8, len(vector)), dtype=np.float32)
        self.matrix[0] = vector

    def repeated_by(self, vector: np.ndarray) -> bool:
        count = len(self.vectors)
        # einsum over the few vectors kept for these numbers (a handful per bundle).
        rough = np.einsum("ij,j->i", self.matrix[:count], vector)
        near = np.flatnonzero(rough >= DUPLICATE_COSINE - _SURE_MARGIN).tolist()
        return any(float(self.vectors[i] @ vector) >= DUPLICATE_COSINE for i in near)

    def add(self, vector: np.ndarray) -> None:
        count = len(self.vectors)
        if count == len(self.matrix):
            self.matrix = np.concatenate([self.matrix, np.empty_like(self.matrix)])
        self.matrix[count] = vector
        self.vectors.append(vector)


class NearDuplicates:
    """Remembers the items kept so far, and tells whether another one repeats one of them."""

    def __init__(self, vectors: dict[int, np.ndarray]) -> None:
        self._vectors = vectors
        self._keys: set[bytes] = set()
        # The vectors kept so far, by the item's words holding a digit: only those can match.
        self._kept: dict[frozenset[str], _Kept] = {}

    def repeats(self, fact_id: int, text: str) -> bool:
        key, numbers = _telling(fact_id, text)
        if key in self._keys:
            return True
        vector = self._vectors.get(fact_id)
        if vector is not None:
            alike = self._kept.get(numbers)
            if alike is None:
                self._kept[numbers] = _Kept(vector)
            elif alike.repeated_by(vector):
                return True
            else:
                alike.add(vector)
        self._keys.add(key)
        return False
