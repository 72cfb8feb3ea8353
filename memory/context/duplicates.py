"""Near-duplicate items: the same fact imported or proposed twice takes one slot in a bundle.

Two items are the same when their telling words are (case, punctuation and stop words aside),
or when their vectors, where both have one, are at least DUPLICATE_COSINE alike and they hold
the same numbers. Vectors alone would merge facts that differ in what matters most: "retries
5 times" and "retries 6 times" are 0.96 alike under all-MiniLM-L6-v2. The first one offered (the
better ranked) is kept.
"""

from __future__ import annotations

import re

import numpy as np

from memory.lexical_index import split_words
from memory.stopwords import STOP_WORDS

DUPLICATE_COSINE = 0.95
_DIGIT_RE = re.compile(r"\d")


def words_key(text: str) -> str:
    """The item's telling words, in order: equal keys mean the same statement."""
    return " ".join(w for w in split_words(text) if w not in STOP_WORDS)


def _numbers(text: str) -> frozenset[str]:
    """The words holding a digit (or anything else but letters)."""
    if _DIGIT_RE.search(text) is None and text.isascii():
        return frozenset()
    return frozenset(w for w in split_words(text) if not w.isalpha())


class NearDuplicates:
    """Remembers the items kept so far, and tells whether another one repeats one of them."""

    def __init__(self, vectors: dict[int, np.ndarray]) -> None:
        self._vectors = vectors
        self._keys: set[str] = set()
        self._kept: list[tuple[np.ndarray, frozenset[str]]] = []

    def repeats(self, fact_id: int, text: str) -> bool:
        key = words_key(text)
        if key in self._keys:
            return True
        vector = self._vectors.get(fact_id)
        numbers = _numbers(text)
        if vector is not None and any(
            nums == numbers and float(kept @ vector) >= DUPLICATE_COSINE for kept, nums in self._kept
        ):
            return True
        self._keys.add(key)
        if vector is not None:
            self._kept.append((vector, numbers))
        return False
