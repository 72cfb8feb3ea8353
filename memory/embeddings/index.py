"""An in-process vector index per project: every vector of one model, quantised, searched in two steps.

Each process keeps one index per (project, model). A vector is kept as int8 codes with one scale
per row (384 bytes at 384 dimensions: 38 MB at 100,000 items, half of float16) and as its sign
bits (48 bytes, stored word-major). A query first ranks every row by the Hamming distance of the
sign bits (a popcount over 5 MB at 100,000 items), then scores a shortlist RESCORE times as long as
asked for exactly, from the int8 codes; small projects (up to EXACT_ROWS) are scored exactly whole.
Both loops run in the compiled `_kernels` where it is built (setup.py), else in numpy: the same
rows, the same scores up to float rounding. The index is cached per vector version, the project's
newest embedding id: a statement reading that one id (an index probe) tells whether vectors were
added, and only the new ones are then loaded, written into room the index's arrays keep for them
(`_Room`). Fewer or older vectors (a prune or a re-embedding under another model) reload it.

The index only proposes candidates, with the kind and data class its vectors were written with;
callers check every candidate against the item's current row and the credential's scope before
anything is ranked or shown (see memory.retrieval).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass, field

import numpy as np
from django.db import connections

from memory.codes import CLASSES, KINDS, code, lookup
from memory.embeddings.stored import StoredVectors
from memory.heap import release_freed_memory
from memory.models import Embedding

try:
    from memory.embeddings import _kernels
except ImportError:  # not built (setup.py): numpy does the same steps
    _kernels = None  # type: ignore[assignment]

# Below this many rows every vector is scored exactly; above it, the sign bits pick a shortlist.
EXACT_ROWS = 20_000
# Rows scored exactly per row asked for. At 100,000 items 5 found what 10 did (bench/quality.py:
# bundles 0.985 either way, paraphrase recall@10 0.945 against 0.930; 3 lost some) in 0.95
# instead of 1.2 ms.
RESCORE = 5
# Vectors are read and quantised this many at a time. Quantising takes a few float32 copies of
# them (3 MB each at 384 dimensions): a load of 100,000 vectors peaks 14-17 MB above the index it
# leaves (SQLite, PostgreSQL); with 8,192 it peaked 61-72 MB above, and took longer (0.55 and
# 0.9-1.0 s against 0.5 and 0.8).
LOAD_ROWS = 2_048
# Processes keep the vectors of the projects used last, up to this many in all (about 86 MB).
MAX_CACHED_VECTORS = 200_000
MIN_SHORTLIST = 256


def quantised(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes and per-row scales of float vectors: `codes * scale[:, None]` approximates them."""
    vectors = vectors.astype(np.float32, copy=False)
    scales = np.abs(vectors).max(axis=1) / 127.0
    scales[scales == 0] = 1.0
    codes = np.rint(vectors / scales[:, None]).astype(np.int8)
    return codes, scales.astype(np.float32)


def sign_bits(vectors: np.ndarray) -> np.ndarray:
    """Each row's signs packed into uint64 words (padded with zero bits)."""
    packed = np.packbits(vectors > 0, axis=1)
    pad = (-packed.shape[1]) % 8
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    return np.ascontiguousarray(packed).view(np.uint64)


# Filters whose rows an index keeps (a few per credential kind; cleared when full): 100-200 KB
# each at 100,000 rows.
MAX_FILTERS = 16


