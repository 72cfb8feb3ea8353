"""Near-duplicates are decided exactly as one comparison per kept item would decide them."""

from __future__ import annotations

import numpy as np

from memory import lexical_index
from memory.context.duplicates import DUPLICATE_COSINE, NearDuplicates
from memory.embeddings.stored import StoredVectors
from memory.lexical_index import split_words
from memory.models import State
from memory.stopwords import STOP_WORDS


def _pairwise(vectors: dict[int, np.ndarray], offered: list[tuple[int, str]]) -> list[bool]:
    """The definition: each offered item against every kept one, one dot product at a time."""
    keys: set[str] = set()
    kept: list[tuple[np.ndarray, frozenset[str]]] = []
    decided = []
    for fact_id, text in offered:
        found = split_words(text)
        key = " ".join(w for w in found if w not in STOP_WORDS)
        repeated = key in keys
        vector = vectors.get(fact_id)
        if not repeated and vector is not None:
            numbers = frozenset(w for w in found if not w.isalpha())
            repeated = any(n == numbers and float(k @ vector) >= DUPLICATE_COSINE for k, n in kept)
            if not repeated:
                kept.append((vector, numbers))
        if not repeated:
            keys.add(key)
        decided.append(repeated)
    return decided


def test_vectors_at_the_threshold_are_decided_as_one_comparison_each_decides_them() -> None:
    rng = np.random.default_rng(7)
    dim, bases = 384, 12
    base = rng.standard_normal((bases, dim)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    vectors: dict[int, np.ndarray] = {}
    offered: list[tuple[int, str]] = []

    def offer(fact_id: int, vector: np.ndarray, group: int) -> None:
        # Telling words of their own (letters only); the numbers are the group's.
        vectors[fact_id] = vector.astype(np.float32)
        offered.append(
            (fact_id, f"item {group % 3} about " + "".join(chr(97 + int(d)) for d in str(fact_id)))
        )

    for b in range(bases):
        offer(10_000 + b, base[b], b)
    for fact_id in range(400):
        b = fact_id % bases
        # Near a base vector, at cosines spread around DUPLICATE_COSINE (some just either side).
        noise = rng.standard_normal(dim).astype(np.float32)
        noise -= (noise @ base[b]) * base[b]
        noise /= np.linalg.norm(noise)
        cosine = DUPLICATE_COSINE + rng.uniform(-0.0005, 0.0005)
        offer(fact_id, cosine * base[b] + np.sqrt(1 - cosine**2) * noise, b if fact_id % 5 else b + 1)
    duplicates = NearDuplicates(vectors)
    decided = [duplicates.repeats(fact_id, text) for fact_id, text in offered]
    assert decided == _pairwise(vectors, offered)
    assert any(decided)
    assert not all(decided)
    # The vectors come in any order (the index's, not the bundle's): the same decisions.
    backwards = NearDuplicates(dict(reversed(vectors.items())))
    assert [backwards.repeats(fact_id, text) for fact_id, text in offered] == decided
    # As a vector index reads them, one matrix (VectorIndex.vectors_of): the same decisions.
    stored = StoredVectors.of(dict(reversed(vectors.items())))
    assert all(np.array_equal(stored[fact_id], vector) for fact_id, vector in vectors.items())
    matrix = NearDuplicates(stored)
    assert [matrix.repeats(fact_id, text) for fact_id, text in offered] == decided
    # What the texts tell, as the word index worked it out with their words: the same decisions.
    rows = ((fact_id, "fact", "internal", State.ACTIVE, text) for fact_id, text in offered)
    index = lexical_index._built(rows)
    indexed = NearDuplicates(vectors, index.told_of([fact_id for fact_id, _ in offered]))
    assert [indexed.repeats(fact_id, text) for fact_id, text in offered] == decided
