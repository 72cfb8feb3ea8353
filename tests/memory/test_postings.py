"""The word index's postings: built from blocks of rows, and extended with new rows."""

from __future__ import annotations

import random

import numpy as np

from memory.lexical_index import _built, words
from memory.postings import Block, Postings


def _blocks(pairs: dict[tuple[int, int], int], rows_per_block: int) -> list[Block]:
    """(word, row) -> count, as a build groups them: blocks of rows, each sorted by word then row."""
    blocks = []
    top = max(row for _, row in pairs) + 1
    for first in range(0, top, rows_per_block):
        held = sorted((w, r, c) for (w, r), c in pairs.items() if first <= r < first + rows_per_block)
        if held:
            w, r, c = zip(*held, strict=True)
            words = sorted(set(w))
            runs = [w.count(word) for word in words]
            arrays = (np.array(words, np.int32), np.array(runs, np.int32), np.array(r, np.int32))
            blocks.append((*arrays, np.array(c, np.uint8)))
    return blocks


def _expected(pairs: dict[tuple[int, int], int], word: int) -> tuple[list[int], list[int]]:
    held = sorted((r, c) for (w, r), c in pairs.items() if w == word)
    return [r for r, _ in held], [c for _, c in held]


def _numbered(pairs: dict[tuple[int, int], int], terms: dict[str, int]) -> dict[tuple[int, int], int]:
    return {(terms[f"w{w}"], r): c for (w, r), c in pairs.items()}


def _as_lists(found: tuple[np.ndarray, np.ndarray] | None) -> tuple[list[int], list[int]]:
    assert found is not None
    return found[0].tolist(), found[1].tolist()


def test_blocks_are_placed_word_by_word_with_rows_ascending() -> None:
    rng = random.Random(7)
    pairs = {(rng.randrange(40), rng.randrange(500)): rng.randrange(1, 9) for _ in range(3000)}
    held = sorted({w for w, _ in pairs})
    terms = {f"w{w}": i for i, w in enumerate(held)}
    blocks = _blocks(_numbered(pairs, terms), rows_per_block=64)
    postings = Postings.of_blocks(terms, blocks)
    assert blocks == []  # each block is let go once placed: a build never holds both
    assert len(postings) == len(held)
    for w in held:
        assert _as_lists(postings.get(f"w{w}")) == _expected(pairs, w)
    assert postings.get("absent") is None


def test_new_rows_join_their_words_and_bring_new_words_after_the_old() -> None:
    rng = random.Random(11)
    old = {(rng.randrange(30), rng.randrange(200)): rng.randrange(1, 5) for _ in range(900)}
    new = {(rng.randrange(50), rng.randrange(40)): rng.randrange(1, 5) for _ in range(300)}
    old_words = sorted({w for w, _ in old})
    new_words = sorted({w for w, _ in new}, reverse=True)  # numbered in another order than before
    old_terms = {f"w{w}": i for i, w in enumerate(old_words)}
    new_terms = {f"w{w}": i for i, w in enumerate(new_words)}
    before = Postings.of_blocks(
        old_terms, _blocks({(old_terms[f"w{w}"], r): c for (w, r), c in old.items()}, 50)
    )
    added = Postings.of_blocks(
        new_terms, _blocks({(new_terms[f"w{w}"], r): c for (w, r), c in new.items()}, 50)
    )
    kept = {word: _as_lists(before.get(word)) for word in old_terms}

    after = before.with_rows(added, 200)

    shifted = {(w, r + 200): c for (w, r), c in new.items()}
    for w in sorted({*old_words, *new_words}):
        assert _as_lists(after.get(f"w{w}")) == _expected({**old, **shifted}, w)
    assert len(after) == len({*old_words, *new_words})
    # The postings extended are left as they were: a ranking may still be reading them.
    assert {word: _as_lists(before.get(word)) for word in old_terms} == kept
    assert len(before) == len(old_words)
    assert before.with_rows(Postings.of_blocks({}, []), 200) is before


def test_an_index_extended_by_new_rows_ranks_as_one_built_with_them_all() -> None:
    def row(i: int, text: str) -> tuple[int, str, str, str, str]:
        return (i, "fact", "internal", "active", text)

    first = [row(i, f"deploy train {i % 7} leaves at {i} o'clock") for i in range(1, 300)]
    later = [row(i, f"canary {i} waits ten minutes before the train") for i in range(300, 340)]
    whole = _built(iter(first + later)).postings
    grown = _built(iter(first)).postings.with_rows(_built(iter(later)).postings, len(first))
    for word in words("deploy train leaves canary waits 5 o'clock minutes 320"):
        assert _as_lists(grown.get(word)) == _as_lists(whole.get(word))
    assert set(grown.terms) == set(whole.terms)