@dataclass
class VectorIndex:
    newest_id: int
    ids: np.ndarray  # int64 fact ids, one per row
    codes: np.ndarray  # int8 (rows, dimensions)
    scales: np.ndarray  # float32, one per row
    signs: np.ndarray  # uint64 (words, rows): the sign bits, each word of every row contiguous
    kinds: np.ndarray  # uint8 kind codes
    classes: np.ndarray  # uint8 data class codes
    _by_id: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False, compare=False)
    # The arrays its fields are the first rows of, when loaded with room for more (`_Room`).
    _room: _Room | None = field(default=None, repr=False, compare=False)
    # What each (kinds, classes) filter lets through: a credential asks with the same few.
    _filters: dict[tuple[object, ...], _Filter] = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.ids)

    def nearest(
        self, query: np.ndarray, *, limit: int, kinds: Collection[str] | None, classes: Collection[str]
    ) -> list[tuple[int, float]]:
        """The `limit` most similar fact ids with their cosine, among the given kinds and classes."""
        if not len(self.ids) or limit <= 0:
            return []
        q = query.astype(np.float32)
        allowed = self._filter(kinds, classes)
        if not allowed.count:
            return []
        shortlist = max(limit * RESCORE, MIN_SHORTLIST)
        if allowed.count > max(EXACT_ROWS, shortlist):
            # Every row's distance (cheaper than gathering the allowed ones first); rows not
            # allowed are pushed past any real distance, and more than `shortlist` rows are.
            candidates = _shortlist(self.signs, sign_bits(q[None, :])[0], allowed, shortlist)
        else:
            candidates = np.flatnonzero(allowed.rows)
        scores = _scores(self.codes, self.scales, candidates, q)
        count = min(limit, len(candidates))
        top = np.argpartition(-scores, count - 1)[:count]
        # Best first; equal scores go to the newest item, as the lexical ranking breaks ties.
        top = top[np.lexsort((-self.ids[candidates[top]], -scores[top]))]
        # Plain Python values, converted whole (per element, numpy's scalars cost 1 µs each).
        return list(zip(self.ids[candidates[top]].tolist(), scores[top].tolist(), strict=True))

    def _filter(self, kinds: Collection[str] | None, classes: Collection[str]) -> _Filter:
        key = (None if kinds is None else tuple(sorted(kinds)), tuple(sorted(classes)))
        found = self._filters.get(key)
        if found is None:
            rows = lookup(CLASSES, classes)[self.classes] & lookup(KINDS, kinds)[self.kinds]
            found = _Filter(rows, far=self.signs.shape[0] * 64 + 1)
            if len(self._filters) >= MAX_FILTERS:
                self._filters.clear()
            self._filters[key] = found
        return found

    def vectors_of(self, fact_ids: Collection[int]) -> StoredVectors:
        """The stored vectors of these facts (those that have one), as float32, in row order."""
        if self._by_id is None:
            # Rows in fact id order, worked out on first use (a fact has one vector per model).
            order = np.argsort(self.ids, kind="stable")
            self._by_id = (self.ids[order], order)
        sorted_ids, order = self._by_id
        asked = np.unique(np.fromiter(fact_ids, dtype=np.int64))
        at = np.minimum(np.searchsorted(sorted_ids, asked), max(len(sorted_ids) - 1, 0))
        wanted = np.sort(order[at[sorted_ids[at] == asked]]) if len(sorted_ids) else np.zeros(0, np.int64)
        vectors = self.codes[wanted].astype(np.float32) * self.scales[wanted, None]
        return StoredVectors(self.ids[wanted].tolist(), vectors)


class _Filter:
    """The rows one filter lets through, and the floor it sets each row's sign-bit distance."""

    def __init__(self, rows: np.ndarray, *, far: int) -> None:
        self.rows = rows  # bool per row
        self.far = far  # past any real distance

    @functools.cached_property
    def count(self) -> int:
        """How many rows it lets through: counted once, not listed on every query (a list of
        every allowed row's number took 0.1 ms a query at 100,000 rows)."""
        return int(np.count_nonzero(self.rows))

    @functools.cached_property
    def floor(self) -> np.ndarray:
        """0 for a row let through, else `far` (uint16): hidden rows are never among the nearest."""
        return np.where(self.rows, 0, self.far).astype(np.uint16)


