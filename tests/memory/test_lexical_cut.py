"""The word index's cut: the rows scoring at least the limit-th best score, found through the
blocks' maxima, are exactly those a partition of every row's score finds."""

from __future__ import annotations

import numpy as np
import pytest

from memory.lexical_index import CUT_BLOCK, _best_rows


def _partitioned(scores: np.ndarray, limit: int) -> np.ndarray:
    """The rows by a partition of every score: what rank() did before the blocks' bound."""
    count = len(scores)
    cut = np.partition(scores, count - limit)[count - limit] if count > limit else 0.0
    return np.flatnonzero(scores >= cut) if cut > 0 else np.flatnonzero(scores)


def _scores(rows: int, matched: float, distinct: int | None, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    scores = np.zeros(rows, np.float32)
    hit = rng.random(rows) < matched
    values = rng.random(int(hit.sum())).astype(np.float32) * 10
    if distinct is not None:  # few distinct scores: long runs of ties at the cut
        values = np.round(values * distinct / 10).astype(np.float32)
    scores[hit] = values
    return scores


@pytest.mark.parametrize("rows", [0, 1, 50, CUT_BLOCK * 136 - 1, CUT_BLOCK * 136, 10_000, 100_003])
@pytest.mark.parametrize("matched", [0.0, 0.0005, 0.01, 0.3, 1.0])
@pytest.mark.parametrize("distinct", [None, 3])
def test_the_rows_at_or_above_the_cut_are_those_a_full_partition_finds(
    rows: int, matched: float, distinct: int | None
) -> None:
    scores = _scores(rows, matched, distinct, seed=rows + int(matched * 1000))
    for limit in (1, 66, 136, 5_000):
        found = _best_rows(scores, limit)
        assert found.tolist() == _partitioned(scores, limit).tolist()


def test_a_score_in_the_rows_past_the_last_whole_block_is_not_missed() -> None:
    scores = np.zeros(CUT_BLOCK * 200 + 7, np.float32)
    scores[: CUT_BLOCK * 200 : CUT_BLOCK] = 1.0  # one low score in every whole block
    scores[-1] = 5.0  # the best score, in the partial block at the end
    assert _best_rows(scores, 1).tolist() == [len(scores) - 1]
    assert len(_best_rows(scores, 150)) == 200 + 1  # the cut ties every 1.0: all of them stay
