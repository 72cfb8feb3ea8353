"""An in-process BM25 index per project: the lexical side of agent retrieval, on both databases.

Agents ask questions, and any word of a question may match. Ranking such queries in SQL meant
either scoring every match (SQLite's bm25() over FTS5: 150-230 ms for a ten-word task at 100,000
items) or scoring a bounded candidate set whose members depend on which matches the scan meets
first (PostgreSQL). Here each process keeps, per project, the postings of every item's stemmed
words (5 bytes per distinct word of an item: 14 MB at 100,000 items of 40 words) and scores a query
over them with numpy: every item holding a word of the query is scored, in a few milliseconds,
the same way on SQLite and PostgreSQL and without planner statistics.

The index only proposes candidates. What it knows of an item (kind, data class, state) is what
its row said when it was indexed; callers read every row they show with the credential's scoped
queryset (memory.retrieval), and tell the index which candidates are no longer current
(`mark_dead`): an item's state only ever moves from live (active, open) to superseded, closed or
retracted, and a data class never changes in place.
Document frequencies and the average item length are counted among the items the caller may
see, so no hidden item sways a ranking.

Freshness: every use counts the project's rows above a watermark (a range probe on the
(project, id) index, a few hundred entries at most) and indexes any it has not seen, so a
published change is found on the very next call in every process, even when transactions commit
out of id order; see `_Indexes` for how the watermark moves.
"""

from __future__ import annotations

import math
import re
import string
import threading
import time
import unicodedata
from array import array
from collections import OrderedDict
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import Stemmer
from django.db import connection as db

from memory.codes import CLASSES, KIND_NAMES, KINDS, STATES, code, lookup
from memory.heap import release_freed_memory
from memory.models import State
from memory.postings import Block, Postings
from memory.query_limits import QueryTooCostly, time_budget_seconds
from memory.stopwords import STOP_WORDS

# BM25's saturation and length normalisation (Robertson's defaults).
BM25_K1 = 1.2
BM25_B = 0.75
MAX_WORD_LENGTH = 64
# A word's count per item, as kept (see LexicalIndex.postings).
MAX_TERM_COUNT = 255
# Rows grouped at a time when an index is built (see _built): the grouping's scratch space is a
# block's (about 8 MB at 40 words an item). With 16,384 a build of 100,000 items peaked 12-25 MB
# higher, in the same time.
BUILD_BLOCK_ROWS = 4_096
# Rows above the settled watermark are counted on every use; once this many sit above it, the
# next whole count that agrees with the index moves the watermark up. Whole counts run at most
# once per FULL_CHECK_SECONDS per project and process.
SETTLE_ROWS = 256
# The smallest limit of PostgreSQL's count above the watermark (see `_count_above_sql`).
PROBE_LIMIT_MIN = 64
FULL_CHECK_SECONDS = 5.0
# Processes keep the indexes of the projects used last, up to this many indexed items in all
# (about 100 MB at 40 words an item), so a worker stays within its memory budget however many
# projects it serves; a project evicted is indexed again on its next use (about a second per
# 100,000 items).
MAX_CACHED_ROWS = 300_000


# ASCII text is split by str.translate and str.split, three times faster than a regular expression;
# other text by the expression. Both give the words of `\w+` except that `_` separates too, so
# snake_case names are found by their parts.
_ASCII_SEPARATORS = str.maketrans(dict.fromkeys(string.punctuation, " "))
_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)
_local = threading.local()
# Stems of the words met, kept per process: the words of a language recur across builds and
# queries. Spellings holding a digit or other non-letter (tickets, hashes, versions) are mostly met
# once: kept too, they took 41 MB of 300,000 such words' index, to save 0.7 s of a rebuild.
_stems: dict[str, str] = {}
_MAX_STEMS = 100_000


def _stemmer() -> Any:
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        # Stemmer objects are not thread-safe: one per thread.
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer


def split_words(text: str) -> list[str]:
    """The words of a text, casefolded, diacritics dropped, not stemmed."""
    text = text.casefold()
    if text.isascii():
        return text.translate(_ASCII_SEPARATORS).split()
    return _WORD_RE.findall(_unaccented(text))


def _unaccented(text: str) -> str:
    """The text without its diacritics ("café" -> "cafe")."""
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


