"""The word index's postings (memory.lexical_index): every word's rows and counts in flat arrays.

A word's postings are the rows (of its project's index) holding it, ascending, with its count in
each. They are kept word after word in one int32 array of rows and one uint8 array of counts,
with each word's start in a third array, and a dictionary from each word to its number.

Kept as a pair of numpy arrays per word, as before, a word cost about 490 bytes beyond its
postings (two array objects, a tuple, a dictionary entry), and the arrays lay scattered over the
heap between the build's scratch, which malloc could then not give back: at 100,000 items with a
4,000-word vocabulary the index held 26.5 MB for 14.8 MB of arrays. Engineering notes hold many
words met once (ids, versions, paths, hashes): at 200,000 such words the per-word cost alone was
93 MB. Here a word costs its dictionary entry and its start.
"""

from __future__ import annotations

import numpy as np

# A block of the postings of some rows, grouped by word (see `Postings.of_blocks`): its words
# (ascending, each once), how many postings each has, and the postings' rows (ascending within a
# word) and counts. A word number per run of postings, not per posting: 4 bytes less a posting.
Block = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class Postings:
    """Every word's postings: `get(word)` gives its rows (int32, ascending) and counts (uint8)."""

    __slots__ = ("counts", "rows", "starts", "terms")

    def __init__(
        self, terms: dict[str, int], starts: np.ndarray, rows: np.ndarray, counts: np.ndarray
    ) -> None:
        self.terms = terms  # word -> its number: its postings are [starts[n], starts[n + 1])
        self.starts = starts  # int64, one more than there are words
        self.rows = rows
        self.counts = counts

    @classmethod
    def of_blocks(cls, terms: dict[str, int], blocks: list[Block]) -> Postings:
        """The postings of `blocks` (a build groups its pairs a block of rows at a time), in
        ascending rows. Every word of `terms` has at least one posting among the blocks.

        The blocks are consumed: each is dropped from the list once placed, so that a build holds
        a block or its place in the result, not both (the result's pages are written as the
        blocks are placed, and untouched pages take no memory).
        """
        lengths = np.zeros(len(terms), dtype=np.int64)
        for words, runs, _, _ in blocks:
            lengths[words] += runs  # a block holds each word once
        starts = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(lengths, out=starts[1:])
        rows = np.empty(int(starts[-1]), dtype=np.int32)
        counts = np.empty(int(starts[-1]), dtype=np.uint8)
        filled = starts[:-1].copy()  # where each word's next posting goes
        blocks.reverse()  # placed in ascending rows, popped from the end
        while blocks:
            words, runs, block_rows, block_counts = blocks.pop()
            # A posting's place: its word's next free slot, plus how many of the block's postings
            # of that word come before it (a run of contiguous postings per word).
            firsts = np.cumsum(runs) - runs
            places = np.repeat(filled[words] - firsts, runs) + np.arange(len(block_rows))
            rows[places] = block_rows
            counts[places] = block_counts
            filled[words] += runs
        return cls(terms, starts, rows, counts)

    def get(self, word: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The word's rows and counts (views of the arrays), or None for a word no row holds."""
        term = self.terms.get(word)
        if term is None:
            return None
        start, stop = self.starts[term], self.starts[term + 1]
        return self.rows[start:stop], self.counts[start:stop]

    def __len__(self) -> int:
        return len(self.terms)

    def with_rows(self, added: Postings, first_row: int) -> Postings:
        """New postings: these and `added`'s, whose rows are numbered from `first_row` on (after
        every row of these). These are left as they are: a ranking may be reading them."""
        if not len(added.rows):
            return self
        terms = dict(self.terms)
        known = len(terms)
        numbers = np.empty(len(added.terms), dtype=np.int64)
        for word, term in added.terms.items():
            numbers[term] = terms.setdefault(word, len(terms))
        # Each added posting's word, numbered as in the result, in word order (stable: rows ascend).
        of = np.repeat(numbers, np.diff(added.starts))
        order = np.argsort(of, kind="stable")
        of = of[order]
        # Every word's postings end where the next word's begin; new words go after all of them.
        ends = np.concatenate([self.starts[1:], np.full(len(terms) - known, self.starts[-1])])
        places = ends[of]
        rows = np.insert(self.rows, places, added.rows[order] + np.int32(first_row))
        counts = np.insert(self.counts, places, added.counts[order])
        starts = np.zeros(len(terms) + 1, dtype=np.int64)
        starts[1:] = ends + np.cumsum(np.bincount(of, minlength=len(terms)))
        return Postings(terms, starts, rows, counts)
