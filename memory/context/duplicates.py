"""Near-duplicate items: the same fact imported or proposed twice takes one slot in a bundle.

Two items are the same when their telling words are (case, punctuation and stop words aside),
or when their vectors, where both have one, are at least DUPLICATE_COSINE alike and they hold
the same numbers. Vectors alone would merge facts that differ in what matters most: "retries
5 times" and "retries 6 times" are 0.96 alike under all-MiniLM-L6-v2. The first one offered (the
better ranked) is kept.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np

from memory.lexical_index import split_words
from memory.stopwords import STOP_WORDS

DUPLICATE_COSINE = 0.95
# Pairs whose cosine, computed all at once, is at least this much below DUPLICATE_COSINE cannot
# reach it when computed one by one (float32 rounding over a few hundred dimensions is orders of
# magnitude smaller); the others are decided one by one, exactly as they always were.
_SURE_MARGIN = 1e-3


# What an item's text tells (`_telling`), kept per item id for about this many items: an item's
# text never changes in place, and the same few hundred items fill most bundles of a project.
# Digests stand for the words and for the numbers, kept as one bytes object: about 115 bytes an
# item in all (a tuple of two was 70 more; the numbers as a set of strings 270 more again).
TELLING_KEPT = 20_000
DIGEST_SIZE = 16
_told: dict[int, bytes] = {}


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=DIGEST_SIZE).digest()


def _telling(fact_id: int, text: str) -> tuple[bytes, bytes]:
    """Digests of the item's telling words (in order) and of its words holding a digit (b"" for
    none).

    Equal telling words mean the same statement; vectors alike must also hold the same numbers.
    """
    told = _told.get(fact_id)
    if told is None:
        found = split_words(text)
        key = " ".join(w for w in found if w not in STOP_WORDS)
        # The words holding a digit (or anything else but letters) must match too, in any order.
        numbers = sorted({w for w in found if not w.isalpha()})
        told = _digest(key) + (_digest(" ".join(numbers)) if numbers else b"")
        if len(_told) >= TELLING_KEPT:
            _told.clear()
        _told[fact_id] = told
    return told[:DIGEST_SIZE], told[DIGEST_SIZE:]


def tell(items: Iterable[tuple[int, str]]) -> None:
    """Work out what these items' texts tell (id, text), ahead of `NearDuplicates.repeats`:
    what a caller does while it waits anyway."""
    for fact_id, text in items:
        _telling(fact_id, text)


def telling_clear() -> None:
    """Forget what items' texts told (for writes that change a text in place, e.g. tests)."""
    _told.clear()


class NearDuplicates:
    """Remembers the items kept so far, and tells whether another one repeats one of them.

    `vectors` are the stored vectors of the items that may be offered (fact id -> vector). Which
    of them are alike is worked out once, on the first item offered with one: every pair's
    cosine at once (one matrix product), and the pairs that come within _SURE_MARGIN of
    DUPLICATE_COSINE decided one by one, exactly as each pair always was. An item then repeats a
    kept one when they are alike and hold the same numbers: a set lookup per item offered.
    """

    def __init__(self, vectors: dict[int, np.ndarray]) -> None:
        self._vectors = vectors
        self._keys: set[bytes] = set()
        # The items kept so far that have a vector, by their words holding a digit: only those
        # can match.
        self._kept: dict[bytes, set[int]] = {}
        self._alike: dict[int, set[int]] | None = None

    def repeats(self, fact_id: int, text: str) -> bool:
        key, numbers = _telling(fact_id, text)
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


def _alike(vectors: dict[int, np.ndarray]) -> dict[int, set[int]]:
    ids = list(vectors)
    matrix = np.stack([vectors[i] for i in ids])
    rough = np.triu(matrix @ matrix.T >= DUPLICATE_COSINE - _SURE_MARGIN, 1)
    alike: dict[int, set[int]] = {}
    for row, column in zip(*(side.tolist() for side in np.nonzero(rough)), strict=True):
        first, second = ids[row], ids[column]
        # The one-by-one product: the same value whichever of the two comes first.
        if float(vectors[first] @ vectors[second]) >= DUPLICATE_COSINE:
            alike.setdefault(first, set()).add(second)
            alike.setdefault(second, set()).add(first)
    return alike
