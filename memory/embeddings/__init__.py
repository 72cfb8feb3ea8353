"""Sentence embeddings: the pluggable embedder, the query-vector cache and the vector index.

An embedder turns texts into unit-length float32 rows (`Embedder`). Which one runs is the
`EMBEDDER` setting: "local" (all-MiniLM-L6-v2 from its PyPI package, int8 on the CPU with ONNX
Runtime; see memory.embeddings.minilm), "openai" (any OpenAI-compatible `/embeddings` endpoint, see
memory.embeddings.remote) or "off". With none available retrieval is lexical alone, and every
vector-dependent step is skipped.

A serving process does not load the local model itself: `share()` has it ask the machine's
shared embedder (memory.embeddings.shared), one process that every serving process beside it uses.
Other processes (commands, Celery workers, tests) load the model where they embed.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Protocol

import numpy as np
from django.conf import settings

from memory.embeddings import local_model, remote, shared

logger = logging.getLogger(__name__)

QUERY_CACHE_SIZE = 2048
# After an embedder fails a query, how long queries are ranked without it before it is tried again.
RESTING_SECONDS = 5.0
# How long a serving process waits at its start for the shared embedder to answer.
SHARED_START_SECONDS = 30.0
# Texts embedded ahead of their call at once per process (one core's worth on a small machine).
PREFETCH_THREADS = 2
# A text sent ahead to the shared embedder whose call did not read its answer within this long
# (the call ended first: a bundle served from the cache, a credential refused) has it read by
# the query cache's own thread, and the connection goes back to the next text.
UNREAD_SECONDS = 0.25
# A call that holds the event loop (mcpbridge.threads.on_event_loop) waits at most this long for
# its text's vector, then ranks by words: a shared embedder that hangs would hold it, and every
# request of its process, for the socket's timeout. A text takes milliseconds, 8 at once a few
# tens. Until the embedder answers again, calls take request threads (`embedder_failing`).
LOOP_HELD_SECONDS = 1.0


class Embedder(Protocol):
    """Turns texts into unit-length vectors; `name` is stored with every vector it makes."""

    name: str

    def embed(self, texts: list[str]) -> np.ndarray: ...


_lock = threading.Lock()
_configured: dict[tuple[str, str, str], Embedder | None] = {}
# Set by `share()` in a serving process: its local model runs in the shared embedder.
_supervisor: shared.Supervisor | None = None


def embedder() -> Embedder | None:
    """The configured embedder, built once per process and setting; None when there is none."""
    conf = settings.UNFORGETTER
    key = (conf["EMBEDDER"], conf["EMBEDDINGS_URL"], conf["EMBEDDINGS_MODEL"])
    if key not in _configured:
        with _lock:
            if key not in _configured:
                _configured[key] = _build(*key)
    return _configured[key]


def _build(kind: str, url: str, model: str) -> Embedder | None:
    if kind == "local":
        path = local_model.model_zip()
        if path is None:
            return None
        if _supervisor is not None:
            return shared.SharedEmbedder(
                _supervisor.socket_path, name=local_model.NAME, dimensions=local_model.DIMENSIONS
            )
        # Imported here: ONNX Runtime is 28-37 MB of every process that loads it,
        # and a process with another embedder (or none) never runs it.
        from memory.embeddings import minilm  # noqa: PLC0415

        conf = settings.UNFORGETTER
        return minilm.MiniLM(path, folder=conf["MODELS_DIR"], threads=conf["EMBEDDER_THREADS"])
    if kind == "openai" and url:
        return remote.RemoteEmbedder(url=url, model=model, api_key=settings.UNFORGETTER["EMBEDDINGS_API_KEY"])
    return None


def share(*, wait: float = SHARED_START_SECONDS) -> shared.Supervisor | None:
    """Have this serving process's local model run by the machine's shared embedder.

    Called once at a serving process's start (unforgetter.asgi), before anything embeds. Does
    nothing unless the embedder is the local one, its package is installed and EMBEDDER_SOCKET
    names a socket. Starts this process's `shared.Supervisor` and waits up to `wait` seconds
    for the service to answer, so that a fresh server ranks its first calls by meaning too.
    Returns the supervisor (`unshare()` stops it).
    """
    global _supervisor
    conf = settings.UNFORGETTER
    socket_path, weights = conf["EMBEDDER_SOCKET"], local_model.model_zip()
    if conf["EMBEDDER"] != "local" or not socket_path or weights is None:
        return None
    socket_path = Path(socket_path).absolute()
    if len(str(socket_path).encode()) > shared.MAX_SOCKET_PATH:
        logger.warning(
            "EMBEDDER_SOCKET %s is too long for a Unix socket; each process embeds for itself", socket_path
        )
        return None
    command = [
        sys.executable,
        "-m",
        "memory.embeddings.service",
        *("--socket", str(socket_path), "--model-zip", str(weights)),
        *("--folder", str(Path(conf["MODELS_DIR"]).absolute()), "--threads", str(conf["EMBEDDER_THREADS"])),
    ]
    unshare()  # called again (a lifespan restarted in process): one supervisor per process
    supervisor = shared.Supervisor(socket_path, command, cwd=Path(settings.BASE_DIR))
    with _lock:
        _supervisor = supervisor
        _configured.clear()
    supervisor.start()
    if not supervisor.wait_until_answered(wait):
        logger.warning(
            "the shared embedder did not answer within %.0f s; calls are ranked by their words until it does",
            wait,
        )
    return supervisor


def shared_embedder_answers() -> bool | None:
    """Whether the shared embedder this process uses answers now; None where it embeds itself."""
    supervisor = _supervisor
    return None if supervisor is None else shared.answers(supervisor.socket_path)


def unshare() -> None:
    """Stop this process's supervisor (and the service, where this process runs it)."""
    global _supervisor
    with _lock:
        supervisor, _supervisor = _supervisor, None
        _configured.clear()
    if supervisor is not None:
        supervisor.stop()