# Identifiers joined by hyphens or underscores ("session-gateway-eu", "retry_limit") are indexed
# whole too, beside their parts: a question naming one then finds the items naming it before
# those that only share its parts (a service's name and its region are each in hundreds of items).
# A match starts only where a run of letters and digits does, and takes each run whole (possessive):
# 1.8 us a text, where the plain expression, tried again inside every word, took 7.
_COMPOUND_RE = re.compile(r"(?<![^\W_])[^\W_]++(?:[-_][^\W_]++)+", re.UNICODE)
_ASCII_COMPOUND_RE = re.compile(r"(?<![a-z0-9])[a-z0-9]++(?:[-_][a-z0-9]++)+", re.ASCII)


def compounds(text: str) -> list[str]:
    """The hyphen- or underscore-joined identifiers of a text, casefolded, diacritics dropped, as
    they are written; none for a text without a hyphen or underscore."""
    if "-" not in text and "_" not in text:
        return []
    text = text.casefold()
    if text.isascii():
        return _ASCII_COMPOUND_RE.findall(text)
    return _COMPOUND_RE.findall(_unaccented(text))


def telling(words: list[str]) -> tuple[int, int]:
    """What a text's words (`split_words`) tell, for telling near-duplicates apart
    (memory.context.duplicates): a hash of its telling words in order (stop words aside), and one
    of its words holding a digit (or anything else but letters) in any order, 0 for none. Equal
    telling words mean the same statement; vectors alike must also hold the same numbers. Hashes
    live as long as the process (str hashes are salted per process), as do the indexes kept."""
    key = " ".join([w for w in words if w not in STOP_WORDS])
    numbers = [w for w in words if not w.isalpha()]
    return hash(key), hash(" ".join(sorted(set(numbers)))) if numbers else 0


def _stemmed(found: list[str]) -> list[str]:
    """English stems (Snowball), those of words of letters remembered per process (`_stems`)."""
    missing = [w for w in dict.fromkeys(found) if w not in _stems]
    computed = dict(zip(missing, _stemmer().stemWords([w[:MAX_WORD_LENGTH] for w in missing]), strict=True))
    if len(_stems) < _MAX_STEMS:
        _stems.update((w, stem) for w, stem in computed.items() if w.isalpha())
    return [_stems.get(w) or computed[w] for w in found]


def words(text: str) -> list[str]:
    """The indexed words of a text, in order: what the index holds and queries are looked up by."""
    return _stemmed(split_words(text))


def compound_words(text: str) -> list[str]:
    """The text's joined identifiers as the index holds them (`compounds`, stemmed as words)."""
    return _stemmed(compounds(text))


class Hit(NamedTuple):
    """A ranked candidate: higher scores are better. A tuple: rankings build hundreds per call."""

    fact_id: int
    score: float
    kind: str = ""


# Filters whose views an index keeps (a few per credential kind; cleared when full).
MAX_VIEWS = 16
# A view keeps, for each word with a posting at least MIN_KEPT_POSTING long, its document
# frequency and BM25's term weight of each of its postings: the common words of tasks are in most
# queries, and gathering their rows' norms and visibility was half of a ranking's work. An index's
# views keep up to MAX_KEPT_POSTINGS postings in all (4 MB), however many credentials' filters
# (agents with other data classes, get_context's kinds and search's) ask it: each view had that
# much of its own, up to 64 MB an index.
MIN_KEPT_POSTING = 256
MAX_KEPT_POSTINGS = 1_000_000


@dataclass
class _Kept:
    """How many postings' term weights an index's views keep between them."""

    postings: int = 0


@dataclass
class _View:
    allowed: np.ndarray
    visible: int
    norms: np.ndarray
    dead: int
    kept: _Kept
    terms: dict[str, tuple[int, np.ndarray]] = field(default_factory=dict)

    def term(self, word: str, rows: np.ndarray, counts: np.ndarray) -> tuple[int, np.ndarray]:
        """A word's document frequency among the view's rows, and its BM25 weight in each posting.

        The weight, idf (k1 + 1) count / (count + norm), takes the idf of the view's rows.
        """
        found = self.terms.get(word)
        if found is None:
            df = int(np.count_nonzero(self.allowed[rows]))
            found = (df, _weights(counts, counts + self.norms[rows], self.visible, df))
            if len(rows) >= MIN_KEPT_POSTING and self.kept.postings + len(rows) <= MAX_KEPT_POSTINGS:
                # Two threads may both add a word: the same values, and the cap is a bound.
                self.terms[word] = found
                self.kept.postings += len(rows)
        return found

    def dropped(self) -> None:
        """The view is no longer kept: its words' weights no longer count against the bound."""
        self.kept.postings -= sum(len(weights) for _, weights in self.terms.values())