def _shortlist(signs: np.ndarray, query: np.ndarray, allowed: _Filter, count: int) -> np.ndarray:
    """The `count` allowed rows nearest the query's sign bits (`_nearest_rows`'s choice), in the
    compiled module where it is built: one pass over the sign bits and one over the distances,
    at 100,000 rows 0.27 against numpy's 0.66 ms on an AVX2 processor (AMD Zen 3)."""
    if _kernels is None:
        distance = _hamming(signs, query)
        np.maximum(distance, allowed.floor, out=distance)
        return _nearest_rows(distance, count, allowed.far + 1)
    chosen = np.empty(count, np.int64)
    written = _kernels.nearest_rows(
        signs, query, allowed.floor, count, allowed.far + 1, np.empty(signs.shape[1], np.uint16), chosen
    )
    return chosen[:written]


def _scores(codes: np.ndarray, scales: np.ndarray, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Each of these rows' cosine with the query (float32), from its int8 codes and scale."""
    if _kernels is None:
        chosen = codes if len(rows) == len(codes) else codes[rows]
        return _dot(chosen, query) * scales[rows]
    out = np.empty(len(rows), np.float32)
    _kernels.scores(codes, rows, query, scales, out)
    return out


def _nearest_rows(distance: np.ndarray, count: int, values: int) -> np.ndarray:
    """The `count` rows of smallest distance (integers below `values`), ties at the farthest
    distance taken in row order. Distances are a few hundred small integers: counted rather
    than partitioned (0.3 ms against 0.9 for 100,000 rows), and only among the rows within the
    distance that every SAMPLE_STEP-th row's shows to hold about twice `count` (a few thousand):
    0.09 ms at 100,000 rows, against 0.20 counting every row. Should fewer than `count` rows be
    that near, every row is counted; the rows chosen are the same either way."""
    sample = distance[::SAMPLE_STEP]
    kth = min(len(sample) - 1, -(-2 * count * len(sample) // len(distance)))
    within_guess = int(np.partition(sample, kth)[kth])
    near = np.flatnonzero(distance <= within_guess)
    if len(near) < count:
        near = np.arange(len(distance))
    near_distance = distance[near]
    within = np.cumsum(np.bincount(near_distance, minlength=values))
    farthest = int(np.searchsorted(within, count))  # the count-th nearest row's distance
    below = near[near_distance < farthest]
    at = near[near_distance == farthest][: count - len(below)]
    return np.concatenate([below, at])


# Every this many rows' distance is looked at to find how near the nearest rows are.
SAMPLE_STEP = 16


# Rows converted to float32 at a time for scoring: 1.5 MB, within a core's cache.
SCORE_ROWS = 1024


def _dot(codes: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Each int8 row's dot product with the float32 query, a block of rows at a time.

    Converting every row at once wrote a float32 copy of them all through main memory (15 MB at
    10,000 rows); a block stays in the cache, and BLAS's matrix-vector product on it is 2.3 times
    faster than the whole copy's einsum (0.76 ms against 1.77 at 10,000 rows). BLAS runs on one
    thread per process (unforgetter.settings), so the product spins no pool beside the requests.
    """
    out = np.empty(len(codes), np.float32)
    block = np.empty((min(SCORE_ROWS, len(codes)), codes.shape[1]), np.float32)
    for start in range(0, len(codes), SCORE_ROWS):
        part = codes[start : start + SCORE_ROWS]
        np.copyto(block[: len(part)], part)
        np.dot(block[: len(part)], query, out=out[start : start + len(part)])
    return out


def _hamming(signs: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Each row's Hamming distance to the query's sign bits, from the word-major sign bits
    (`VectorIndex.signs`): one contiguous 64-bit word of every row at a time."""
    distance: np.ndarray = np.bitwise_count(signs[0] ^ query[0]).astype(np.uint16)
    for word in range(1, signs.shape[0]):
        distance += np.bitwise_count(signs[word] ^ query[word])
    return distance


def _empty(after: int) -> VectorIndex:
    return VectorIndex(
        after,
        np.zeros(0, np.int64),
        np.zeros((0, 0), np.int8),
        np.zeros(0, np.float32),
        np.zeros((0, 0), np.uint64),
        np.zeros(0, np.uint8),
        np.zeros(0, np.uint8),
    )


def index_of(
    vectors: np.ndarray, *, ids: np.ndarray, kinds: np.ndarray, classes: np.ndarray, newest_id: int
) -> VectorIndex:
    """An index of these float vectors (one row per id, with its kind and data class codes)."""
    vectors = vectors.astype(np.float32, copy=False)
    codes, scales = quantised(vectors)
    return VectorIndex(
        newest_id=newest_id,
        ids=ids,
        codes=codes,
        scales=scales,
        signs=np.ascontiguousarray(sign_bits(vectors).T),
        kinds=kinds,
        classes=classes,
    )


def _block(rows: list[tuple[int, int, str, str, bytes | memoryview]]) -> VectorIndex:
    vectors = np.frombuffer(b"".join(bytes(r[4]) for r in rows), dtype="<f2").reshape(len(rows), -1)
    return index_of(
        vectors,
        ids=np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows)),
        kinds=np.fromiter((code(KINDS, r[2]) for r in rows), dtype=np.uint8, count=len(rows)),
        classes=np.fromiter((code(CLASSES, r[3]) for r in rows), dtype=np.uint8, count=len(rows)),
        newest_id=rows[-1][0],
    )


# An index is loaded with room for this share more rows than it holds: vectors embedded later
# are written there in place (memory pages not yet written to take none).
ROOM_SHARE = 0.25


class _Room:
    """Arrays with room for more rows than an index holds: the index's fields are their first rows.

    Rows are only ever written past the rows of every index handed out, so an index in use is
    never changed while a newer one, holding vectors embedded since, is made of the same arrays.
    Before, each vector added to a project copied its whole index (45 MB at 100,000 rows: 10-20
    ms of a call, and both copies held at once), and a load held every block it read beside
    their join (twice the index at its peak).
    """

    def __init__(self, rows: int, dimensions: int) -> None:
        capacity = rows + int(rows * ROOM_SHARE) + 1
        self.ids = np.empty(capacity, np.int64)
        self.codes = np.empty((capacity, dimensions), np.int8)
        self.scales = np.empty(capacity, np.float32)
        self.signs = np.empty((-(-dimensions // 64), capacity), np.uint64)
        self.kinds = np.empty(capacity, np.uint8)
        self.classes = np.empty(capacity, np.uint8)
        self.filled = 0

    def fits(self, index: VectorIndex, more: int) -> bool:
        """Whether `index` is made of these arrays' rows so far, with room for `more` after it."""
        return index._room is self and self.filled == len(index) and self.filled + more <= len(self.ids)

    def add(self, part: VectorIndex) -> None:
        at, end = self.filled, self.filled + len(part)
        self.ids[at:end] = part.ids
        self.codes[at:end] = part.codes
        self.scales[at:end] = part.scales
        self.signs[:, at:end] = part.signs
        self.kinds[at:end] = part.kinds
        self.classes[at:end] = part.classes
        self.filled = end

    def index(self, newest_id: int) -> VectorIndex:
        rows = self.filled
        return VectorIndex(
            newest_id=newest_id,
            ids=self.ids[:rows],
            codes=self.codes[:rows],
            scales=self.scales[:rows],
            signs=self.signs[:, :rows],
            kinds=self.kinds[:rows],
            classes=self.classes[:rows],
            _room=self,
        )


def _loaded(project_id: int, model: str, base: VectorIndex) -> VectorIndex:
    """`base` and the project's vectors past its newest id, read and quantised LOAD_ROWS at a
    time into `base`'s room, or into new arrays where it has none left (room for every vector
    of the project, counted first, when `base` is empty)."""
    current = base
    expected = 0
    if not len(base):
        expected = Embedding.objects.filter(project_id=project_id, model=model, id__gt=base.newest_id).count()
    while True:
        rows = list(
            Embedding.objects.filter(project_id=project_id, model=model, id__gt=current.newest_id)
            .order_by("id")
            .values_list("id", "fact_id", "kind", "data_class", "vector")[:LOAD_ROWS]
        )
        if rows:
            part = _block(rows)
            room = current._room
            if room is None or not room.fits(current, len(part)):
                room = _Room(len(current) + max(len(part), expected), part.codes.shape[1])
                if len(current):
                    room.add(current)
            room.add(part)
            current = room.index(part.newest_id)
            expected -= len(part)
        if len(rows) < LOAD_ROWS:
            return current


def newest_sql(project_id: int, model: str) -> tuple[str, list[int | str]]:
    """The project's newest embedding id under a model (an index probe, read on every ranking that
    uses vectors) as a statement of one value, or of none, and its parameters: `_Indexes.get`
    runs it, and a caller may run it beside statements of its own (`_Indexes.at`)."""
    sql = (
        'SELECT "id" FROM "memory_embedding" WHERE "project_id" = %s AND "model" = %s '
        'ORDER BY "id" DESC LIMIT 1'
    )
    return sql, [project_id, model]


class _Indexes:
    """Each (project, model)'s index in this process; the least recently used go past MAX_CACHED_VECTORS.

    A project's vectors are loaded (or their index extended) under a lock of that project's own:
    a first load of 100,000 vectors takes a tenth of a second or more, and calls for other
    projects are not held up by it; two calls for the same project load once.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._indexes: OrderedDict[tuple[int, str], VectorIndex] = OrderedDict()
        self._loading: dict[tuple[int, str], threading.Lock] = {}

    def get(self, project_id: int, model: str) -> VectorIndex | None:
        """The project's index for this model, brought up to date; None while it has no vectors."""
        sql, params = newest_sql(project_id, model)
        with connections[Embedding.objects.db].cursor() as cursor:
            cursor.execute(sql, params)
            found = cursor.fetchone()
        return self.at(project_id, model, found[0] if found else None)

    def at(self, project_id: int, model: str, newest: int | None) -> VectorIndex | None:
        """The project's index for this model up to `newest`, its newest vector id as the caller
        read it (`newest_sql`); None when it has none."""
        key = (project_id, model)
        with self._lock:
            cached = self._kept(key, newest)
            if cached is not None or newest is None:
                return cached
            loading = self._loading.setdefault(key, threading.Lock())
        with loading:
            with self._lock:
                loaded = self._kept(key, newest)  # by another call meanwhile
                cached = self._indexes.get(key)
            if loaded is not None:
                return loaded
            if cached is not None and cached.newest_id < newest:
                index = _loaded(project_id, model, cached)
            else:
                index = _loaded(project_id, model, _empty(0))
                release_freed_memory()
            with self._lock:
                self._indexes[key] = index
                self._indexes.move_to_end(key)
                total = sum(len(i) for i in self._indexes.values())
                while total > MAX_CACHED_VECTORS and len(self._indexes) > 1:
                    _, dropped = self._indexes.popitem(last=False)
                    total -= len(dropped)
            return index

    def _kept(self, key: tuple[int, str], newest: int | None) -> VectorIndex | None:
        """The index kept for `key` if it is up to `newest` (forgotten when there is none); under
        the lock."""
        cached = self._indexes.get(key)
        if newest is None:
            self._indexes.pop(key, None)
            return None
        if cached is not None and cached.newest_id == newest:
            self._indexes.move_to_end(key)
            return cached
        return None

    def holds(self, project_id: int, model: str) -> bool:
        """Whether this process already keeps vectors of the project (no statement)."""
        with self._lock:
            return (project_id, model) in self._indexes

    def clear(self) -> None:
        with self._lock:
            self._indexes.clear()


indexes = _Indexes()