class EmbedderResting(RuntimeError):
    """The embedder failed a moment ago: queries are not sent to it until `RESTING_SECONDS` pass."""


class EmbedderSlow(RuntimeError):
    """A call holding the event loop had no vector within `LOOP_HELD_SECONDS`."""


class _QueryVectors:
    """The vector of each recent query or task text, per embedder: a repeated question costs nothing.

    `prefetch` starts embedding a text ahead of its call, so that the call's other work (the
    credential's publication, the standing part, the word ranking) runs meanwhile; `get` then
    waits for that result instead of embedding the text again. The shared embedder is sent the
    text at once (`SharedEmbedder.ask`), and the call's own thread reads the answer when it wants
    the vector, straight from the socket; any other embedder runs on a thread of its own (ONNX
    Runtime releases the GIL while the model runs, so the two overlap).

    After an embedder fails a text, no new text is sent to it for `RESTING_SECONDS` (`get`
    raises `EmbedderResting`, `prefetch` does nothing); then the next one is. An endpoint that
    hangs holds one call for its timeout then, not every call.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._pending: dict[tuple[str, str], Future[np.ndarray] | _Answer] = {}
        self._executor: ThreadPoolExecutor | None = None
        self._failed: dict[str, float] = {}  # embedder name: when it last failed a text
        self._slow: set[str] = set()  # embedders a loop-held call gave up waiting for
        self._unread: queue.SimpleQueue[tuple[float, _Answer]] = queue.SimpleQueue()
        self._reader: threading.Thread | None = None

    def get(self, model: Embedder, text: str, within: float | None = None) -> np.ndarray:
        """The text's vector; with `within`, `EmbedderSlow` if it takes longer than that many
        seconds (its answer is still kept when it comes), and the embedder counts as failing
        until it answers (`failing`)."""
        key = (model.name, text)
        with self._lock:
            cached = self._vectors.get(key)
            if cached is not None:
                self._vectors.move_to_end(key)
                return cached
            pending = self._pending.get(key)
            resting = self._resting(model.name)
        if resting and pending is None:
            raise EmbedderResting(f"{model.name} failed less than {RESTING_SECONDS:.0f} s ago")
        if within is None:
            return pending.result() if pending is not None else self._embedded(model, text)
        if pending is None:
            self.prefetch(model, text)
            with self._lock:
                pending = self._pending.get(key)
            if pending is None:  # embedded meanwhile, or failed at once
                return self.get(model, text)
        if not _finishes(pending, within):
            with self._lock:
                self._slow.add(model.name)
            raise EmbedderSlow(f"{model.name} did not answer within {within:g} s")
        return pending.result()

    def failing(self, name: str) -> bool:
        """Whether the embedder `name` failed (or was too slow for) the last text it was sent,
        and has answered none since."""
        return name in self._failed or name in self._slow

    def _resting(self, name: str) -> bool:
        failed = self._failed.get(name)
        return failed is not None and time.monotonic() - failed < RESTING_SECONDS

    def pending(self, model: Embedder, text: str) -> bool:
        """Whether `text` is being embedded in the background and its vector is not ready yet."""
        with self._lock:
            pending = self._pending.get((model.name, text))
        return pending is not None and not pending.done()

    def prefetch(self, model: Embedder, text: str) -> None:
        """Start embedding `text` in the background unless it is cached or under way."""
        key = (model.name, text)
        with self._lock:
            if key in self._vectors or key in self._pending or self._resting(model.name):
                return
            asked = model.ask(text) if isinstance(model, shared.SharedEmbedder) else None
            if asked is not None:
                answer = self._pending[key] = _Answer(self, model, text, asked)
                self._unread_later(answer)
                return
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=PREFETCH_THREADS, thread_name_prefix="embed")
            self._pending[key] = self._executor.submit(self._embedded, model, text)

    def _embedded(
        self, model: Embedder, text: str, made: Callable[[], np.ndarray] | None = None
    ) -> np.ndarray:
        key = (model.name, text)
        try:
            vector: np.ndarray = made() if made is not None else model.embed([text])[0]
        except BaseException:
            with self._lock:
                self._pending.pop(key, None)
                self._failed[model.name] = time.monotonic()
            raise
        with self._lock:
            self._failed.pop(model.name, None)
            self._slow.discard(model.name)
            self._vectors[key] = vector
            while len(self._vectors) > self._size:
                self._vectors.popitem(last=False)
            self._pending.pop(key, None)
        return vector

    def _unread_later(self, answer: _Answer) -> None:
        """Have `answer` read UNREAD_SECONDS from now unless its call reads it first."""
        self._unread.put((time.monotonic() + UNREAD_SECONDS, answer))
        if self._reader is None:
            self._reader = threading.Thread(target=self._read_unread, name="embed-answers", daemon=True)
            self._reader.start()

    def _read_unread(self) -> None:
        while True:
            due, answer = self._unread.get()
            time.sleep(max(0.0, due - time.monotonic()))
            # An answer its call read is kept already; one no call read is read here (a failure
            # is noted in `_failed`; the call that wanted it has ended).
            if answer.unread:
                with contextlib.suppress(Exception):
                    answer.result()

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()
            self._failed.clear()
            self._slow.clear()


def _finishes(pending: Future[np.ndarray] | _Answer, within: float) -> bool:
    """Whether a text under way has its vector (or error) within `within` seconds."""
    if isinstance(pending, Future):
        return bool(wait([pending], timeout=within).done)
    return pending.wait(within)


class _Answer:
    """A text sent ahead with `SharedEmbedder.ask`, as `_QueryVectors` keeps it under way: its
    `result` reads the answer (once, in the thread that wants it first) and keeps the vector."""

    def __init__(self, vectors: _QueryVectors, model: Embedder, text: str, asked: shared.Asked) -> None:
        self._vectors = vectors
        self._model = model
        self._text = text
        self._asked = asked

    def result(self) -> np.ndarray:
        return self._vectors._embedded(self._model, self._text, self._asked.vector)

    def done(self) -> bool:
        return self._asked.ready()

    def wait(self, timeout: float) -> bool:
        return self._asked.wait(timeout)

    @property
    def unread(self) -> bool:
        return self._asked.unread


query_vectors = _QueryVectors(QUERY_CACHE_SIZE)


def embedder_failing() -> bool:
    """Whether the configured embedder failed the last query text it was sent (none answered since)."""
    model = embedder()
    return model is not None and query_vectors.failing(model.name)