def _weights(counts: np.ndarray, denominators: np.ndarray, visible: int, df: int) -> np.ndarray:
    """BM25's term weight of each posting (float32: the counts are bytes); zeros without `df`."""
    idf = math.log(1.0 + (visible - df + 0.5) / (df + 0.5)) if df else 0.0
    weights: np.ndarray = counts / denominators
    weights *= idf * (BM25_K1 + 1.0)
    return weights


@dataclass
class LexicalIndex:
    """One project's postings and what each indexed row said; replaced whole when rows are added."""

    ids: np.ndarray  # int64 fact id per row
    kinds: np.ndarray  # uint8 codes
    classes: np.ndarray  # uint8 codes
    states: np.ndarray  # uint8 codes, as indexed
    lengths: np.ndarray  # float32 words per row
    # word -> (int32 rows, uint8 term counts): a word's count in one item saturates at 255, where
    # BM25's term weight is within 0.5% of its limit, and a byte instead of a float32 keeps each
    # (word, item) pair at 5 bytes: 13 MB less per 100,000 items.
    postings: Postings
    dead: np.ndarray  # bool: found not current by a caller's check
    # int64 (rows, 2): what each row's text tells (`telling`), worked out with its words.
    told: np.ndarray
    # Whether `ids` ascend (rows are indexed in id order, unless a commit came out of it).
    ascending: bool = True
    # Per filter (classes, states, kinds) and count of dead rows: its mask, rows and length norms.
    _views: dict[tuple[object, ...], _View] = field(default_factory=dict, repr=False, compare=False)
    _kept: _Kept = field(default_factory=_Kept, repr=False, compare=False)
    _order: np.ndarray | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.ids)

    def _view(
        self, classes: Collection[str], states: Collection[str], kinds: Collection[str] | None
    ) -> _View:
        """The rows a filter lets through, counted, with BM25's length norm of every row.

        The norm, k1 (1 - b + b len / avg), takes the average length of the rows let through:
        like the document frequencies, nothing hidden from the caller sways it. Kept per filter
        (a credential's view of the project), so repeated calls skip the whole-index passes.
        """
        key = (tuple(sorted(classes)), tuple(sorted(states)), None if kinds is None else tuple(sorted(kinds)))
        dead = int(np.count_nonzero(self.dead))
        view = self._views.get(key)
        if view is not None and view.dead == dead:
            return view
        allowed = (
            lookup(CLASSES, classes)[self.classes]
            & lookup(STATES, states)[self.states]
            & lookup(KINDS, kinds)[self.kinds]
            & ~self.dead
        )
        visible = int(np.count_nonzero(allowed))
        average = float(self.lengths[allowed].mean()) if visible else 1.0
        norms = (BM25_K1 * (1.0 - BM25_B) + (BM25_K1 * BM25_B / (average or 1.0)) * self.lengths).astype(
            np.float32
        )
        if len(self._views) >= MAX_VIEWS:
            self._views.clear()
            self._kept.postings = 0
        elif view is not None:  # a row was found dead since: the view is replaced
            view.dropped()
        view = _View(allowed=allowed, visible=visible, norms=norms, dead=dead, kept=self._kept)
        self._views[key] = view
        return view

    def rank(
        self,
        query_words: Sequence[str],
        *,
        classes: Collection[str],
        states: Collection[str],
        kinds: Collection[str] | None,
        without: Sequence[str] = (),
        limit: int,
    ) -> list[Hit]:
        """The `limit` best rows for these (stemmed) words by BM25, ties to the newest item.

        Only rows of the given classes, kinds and (indexed) states count, for the scores and for
        the document frequencies alike; rows holding a `without` word are left out. The work is
        one pass over each word's postings; past the per-query time budget it stops with
        QueryTooCostly, as a statement would (memory.query_limits).
        """
        if not len(self.ids) or limit <= 0:
            return []
        view = self._view(classes, states, kinds)
        allowed, visible = view.allowed, view.visible
        if without:
            allowed = allowed.copy()
            for word in without:
                excluded = self.postings.get(word)
                if excluded is not None:
                    allowed[excluded[0]] = False
            visible = int(np.count_nonzero(allowed))
        if not visible:
            return []
        scores = np.zeros(len(self.ids), dtype=np.float32)
        deadline = time.perf_counter() + time_budget_seconds()
        for word in dict.fromkeys(query_words):
            if time.perf_counter() > deadline:
                raise QueryTooCostly()
            posting = self.postings.get(word)
            if posting is None:
                continue
            rows, counts = posting
            if without:
                # The document frequencies of the rows left after the exclusions.
                df = int(np.count_nonzero(allowed[rows]))
                weights = _weights(counts, counts + view.norms[rows], visible, df)
            else:
                df, weights = view.term(word, rows, counts)
            if df:
                # A word's rows are distinct: the same sums as `scores[rows] += weights`, which
                # makes an intp copy of the int32 rows and gathers before it scatters; ufunc.at
                # adds in place (numpy >= 1.25): 0.39 against 0.95 ms for a task's words.
                np.add.at(scores, rows, weights)
        # Rows outside the caller's view were scored too (one pass is cheaper than filtering
        # each word's postings); their scores are dropped here, before anything is chosen.
        np.multiply(scores, allowed, out=scores)
        matched = _best_rows(scores, limit)
        order = np.lexsort((-self.ids[matched], -scores[matched]))[:limit]
        best = matched[order]
        # Plain Python values, and each Hit built as the tuple it is (its __new__ is Python).
        new = tuple.__new__
        return [
            new(Hit, row)
            for row in zip(
                self.ids[best].tolist(),
                scores[best].tolist(),
                KIND_NAMES[self.kinds[best]].tolist(),
                strict=True,
            )
        ]

    def holding_every(
        self,
        query_words: Sequence[str],
        *,
        classes: Collection[str],
        states: Collection[str],
        kinds: Collection[str] | None,
        without: Sequence[str] = (),
        limit: int,
    ) -> list[int]:
        """The ids of the newest `limit` rows holding every one of these (stemmed) words.

        The console's filter, unranked: one boolean pass per word over the rows the filter lets
        through, so its cost does not grow with how many rows match.
        """
        if not len(self.ids) or limit <= 0 or not query_words:
            return []
        held = self._view(classes, states, kinds).allowed.copy()
        for word in dict.fromkeys(query_words):
            posting = self.postings.get(word)
            if posting is None:
                return []
            rows = np.zeros(len(self.ids), dtype=bool)
            rows[posting[0]] = True
            held &= rows
        for word in without:
            excluded = self.postings.get(word)
            if excluded is not None:
                held[excluded[0]] = False
        return [int(i) for i in np.sort(self.ids[held])[::-1][:limit]]

    def named(
        self,
        identifiers: Sequence[str],
        query_words: Sequence[str],
        *,
        classes: Collection[str],
        states: Collection[str],
        kinds: Collection[str] | None,
        most: int,
    ) -> set[int]:
        """The items a query names: the ids of the rows the filter lets through that hold one of
        its (stemmed) joined identifiers (`compound_words`, "settlement-service-uk"), for each
        that at most `most` of them hold and none of the query's other `query_words` fewer (its
        most telling word: "Draft the e-mail about the deploy freeze" is about the freeze).
        Counted among the caller's rows alone, as `rank`'s document frequencies are."""
        if not identifiers or not len(self.ids):
            return set()
        view = self._view(classes, states, kinds)
        held: list[np.ndarray] = []
        for word in dict.fromkeys(identifiers):
            posting = self.postings.get(word)
            if posting is not None:
                rows = posting[0][view.allowed[posting[0]]]
                if 0 < len(rows) <= most:
                    held.append(rows)
        if not held:
            return set()
        # How few rows hold the query's most telling other word (words no row holds aside).
        fewest = len(self.ids)
        for word in dict.fromkeys(query_words):
            posting = self.postings.get(word)
            if posting is not None and word not in identifiers:
                df = view.term(word, *posting)[0]
                fewest = min(fewest, df or fewest)
        return {i for rows in held if len(rows) <= fewest for i in self.ids[rows].tolist()}

    def admitted(
        self,
        fact_ids: Sequence[int],
        *,
        classes: Collection[str],
        states: Collection[str],
        kinds: Collection[str] | None,
    ) -> dict[int, str]:
        """Those of these items the filter lets through, as `rank` would, with their kinds.

        An id the index does not hold is not admitted: it was not current when its project's rows
        were read (or was added since, to be found on the next call).
        """
        if not len(fact_ids) or not len(self.ids):
            return {}
        wanted = np.asarray(fact_ids, dtype=np.int64)
        rows = self._rows_of(wanted)
        held = (self.ids[rows] == wanted) & self._view(classes, states, kinds).allowed[rows]
        return dict(zip(wanted[held].tolist(), KIND_NAMES[self.kinds[rows[held]]].tolist(), strict=True))

    def _rows_of(self, wanted: np.ndarray) -> np.ndarray:
        """Each id's row, or some row holding another id where the index does not hold it."""
        last = len(self.ids) - 1
        if self.ascending:
            return np.minimum(np.searchsorted(self.ids, wanted), last)
        if self._order is None:
            self._order = np.argsort(self.ids)
        found: np.ndarray = self._order[
            np.minimum(np.searchsorted(self.ids, wanted, sorter=self._order), last)
        ]
        return found

    def told_of(self, fact_ids: Sequence[int]) -> dict[int, tuple[int, int]]:
        """What the texts of these items tell (`telling`), for those the index holds."""
        if not len(fact_ids) or not len(self.ids):
            return {}
        wanted = np.asarray(fact_ids, dtype=np.int64)
        rows = self._rows_of(wanted)
        held = self.ids[rows] == wanted
        return dict(zip(wanted[held].tolist(), map(tuple, self.told[rows[held]].tolist()), strict=True))

    def mark_dead(self, fact_ids: Iterable[int]) -> None:
        """Rows a caller found no longer current: they stop being candidates (monotone)."""
        wanted = np.fromiter(fact_ids, dtype=np.int64)
        if len(wanted):
            self.dead |= np.isin(self.ids, wanted)


