"""Near-duplicate items: the same fact imported or proposed twice takes one slot in a bundle.

Two items are the same when their telling words are (case, punctuation and stop words aside),
or when their vectors, where both have one, are at least DUPLICATE_COSINE alike and they hold
the same numbers. Vectors alone would merge facts that differ in what matters most: "retries
5 times" and "retries 6 times" are 0.96 alike under all-MiniLM-L6-v2. The first one offered (the
better ranked) is kept.
"""

from __future__ import annotations

import numpy as np

from memory.lexical_index import split_words
from memory.stopwords import STOP_WORDS

DUPLICATE_COSINE = 0.95


class NearDuplicates:
    """Remembers the items kept so far, and tells whether another one repeats one of them."""

    def __init__(self, vectors: dict[int, np.ndarray]) -> None:
        self._vectors = vectors
        self._keys: set[str] = set()
        # The vectors kept so far, by the item's words holding a digit: only those can match.
        self._kept: dict[frozenset[str], list[np.ndarray]] = {}

    def repeats(self, fact_id: int, text: str) -> bool:
        found = split_words(text)
        # The item's telling words, in order: equal keys mean the same statement.
        key = " ".join(w for w in found if w not in STOP_WORDS)
        if key in self._keys:
            return True
        vector = self._vectors.get(fact_id)
        if vector is not None:
            # The words holding a digit (or anything else but letters) must match too.
            numbers = frozenset(w for w in found if not w.isalpha())
            alike = self._kept.setdefault(numbers, [])
            if any(float(kept @ vector) >= DUPLICATE_COSINE for kept in alike):
                return True
            alike.append(vector)
        self._keys.add(key)
        return False
