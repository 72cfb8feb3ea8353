"""The local embedder: all-MiniLM-L6-v2 as an int8 ONNX Runtime model built from the package's
weights (memory.embeddings.minilm, memory.embeddings.encoder_graph).

Retrieval through it is tested over MCP in test_semantic_retrieval; these pin the vectors
themselves and the built model file every worker process shares.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import override_settings

from memory import embeddings
from memory.embeddings import encoder_graph, local_model, minilm

pytestmark = pytest.mark.skipif(
    local_model.model_zip() is None, reason="the local model's package is not installed"
)

DEPLOYS = "The web frontend is deployed to production every Tuesday."
PARAPHRASE = "On which weekday do we ship the site to prod?"
UNRELATED = "Invoices are archived after a year."
TEXTS = [DEPLOYS, PARAPHRASE, UNRELATED, "Use ruff for lint", "a", "retries " * 200]


@pytest.fixture(scope="module")
def local() -> minilm.MiniLM:
    found = embeddings.embedder()
    assert isinstance(found, minilm.MiniLM)
    return found


def test_vectors_are_unit_rows_of_384_float32(local: minilm.MiniLM) -> None:
    vectors = local.embed(TEXTS)
    assert vectors.shape == (len(TEXTS), 384)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_a_text_has_the_same_vector_alone_and_among_others(local: minilm.MiniLM) -> None:
    together = local.embed(TEXTS)
    alone = np.vstack([local.embed([text]) for text in TEXTS])
    assert np.array_equal(together, alone)
    assert np.array_equal(local.embed(list(reversed(TEXTS))), together[::-1])


def test_a_text_has_the_same_vector_on_any_number_of_threads() -> None:
    # EMBEDDER_THREADS is each process's own setting: workers set differently must store and
    # compare vectors of one model, so the thread count may not change a single bit.
    weights = local_model.model_zip()
    assert weights is not None
    folder = settings.UNFORGETTER["MODELS_DIR"]
    one, two, three = (minilm.MiniLM(weights, folder=folder, threads=n).embed(TEXTS) for n in (1, 2, 3))
    assert np.array_equal(one, two)
    assert np.array_equal(one, three)


def test_threads_by_measuring_keeps_the_faster_count_and_the_same_vectors() -> None:
    # EMBEDDER_THREADS=0 (the default on two cores): the process times one and two threads per
    # call when it loads the model and keeps one of them; the vectors cannot tell which.
    weights = local_model.model_zip()
    assert weights is not None
    folder = settings.UNFORGETTER["MODELS_DIR"]
    measured = minilm.MiniLM(weights, folder=folder, threads=0)
    vectors = measured.embed(TEXTS)
    assert measured.threads in (1, 2)
    assert np.array_equal(vectors, minilm.MiniLM(weights, folder=folder, threads=1).embed(TEXTS))


def test_two_threads_are_kept_only_where_clearly_faster_than_one() -> None:
    assert minilm.threads_for(one=0.010, two=0.008) == 2
    assert minilm.threads_for(one=0.010, two=0.0085) == 2
    assert minilm.threads_for(one=0.010, two=0.009) == 1  # within the noise: one leaves a core free
    assert minilm.threads_for(one=0.0011, two=0.0016) == 1


def test_a_paraphrase_is_closer_than_an_unrelated_sentence(local: minilm.MiniLM) -> None:
    deploys, paraphrase, unrelated = local.embed([DEPLOYS, PARAPHRASE, UNRELATED])
    assert float(deploys @ paraphrase) > float(deploys @ unrelated) + 0.2


def test_int8_vectors_stay_close_to_the_float32_graphs(local: minilm.MiniLM) -> None:
    path = local_model.model_zip()
    assert path is not None
    with zipfile.ZipFile(path) as archive, archive.open("model.safetensors") as stream:
        graph = encoder_graph.build(minilm._safetensors(stream))
    exact = onnxruntime.InferenceSession(graph.SerializeToString(), providers=["CPUExecutionProvider"])
    tokenizer = local._load()[1]
    for text, vector in zip(TEXTS, local.embed(TEXTS), strict=True):
        ids = np.array([tokenizer.encode(text)], dtype=np.int64)
        reference = exact.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0][0]
        # Near but not equal: why the int8 model's vectors are stored under a name of their own.
        assert 0.97 < float(reference @ vector) < 0.99999, text
    assert local.name != "all-MiniLM-L6-v2"


def test_the_model_file_is_built_once_and_then_reused(tmp_path: Path) -> None:
    weights = local_model.model_zip()
    assert weights is not None
    built = minilm.built_model(weights, tmp_path / "models")
    assert built.parent == tmp_path / "models"
    assert f"-b{minilm.BUILDER_VERSION}-" in built.name
    # The graph and its weights (mapped, not copied, by every process); no partial file left behind.
    assert sorted(p.name for p in built.parent.iterdir()) == [built.name, minilm.weights_file(built).name]
    written = built.stat().st_mtime_ns
    assert minilm.built_model(weights, tmp_path / "models") == built
    assert built.stat().st_mtime_ns == written

    fresh = minilm.MiniLM(weights, folder=tmp_path / "models", threads=2)
    assert np.allclose(fresh.embed([DEPLOYS]), embeddings.embedder().embed([DEPLOYS]), atol=1e-6)  # type: ignore[union-attr]


def test_the_weights_are_mapped_from_their_file_not_copied(local: minilm.MiniLM) -> None:
    local.embed([DEPLOYS])
    weights = local_model.model_zip()
    assert weights is not None
    built = minilm.built_model(weights, settings.UNFORGETTER["MODELS_DIR"])
    # Mapped pages of one file are shared by every worker process; a copy would be each one's own.
    assert str(minilm.weights_file(built)) in Path("/proc/self/maps").read_text()


def test_the_session_without_a_memory_arena_gives_the_same_vectors(local: minilm.MiniLM) -> None:
    weights = local_model.model_zip()
    assert weights is not None
    built = minilm.built_model(weights, settings.UNFORGETTER["MODELS_DIR"])
    options = minilm.session_options(1)
    options.enable_cpu_mem_arena = True
    plain = onnxruntime.InferenceSession(str(built), options, providers=["CPUExecutionProvider"])
    tokenizer = local._load()[1]
    for text, vector in zip(TEXTS, local.embed(TEXTS), strict=True):
        ids = np.array([tokenizer.encode(text)], dtype=np.int64)
        other = plain.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0][0]
        assert np.array_equal(other, vector), text


def test_prepare_embedder_leaves_the_model_file_every_process_loads(local: minilm.MiniLM) -> None:
    out = io.StringIO()
    call_command("prepare_embedder", stdout=out)
    weights = local_model.model_zip()
    assert weights is not None
    built = minilm.built_model(weights, settings.UNFORGETTER["MODELS_DIR"])
    assert out.getvalue().startswith(f"{local_model.NAME}: {built} (")
    assert built.is_file()


def test_prepare_embedder_does_nothing_without_the_local_embedder() -> None:
    out = io.StringIO()
    with override_settings(UNFORGETTER={**settings.UNFORGETTER, "EMBEDDER": "off"}):
        call_command("prepare_embedder", stdout=out)
    assert out.getvalue() == "No local embedder to prepare.\n"