# Rows per block whose best score bounds the limit-th best score from below (see _best_rows).
CUT_BLOCK = 64


def _best_rows(scores: np.ndarray, limit: int) -> np.ndarray:
    """The rows, in order, scoring at least the `limit`-th best score: every row tied with it
    stays, for the tie-break by id. Scores are never negative; where fewer than `limit` rows
    score above 0, those rows.

    A partition of every row's score degenerates when most scores are equal, as they are when a
    short query's words miss most rows (all zero): 10 ms at 100,000 rows against 0.6 for the
    scores of a task's common words. So the `limit`-th best of the blocks' maxima is found
    first: `limit` blocks hold a score at least that high, so the `limit`-th best score is no
    lower, and only the rows at or above it (a few hundred) are partitioned. 0.1 ms either way.
    """
    blocks = len(scores) // CUT_BLOCK
    bound = 0.0
    if blocks >= limit:
        maxima = scores[: blocks * CUT_BLOCK].reshape(blocks, CUT_BLOCK).max(axis=1)
        bound = float(np.partition(maxima, blocks - limit)[blocks - limit])
    candidates = np.flatnonzero(scores >= bound) if bound > 0 else np.flatnonzero(scores)
    if len(candidates) <= limit:
        return candidates
    values = scores[candidates]
    cut = np.partition(values, len(values) - limit)[len(values) - limit]
    best: np.ndarray = candidates[values >= cut]
    return best


