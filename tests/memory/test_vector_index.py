"""The in-process vector index's arithmetic: sign-bit distances, the shortlist they pick, the
nearest rows a filter allows, and reading vectors back by fact id; and vectors added to it."""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Iterator

import numpy as np
import pytest

from memory.codes import CLASSES, KINDS, code
from memory.embeddings import embedder
from memory.embeddings import index as vector_index
from memory.embeddings.index import (
    VectorIndex,
    _empty,
    _Filter,
    _hamming,
    _nearest_rows,
    _scores,
    _shortlist,
    index_of,
    indexes,
    sign_bits,
)
from memory.embeddings.stored import StoredVectors
from memory.models import Kind
from memory.services.embeddings import embeddings_refresh
from tests.conftest import Tenant
from tests.readpath import add_item
from workspaces.models import DataClass

NOT_BUILT = "the compiled module is not built (setup.py)"
BUILT = importlib.util.find_spec("memory.embeddings._kernels") is not None
compiled = pytest.mark.skipif(not BUILT, reason=NOT_BUILT)


@pytest.fixture(params=["compiled", "numpy"])
def loops(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The index's loops run in the compiled module (where built) and in numpy: the same rows."""
    if request.param == "compiled" and not BUILT:
        pytest.skip(NOT_BUILT)
    if request.param == "numpy":
        monkeypatch.setattr(vector_index, "_kernels", None)
    return str(request.param)


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
    # One matrix, a row per fact found, in the index's row order.
    assert found.ids == [int(index.ids[row]) for row in (0, 5, 299)]
    assert found.matrix.shape == (3, index.codes.shape[1])
    with pytest.raises(ValueError, match="one row per fact id"):
        StoredVectors([1, 2], found.matrix)


@pytest.mark.parametrize("sampled", ["like the rest", "nearer than the rest"])
def test_the_shortlist_is_the_rows_of_smallest_distance_ties_in_row_order(sampled: str) -> None:
    rng = np.random.default_rng(3)
    distance = rng.integers(0, 40, size=5_000).astype(np.uint16)
    if sampled == "nearer than the rest":
        # The rows the nearest distance is guessed from are too few: every row is counted then.
        distance[:: vector_index.SAMPLE_STEP] = 0
        distance[distance == 0] = 1
        distance[:: vector_index.SAMPLE_STEP] = 0
    for count in (1, 37, 256, 400, 4_999):
        picked = _nearest_rows(distance, count, 41)
        assert len(picked) == len(set(picked.tolist())) == count
        # The same distances as a partition picks: every nearer row, then ties at the last one.
        assert sorted(distance[picked].tolist()) == sorted(distance.tolist())[:count]
        farthest = distance[picked].max()
        tied = np.flatnonzero(distance == farthest)
        assert (
            picked[distance[picked] == farthest].tolist()
            == tied[: len(picked[distance[picked] == farthest])].tolist()
        )


@pytest.fixture(params=["avx512vpopcntdq", "avx2", "popcnt", "plain"])
def popcount(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each sign-bit distance loop of the compiled module that this processor runs."""
    if not BUILT:
        pytest.skip(NOT_BUILT)
    from memory.embeddings import _kernels as kernels

    if request.param not in kernels.popcounts():
        pytest.skip(f"this processor does not run {request.param}")
    kernels.use_popcount(request.param)
    yield str(request.param)
    kernels.use_popcount(kernels.popcounts()[0])


@pytest.mark.parametrize(
    ("rows", "dimensions"),
    # Rows in steps of 16 and not (the vector loops' tail); 2,048 dimensions are 32 words, more
    # than the AVX2 loop adds up in a byte (31).
    [(300, 384), (5_000, 384), (20_011, 384), (4_099, 64), (4_099, 2_048)],
)
def test_the_compiled_shortlist_and_scores_are_numpy_s(rows: int, dimensions: int, popcount: str) -> None:
    """Each compiled distance loop chooses the very rows numpy's steps do (sign-bit distances
    raised to a filter's floor, ties at the farthest in row order, counted from a sample or
    whole), and the rows are scored alike, up to rounding."""
    from memory.embeddings import _kernels as kernels

    rng = np.random.default_rng(rows)
    vectors = rng.standard_normal((rows, dimensions), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors[rows // 2] = vectors[1]  # equal distances, to be taken in row order
    vectors[rows // 3] = -vectors[1]  # every sign differs
    index = index_of(
        vectors,
        ids=np.arange(rows, dtype=np.int64),
        kinds=np.zeros(rows, np.uint8),
        classes=np.zeros(rows, np.uint8),
        newest_id=1,
    )
    for allowed_share in (1.0, 0.6, 0.01):
        allowed = _Filter(rng.random(rows) < allowed_share, far=index.signs.shape[0] * 64 + 1)
        for query in (vectors[1], vectors[rows - 1] + rng.standard_normal(dimensions).astype(np.float32) / 8):
            bits = sign_bits(query[None, :])[0]
            distance = _hamming(index.signs, bits)
            np.maximum(distance, allowed.floor, out=distance)
            scratch, chosen = np.empty(rows, np.uint16), np.empty(rows, np.int64)
            kernels.nearest_rows(index.signs, bits, allowed.floor, rows, allowed.far + 1, scratch, chosen)
            assert np.array_equal(scratch, distance)  # the loop's distances, every row's
            for count in (1, 50, 256, rows - 1, rows, rows + 5):
                expected = _nearest_rows(distance, count, allowed.far + 1)
                assert np.array_equal(_shortlist(index.signs, bits, allowed, count), expected)
            rows_chosen = _nearest_rows(distance, min(rows, 1_000), allowed.far + 1)
            exact = (index.codes[rows_chosen].astype(np.float64) @ query) * index.scales[rows_chosen]
            scores = _scores(index.codes, index.scales, rows_chosen, query)
            assert np.allclose(scores, exact, rtol=1e-5, atol=1e-6)


@compiled
def test_the_compiled_loops_refuse_arrays_that_do_not_fit() -> None:
    """Sizes that disagree are an error, not a read past an array's end."""
    from memory.embeddings import _kernels as kernels

    index, vectors = _index(100)
    bits = sign_bits(vectors[:1])[0]
    floor, scratch, chosen = np.zeros(100, np.uint16), np.empty(100, np.uint16), np.empty(10, np.int64)
    with pytest.raises(ValueError, match="sizes"):
        kernels.nearest_rows(index.signs, bits[:3], floor, 10, 386, scratch, chosen)
    with pytest.raises(ValueError, match="sizes"):
        kernels.nearest_rows(index.signs, bits, floor, 10, 386, scratch, np.empty(5, np.int64))
    with pytest.raises(ValueError, match="dimension"):
        kernels.nearest_rows(index.signs, bits, floor.astype(np.int64), 10, 386, scratch, chosen)
    out = np.empty(2, np.float32)
    with pytest.raises(IndexError, match="out of range"):
        kernels.scores(index.codes, np.array([0, 100]), vectors[0], index.scales, out)
    with pytest.raises(ValueError, match="sizes"):
        kernels.scores(index.codes, np.array([0, 1]), vectors[0][:10], index.scales, out)


def test_above_the_exact_size_the_nearest_allowed_rows_come_from_the_shortlist(
    monkeypatch: pytest.MonkeyPatch, loops: str
) -> None:
    monkeypatch.setattr(vector_index, "EXACT_ROWS", 0)
    monkeypatch.setattr(vector_index, "MIN_SHORTLIST", 16)
    index, vectors = _index(2_000)
    # Every third row is confidential; the query is row 4's vector (internal) and row 6's
    # (confidential) is the same vector: only the allowed one may come back.
    classes = np.full(2_000, code(CLASSES, DataClass.INTERNAL), np.uint8)
    classes[::3] = code(CLASSES, DataClass.CONFIDENTIAL)
    vectors[6] = vectors[4]
    index = index_of(
        vectors,
        ids=index.ids,
        kinds=np.full(2_000, code(KINDS, Kind.FACT), np.uint8),
        classes=classes,
        newest_id=1,
    )
    found = index.nearest(vectors[4], limit=5, kinds=[Kind.FACT], classes=[DataClass.INTERNAL])
    allowed = {int(i) for i in index.ids[classes == code(CLASSES, DataClass.INTERNAL)]}
    assert len(found) == 5
    assert {i for i, _ in found} <= allowed
    assert found[0][0] == int(index.ids[4])
    assert found[0][1] > 0.99
    assert int(index.ids[6]) not in {i for i, _ in found}
    assert [score for _, score in found] == sorted((score for _, score in found), reverse=True)
    assert index.nearest(vectors[4], limit=5, kinds=[Kind.METHOD], classes=[DataClass.INTERNAL]) == []


@pytest.mark.parametrize("rows", [1, 1_024, 2_500])
def test_exactly_scored_rows_are_the_best_by_their_int8_codes_with_or_without_a_filter(
    rows: int, loops: str
) -> None:
    """Below EXACT_ROWS every allowed row is scored (a block of rows at a time): the result is
    the brute-force ranking of the quantised vectors, whole blocks and a partial last one alike."""
    index, vectors = _index(rows)
    classes = np.full(rows, code(CLASSES, DataClass.INTERNAL), np.uint8)
    classes[1::4] = code(CLASSES, DataClass.CONFIDENTIAL)
    index = index_of(vectors, ids=index.ids, kinds=np.zeros(rows, np.uint8), classes=classes, newest_id=1)
    query = np.random.default_rng(11).standard_normal(384).astype(np.float32)
    query /= np.linalg.norm(query)
    scores = (index.codes.astype(np.float64) @ query.astype(np.float64)) * index.scales
    for allowed in ([DataClass.INTERNAL, DataClass.CONFIDENTIAL], [DataClass.INTERNAL]):
        keep = np.isin(classes, [code(CLASSES, c) for c in allowed])
        found = index.nearest(query, limit=20, kinds=None, classes=allowed)
        expected = np.flatnonzero(keep)[np.argsort(-scores[keep], kind="stable")][:20]
        assert [i for i, _ in found] == index.ids[expected].tolist()
        assert np.allclose([s for _, s in found], scores[expected], atol=1e-5)


@pytest.mark.django_db
@pytest.mark.skipif(embedder() is None, reason="the local model's package is not installed")
def test_vectors_embedded_since_are_written_into_the_index_s_room_and_leave_it_as_it_was(
    tenant: Tenant,
) -> None:
    model = embedder()
    assert model is not None
    platform = tenant.projects["platform"]
    for i in range(8):
        add_item(platform, f"Release train {i} leaves at {i} o'clock.")
    embeddings_refresh()
    first = indexes.get(platform.pk, model.name)
    assert first is not None
    kept = (first.ids.copy(), first.codes.copy(), first.signs.copy())

    add_item(platform, "Canary deploys wait ten minutes.")
    embeddings_refresh()
    grown = indexes.get(platform.pk, model.name)
    assert grown is not None
    assert len(grown) == len(first) + 1
    assert np.shares_memory(grown.codes, first.codes)  # written in place, not copied
    assert all(np.array_equal(a, b) for a, b in zip(kept, (first.ids, first.codes, first.signs), strict=True))

    for i in range(6):  # more than the room left
        add_item(platform, f"Queue shard {i} drains into the ledger.")
    embeddings_refresh()
    moved = indexes.get(platform.pk, model.name)
    assert moved is not None
    assert not np.shares_memory(moved.codes, grown.codes)
    indexes.clear()
    loaded = indexes.get(platform.pk, model.name)
    assert loaded is not None
    for field in ("ids", "codes", "scales", "signs", "kinds", "classes"):
        assert np.array_equal(getattr(moved, field), getattr(loaded, field)), field
    assert moved.newest_id == loaded.newest_id
    assert moved.nearest(model.embed(["canary deploys"])[0], limit=1, kinds=None, classes=["internal"]) == (
        loaded.nearest(model.embed(["canary deploys"])[0], limit=1, kinds=None, classes=["internal"])
    )


def test_a_project_s_vectors_load_without_holding_up_another_s_and_once(monkeypatch) -> None:
    kept = vector_index._Indexes()
    slow_started, slow_may_finish = threading.Event(), threading.Event()
    loads: list[int] = []
    other, _ = _index(50)

    def loaded(project_id: int, model: str, base: VectorIndex) -> VectorIndex:
        loads.append(project_id)
        if project_id == 1:  # a large project's first load, held until released
            slow_started.set()
            slow_may_finish.wait(10)
            return _empty(7)
        return other

    monkeypatch.setattr(vector_index, "_loaded", loaded)
    found: dict[str, VectorIndex | None] = {}
    slow = threading.Thread(target=lambda: found.update(slow=kept.at(1, "m", 7)))
    again = threading.Thread(target=lambda: found.update(again=kept.at(1, "m", 7)))
    quick = threading.Thread(target=lambda: found.update(quick=kept.at(2, "m", other.newest_id)))
    slow.start()
    assert slow_started.wait(30)
    again.start()
    quick.start()
    quick.join(10)
    # Another project's index was loaded while the first load was still under way.
    assert not quick.is_alive()
    assert found["quick"] is other
    assert slow.is_alive()
    slow_may_finish.set()
    slow.join(30)
    again.join(30)
    assert found["slow"] is found["again"] is not None
    assert loads.count(1) == 1  # the second call for the same project waited and took the first's
