"""The in-process vector index's arithmetic: sign-bit distances and reading vectors back by fact id."""

from __future__ import annotations

import numpy as np

from memory.embeddings.index import VectorIndex, _empty, _hamming, index_of, sign_bits


def _index(rows: int, seed: int = 7) -> tuple[VectorIndex, np.ndarray]:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((rows, 384), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = rng.permutation(np.arange(10, 10 + 3 * rows, 3, dtype=np.int64))  # not in row order
    index = index_of(
        vectors, ids=ids, kinds=np.zeros(rows, np.uint8), classes=np.zeros(rows, np.uint8), newest_id=rows
    )
    return index, vectors


def test_sign_bit_distances_count_every_differing_sign() -> None:
    index, vectors = _index(500)
    query = vectors[3] * -1.0
    expected = ((vectors > 0) != (query > 0)).sum(axis=1)
    assert np.array_equal(_hamming(index.signs, sign_bits(query[None, :])[0]), expected)


def test_vectors_are_read_back_by_fact_id_and_unknown_ids_are_left_out() -> None:
    index, _ = _index(300)
    asked = [int(index.ids[5]), int(index.ids[299]), int(index.ids[0]), 11, 10**9, int(index.ids[5])]
    found = index.vectors_of(asked)
    assert set(found) == {int(index.ids[5]), int(index.ids[299]), int(index.ids[0])}
    for row in (5, 299, 0):
        expected = index.codes[row].astype(np.float32) * index.scales[row]
        assert np.array_equal(found[int(index.ids[row])], expected)
    assert index.vectors_of([]) == {}
    assert _empty(0).vectors_of([1, 2]) == {}