_Row = tuple[int, str, str, str, str]  # id, kind, data_class, state, text


def _built(rows: Iterable[_Row]) -> LexicalIndex:
    """The index of these rows: every (word, row) pair with its count, grouped by word.

    Each distinct spelling is stemmed once; per word of text there is one dictionary lookup, and
    the grouping is numpy's (a sort of the pairs), so 100,000 items of 40 words take about a second.
    """
    spellings: dict[str, int] = {}
    # Per row: its words (BM25's length) and its tokens, those words and its joined identifiers.
    tokens, lengths, counts = array("i"), array("i"), array("i")
    ids, kinds, classes, states = array("q"), array("B"), array("B"), array("B")
    told = array("q")
    for row in rows:
        found = split_words(row[4])
        lengths.append(len(found))
        told.extend(telling(found))
        found += compounds(row[4])
        counts.append(len(found))
        tokens.extend([spellings.setdefault(w, len(spellings)) for w in found])
        ids.append(row[0])
        kinds.append(code(KINDS, row[1]))
        classes.append(code(CLASSES, row[2]))
        states.append(code(STATES, row[3]))
    vocabulary: dict[str, int] = {}
    stem_of = np.array(
        [vocabulary.setdefault(stem, len(vocabulary)) for stem in _stemmed(list(spellings))], dtype=np.int32
    )
    count = len(ids)
    row_lengths = np.frombuffer(lengths, dtype=np.int32) if count else np.zeros(0, np.int32)
    row_tokens = np.frombuffer(counts, dtype=np.int32) if count else np.zeros(0, np.int32)
    spelled = np.frombuffer(tokens, dtype=np.int32) if len(tokens) else np.zeros(0, np.int32)
    starts = np.concatenate([[0], np.cumsum(row_tokens, dtype=np.int64)])
    # Pairs are grouped a block of rows at a time and the blocks placed word by word at the end
    # (memory.postings): the grouping's scratch space is one block's, and each block's tokens are
    # mapped to their stems there, not every token of the project at once.
    blocks: list[Block] = []
    for first in range(0, count, BUILD_BLOCK_ROWS):
        last = min(first + BUILD_BLOCK_ROWS, count)
        blocks.append(_block(stem_of[spelled[starts[first] : starts[last]]], row_tokens[first:last], first))
    del spelled, tokens  # the blocks hold every posting now
    postings = Postings.of_blocks(vocabulary, blocks)
    id_array = np.array(ids, dtype=np.int64)
    return LexicalIndex(
        ids=id_array,
        kinds=np.array(kinds, dtype=np.uint8),
        classes=np.array(classes, dtype=np.uint8),
        states=np.array(states, dtype=np.uint8),
        lengths=row_lengths.astype(np.float32),
        postings=postings,
        dead=np.zeros(count, dtype=bool),
        told=np.frombuffer(told, dtype=np.int64).reshape(count, 2) if count else np.zeros((0, 2), np.int64),
        ascending=bool(np.all(id_array[1:] > id_array[:-1])),
    )


def _block(words: np.ndarray, row_lengths: np.ndarray, first: int) -> Block:
    """The postings of one block of rows (numbered from `first`), given their words in row order
    and each row's word count, grouped by word and then row."""
    rows = np.repeat(np.arange(len(row_lengths), dtype=np.int64), row_lengths)
    keys, counts = np.unique(words.astype(np.int64) * BUILD_BLOCK_ROWS + rows, return_counts=True)
    of = keys // BUILD_BLOCK_ROWS
    runs_at = np.flatnonzero(np.diff(of, prepend=-1))
    return (
        of[runs_at].astype(np.int32),
        np.diff(runs_at, append=len(of)).astype(np.int32),
        (keys % BUILD_BLOCK_ROWS + first).astype(np.int32),
        np.minimum(counts, MAX_TERM_COUNT).astype(np.uint8),
    )


def _extended(index: LexicalIndex, rows: Sequence[_Row]) -> LexicalIndex:
    """A new index: `index` plus `rows`."""
    added = _built(rows)
    postings = index.postings.with_rows(added.postings, len(index.ids))
    return LexicalIndex(
        ids=np.concatenate([index.ids, added.ids]),
        kinds=np.concatenate([index.kinds, added.kinds]),
        classes=np.concatenate([index.classes, added.classes]),
        states=np.concatenate([index.states, added.states]),
        postings=postings,
        lengths=np.concatenate([index.lengths, added.lengths]),
        dead=np.concatenate([index.dead, added.dead]),
        told=np.concatenate([index.told, added.told]),
        ascending=index.ascending
        and added.ascending
        and not (len(index.ids) and len(added.ids) and added.ids[0] <= index.ids[-1]),
    )


# Only current rows are indexed: the text of others is not fetched.
_LIVE_SQL = ", ".join(f"'{state}'" for state in State.current())
_ROWS_SQL = (
    f"SELECT id, kind, data_class, state, CASE WHEN state IN ({_LIVE_SQL}) THEN text ELSE '' END "  # noqa: S608
    "FROM memory_fact WHERE {above} ORDER BY project_id, id LIMIT %s"
)


def _above(project_id: int, after: int) -> tuple[str, list[int]]:
    """The project's rows above an id, as a range of the (project, id) index, and its parameters.

    PostgreSQL is given the pair as a row comparison, which only that index can serve: with
    `id > %s` alone it may walk the primary key across every row that other projects and tenants
    added above the watermark. SQLite serves the plain range from any index on the project (each
    holds the rowid).
    """
    if db.vendor == "postgresql":
        return "(project_id, id) > (%s, %s) AND project_id = %s", [project_id, after, project_id]
    return "project_id = %s AND id > %s", [project_id, after]


# Rows are read in pages of this many (by id), so a large project's texts are never all in memory.
PAGE_ROWS = 5_000


def _fetch(sql: str, params: Sequence[int | str]) -> list[tuple[Any, ...]]:
    with db.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def _rows(project_id: int, after: int) -> Iterator[_Row]:
    """The project's rows above id `after`, oldest first, a page at a time."""
    while True:
        above, params = _above(project_id, after)
        page = _fetch(_ROWS_SQL.replace("{above}", above), [*params, PAGE_ROWS])
        yield from ((int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4])) for r in page)
        if len(page) < PAGE_ROWS:
            return
        after = int(page[-1][0])


def _count_above(project_id: int, after: int, *, cap: int) -> int:
    """How many rows the project has above `after`, counted up to `cap`: a range probe."""
    sql, params = _count_above_sql(project_id, after, cap=cap)
    return int(_fetch(sql, params)[0][0])


def _count_above_sql(project_id: int, after: int, *, cap: int) -> tuple[str, list[int]]:
    """`_count_above`'s statement (a single value) and its parameters.

    On PostgreSQL the probe walks the (project, id) index from the watermark and stops after
    `cap` entries, rounded up to a power of two (at least PROBE_LIMIT_MIN): given the project as
    an equality, the planner prefers walking the primary key (or a bitmap of the whole project)
    and, with other projects' rows above the watermark, read 100,000 rows per call at 1M items in
    the workspace (40 ms) instead of none. The limit is written into the statement: as a bound
    parameter, the server's generic plan assumes it a tenth of the table, so a prepared statement
    holding the probe was planned anew on every execution (0.25 ms of every call's statement).
    A count past `cap` only ever tells "more than expected", so the rounding changes no answer.
    """
    if db.vendor == "postgresql":
        limit = max(PROBE_LIMIT_MIN, 1 << (cap - 1).bit_length())
        sql = (
            "SELECT count(*) FROM (SELECT project_id FROM memory_fact WHERE (project_id, id) > (%s, %s) "  # noqa: S608
            f"ORDER BY project_id, id LIMIT {limit:d}) AS above WHERE project_id = %s"
        )
        return sql, [project_id, after, project_id]
    above, params = _above(project_id, after)
    return f"SELECT count(*) FROM memory_fact WHERE {above}", params  # noqa: S608


def _count_rows(project_id: int) -> int:
    """Every row of the project, counted whole (every FULL_CHECK_SECONDS)."""
    return int(_fetch("SELECT count(*) FROM memory_fact WHERE project_id = %s", [project_id])[0][0])


_LIVE = frozenset(State.current())


@dataclass
class _Entry:
    """A project's index and what it has seen: every row up to `settled`, and `above` it."""

    index: LexicalIndex
    settled: int
    above: set[int]
    seen: int
    checked_at: float = field(default_factory=time.monotonic)

    def due(self) -> bool:
        """Whether the project's rows are to be counted whole (see _Indexes)."""
        return time.monotonic() - self.checked_at >= FULL_CHECK_SECONDS

    def add(self, rows: Sequence[_Row]) -> None:
        live = [row for row in rows if row[3] in _LIVE]
        if live:
            self.index = _extended(self.index, live)
        self.above.update(row[0] for row in rows)
        self.seen += len(rows)


def _entry(project_id: int) -> _Entry:
    """A new index of every current row of the project, read a page at a time."""
    seen = [0, 0]  # rows read, newest id

    def live(rows: Iterable[_Row]) -> Iterator[_Row]:
        for row in rows:
            seen[0], seen[1] = seen[0] + 1, row[0]
            if row[3] in _LIVE:
                yield row

    index = _built(live(_rows(project_id, 0)))
    release_freed_memory()
    return _Entry(index, settled=seen[1], above=set(), seen=seen[0])


class _Indexes:
    """Each project's index in this process, brought up to date on every use; LRU by rows.

    Rows above the watermark are counted on every use (a handful of index entries), so rows
    committed since are indexed before the query is scored. Every FULL_CHECK_SECONDS the project's
    rows are counted whole: a transaction that committed rows below the watermark after it moved
    (out of id order, long after taking its ids) makes the counts differ, and the index is rebuilt;
    when they agree, the watermark moves up to the newest row seen.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[int, _Entry] = OrderedDict()
        self._refreshing: dict[int, threading.Lock] = {}

    def probe(self, project_id: int) -> Probe | None:
        """The statement `get` would run to see whether the project's index is up to date, for a
        caller to run with statements of its own; None when `get` must do more than count (no
        index yet, or a whole count due)."""
        with self._lock:
            entry = self._entries.get(project_id)
        if entry is None or entry.due():
            return None
        expected = len(entry.above)
        sql, params = _count_above_sql(project_id, entry.settled, cap=expected + 1)
        return Probe(sql, params, entry, entry.settled, expected)

    def get(self, project_id: int, probed: tuple[Probe, int] | None = None) -> LexicalIndex:
        """The project's index, brought up to date. `probed` is a `probe` of it and the count its
        statement returned: the index is served without a statement of its own if that count is
        for the index as it still stands."""
        with self._lock:
            entry = self._entries.get(project_id)
            refreshing = self._refreshing.setdefault(project_id, threading.Lock())
        if (
            entry is not None
            and not entry.due()
            and _counted_above(project_id, entry, probed) == len(entry.above)
        ):
            with self._lock:
                self._entries.move_to_end(project_id)
            return entry.index
        with refreshing:
            with self._lock:
                entry = self._entries.get(project_id)
            entry = _entry(project_id) if entry is None else self._refreshed(project_id, entry)
            with self._lock:
                self._entries[project_id] = entry
                self._entries.move_to_end(project_id)
                total = sum(len(e.index) for e in self._entries.values())
                while total > MAX_CACHED_ROWS and len(self._entries) > 1:
                    _, dropped = self._entries.popitem(last=False)
                    total -= len(dropped.index)
            return entry.index

    @staticmethod
    def _refreshed(project_id: int, entry: _Entry) -> _Entry:
        count = _count_above(project_id, entry.settled, cap=len(entry.above) + 1)
        if count < len(entry.above):
            return _entry(project_id)  # rows went away: a deletion
        if count > len(entry.above):
            entry.add([row for row in _rows(project_id, entry.settled) if row[0] not in entry.above])
        if entry.due():
            if _count_rows(project_id) != entry.seen:
                return _entry(project_id)
            entry.checked_at = time.monotonic()
            if len(entry.above) >= SETTLE_ROWS:
                entry.settled, entry.above = max(entry.above), set()
        return entry

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


class Probe(NamedTuple):
    """A freshness probe of one project's index (see `_Indexes.probe`): a single value's statement."""

    sql: str
    params: list[int]
    entry: _Entry
    settled: int
    expected: int


def _counted_above(project_id: int, entry: _Entry, probed: tuple[Probe, int] | None) -> int:
    """The rows above the entry's watermark: the probe's count where it was taken of the entry as
    it still stands (another thread may have moved it meanwhile), else counted now."""
    if probed is not None:
        probe, count = probed
        if probe.entry is entry and probe.settled == entry.settled and probe.expected == len(entry.above):
            return count
    return _count_above(project_id, entry.settled, cap=len(entry.above) + 1)


lexical_indexes = _Indexes()
