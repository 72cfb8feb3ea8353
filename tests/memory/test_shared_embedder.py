"""The shared embedder: one process per machine runs the local model for every serving process.

Through the MCP SDK client against the live server, with the real service process
(memory.embeddings.service) started by the real supervisor (memory.embeddings.shared), the way a
serving process starts it (`embeddings.share()`, which the ASGI lifespan calls).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.test import override_settings

from memory import embeddings
from memory.embeddings import local_model, minilm, query_vectors, service, shared
from memory.metrics import metrics_text
from memory.models import Embedding
from memory.services.embeddings import embeddings_refresh
from memory.worker import ConsolidatorLoop
from tests.conftest import LiveServer, Tenant
from tests.processes import ROOT, process_env, shared_embedders, wait_until
from tests.readpath import RecordingMCPClient, add_item, sdk_factory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(local_model.model_zip() is None, reason="the local model's package is not installed"),
]

DEPLOYS = "The web frontend is deployed to production every Tuesday."
PARAPHRASES = [
    "On which weekday do we ship the site to prod?",
    "Which day of the week does the website go live?",
    "What day are releases of the site pushed out?",
]
# Long enough for the service to start, restart or be taken over on a busy machine (a liveness
# deadline, not a timing assertion).
DEADLINE = 60.0


@pytest.fixture
def sdk(live: LiveServer) -> Callable[..., RecordingMCPClient]:
    return sdk_factory(live)


@pytest.fixture
def socket_path() -> Iterator[Path]:
    # Short: a Unix socket's path has at most 107 bytes, and pytest's tmp_path can be longer.
    folder = Path(tempfile.mkdtemp(prefix="emb", dir="/tmp"))
    yield folder / "embedder.sock"
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()


@pytest.fixture
def shared_here(socket_path: Path) -> Iterator[shared.Supervisor]:
    """This process (the live server's) uses the shared embedder, as a serving process does."""
    query_vectors.clear()
    with override_settings(UNFORGETTER={**settings.UNFORGETTER, "EMBEDDER_SOCKET": str(socket_path)}):
        supervisor = embeddings.share()
        assert supervisor is not None
        try:
            yield supervisor
        finally:
            embeddings.unshare()
            query_vectors.clear()


def _search(client: RecordingMCPClient, query: str) -> list[dict]:
    return client.ok("search_memory", {"project_id": "platform", "query": query})["results"]


def _service_pid(supervisor: shared.Supervisor) -> int:
    pid = supervisor.service_pid
    assert pid is not None
    return pid


def test_a_serving_process_asks_the_shared_embedder_for_the_same_vectors(
    tenant: Tenant, sdk, shared_here: shared.Supervisor
) -> None:
    model = embeddings.embedder()
    assert isinstance(model, shared.SharedEmbedder)
    assert model.name == local_model.NAME  # its vectors are the local model's: nothing re-embeds
    assert shared_here.runs_the_service
    texts = [DEPLOYS, "", "Größe und Ümlaute " * 40]
    weights = local_model.model_zip()
    assert weights is not None
    own = minilm.MiniLM(weights, folder=settings.UNFORGETTER["MODELS_DIR"], threads=1)
    assert np.array_equal(model.embed(texts), own.embed(texts))

    deploys = add_item(tenant.projects["platform"], DEPLOYS)
    add_item(tenant.projects["platform"], "Kafka topics are named after their producer.")
    embeddings_refresh()
    assert set(Embedding.objects.values_list("model", flat=True)) == {local_model.NAME}
    client = sdk(tenant.issue()[0])
    results = _search(client, PARAPHRASES[0])
    assert [r["ref"] for r in results] == [deploys.ref]
    assert results[0]["why"] == "close in meaning to the query"


def test_when_the_service_dies_calls_are_answered_by_their_words_until_it_is_back(
    tenant: Tenant, sdk, shared_here: shared.Supervisor, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Long enough that the calls below are made while it is down, however slow the machine.
    monkeypatch.setattr(shared, "FIRST_RESTART_SECONDS", 5.0)
    deploys = add_item(tenant.projects["platform"], DEPLOYS)
    embeddings_refresh()
    client = sdk(tenant.issue()[0])
    assert _search(client, PARAPHRASES[0])[0]["ref"] == deploys.ref
    first = _service_pid(shared_here)

    os.kill(first, signal.SIGKILL)
    wait_until(lambda: not shared.answers(shared_here.socket_path), timeout=DEADLINE, what="the service gone")
    # No error: the words still find the fact, and a question only its meaning answers finds nothing.
    words = _search(client, "when is the web frontend deployed")
    assert words[0]["ref"] == deploys.ref
    assert words[0]["why"] == "matches words of the query"
    assert _search(client, PARAPHRASES[1]) == []

    wait_until(
        lambda: shared.answers(shared_here.socket_path), timeout=DEADLINE, what="the service restarted"
    )
    assert _service_pid(shared_here) != first
    # Once it answers and the ranking's rest after the failure is over (RESTING_SECONDS).
    wait_until(
        lambda: [r["ref"] for r in _search(client, PARAPHRASES[2])] == [deploys.ref],
        timeout=DEADLINE,
        what="the paraphrase found by its meaning again",
        interval=0.5,
    )


def test_metrics_say_whether_the_shared_embedder_answers(
    shared_here: shared.Supervisor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shared, "FIRST_RESTART_SECONDS", 5.0)  # down long enough to be scraped
    assert "unforgetter_shared_embedder_up 1.0" in metrics_text().decode()
    os.kill(_service_pid(shared_here), signal.SIGKILL)
    back = shared_here.socket_path
    wait_until(lambda: not shared.answers(back), timeout=DEADLINE, what="the service gone")
    assert "unforgetter_shared_embedder_up 0.0" in metrics_text().decode()
    embeddings.unshare()
    assert "unforgetter_shared_embedder_up" not in metrics_text().decode()  # it embeds itself


def test_the_consolidator_embeds_once_the_service_answers(
    tenant: Tenant, socket_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    item = add_item(tenant.projects["platform"], DEPLOYS)
    loop = ConsolidatorLoop()
    # As at a serving process's start while the service loads: nothing fails, nothing is lost.
    nowhere = shared.SharedEmbedder(socket_path, name=local_model.NAME, dimensions=local_model.DIMENSIONS)
    with pytest.raises(shared.EmbedderUnavailable):
        nowhere.embed([DEPLOYS])
    with monkeypatch.context() as patched:
        patched.setattr(embeddings, "_build", lambda *_: nowhere)
        patched.setattr(embeddings, "_configured", {})
        loop.run_once()
    assert not Embedding.objects.filter(fact=item).exists()

    with override_settings(UNFORGETTER={**settings.UNFORGETTER, "EMBEDDER_SOCKET": str(socket_path)}):
        assert embeddings.share() is not None
    try:
        assert isinstance(embeddings.embedder(), shared.SharedEmbedder)
        loop.run_once()
    finally:
        embeddings.unshare()
    assert Embedding.objects.filter(fact=item, model=local_model.NAME).count() == 1


_SERVES = """
import sys, time
import django
django.setup()
from memory import embeddings
supervisor = embeddings.share()
print("runs" if supervisor.runs_the_service else "waits", flush=True)
time.sleep(600)
"""


def test_when_the_process_running_it_is_killed_another_takes_it_over(socket_path: Path) -> None:
    env = process_env(EMBEDDER_SOCKET=str(socket_path), UNFORGETTER_TESTING="1")
    first = subprocess.Popen(
        [sys.executable, "-c", _SERVES], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert first.stdout is not None
        assert first.stdout.readline().strip() == "runs"
        with override_settings(UNFORGETTER={**settings.UNFORGETTER, "EMBEDDER_SOCKET": str(socket_path)}):
            second = embeddings.share(wait=0)
        assert second is not None
        try:
            assert not second.runs_the_service  # the first process holds the lock
            assert isinstance(embeddings.embedder(), shared.SharedEmbedder)
            assert embeddings.embedder().embed([DEPLOYS]).shape == (1, local_model.DIMENSIONS)  # type: ignore[union-attr]
            (service,) = shared_embedders(first.pid)

            first.kill()
            first.wait()
            # The kernel ends the service with its parent, and releases the parent's lock.
            wait_until(lambda: not _alive(service), timeout=DEADLINE, what="the orphaned service ended")
            wait_until(lambda: second.runs_the_service, timeout=DEADLINE, what="this process took it over")
            wait_until(lambda: shared.answers(socket_path), timeout=DEADLINE, what="the new service answers")
            assert embeddings.embedder().embed([DEPLOYS]).shape == (1, local_model.DIMENSIONS)  # type: ignore[union-attr]
        finally:
            embeddings.unshare()
    finally:
        first.kill()
        first.wait()
    assert not second.runs_the_service


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    return state != "Z"


def _resident_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmRSS:"))


def test_the_service_hands_back_what_a_burst_of_concurrent_texts_took(shared_here: shared.Supervisor) -> None:
    pid = _service_pid(shared_here)
    # Each connection is served on a thread of its own, whose texts' activations glibc keeps
    # once freed (20 MB after 8 clients here) unless the heap is trimmed.
    model = shared.SharedEmbedder(
        shared_here.socket_path, name=local_model.NAME, dimensions=local_model.DIMENSIONS
    )

    def client(n: int) -> None:
        for i in range(150):
            model.embed([f"client {n} asks about task {i}: " + "word " * (i % 60)])

    # What the burst took is its highest resident memory, sampled while it runs: the service
    # trims every few seconds, so on a slow machine a trim may already have run by the time the
    # last client is done, and the memory read then was no longer what the burst held.
    samples = [_resident_mb(pid)]
    bursting = threading.Event()
    bursting.set()

    def sample() -> None:
        while bursting.is_set():
            samples.append(_resident_mb(pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    clients = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    sampler.start()
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join()
    bursting.clear()
    sampler.join()
    burst = max(*samples, _resident_mb(pid))
    wait_until(
        lambda: _resident_mb(pid) <= burst - 5,
        timeout=DEADLINE,
        what=f"the service's resident memory below {burst - 5:.0f} MB after the burst",
        interval=0.5,
    )


def test_the_service_refuses_what_is_not_a_list_of_texts(shared_here: shared.Supervisor) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stream:
        stream.settimeout(10)
        stream.connect(str(shared_here.socket_path))
        for request in (b"not json", b'{"texts": 1}', b'["a", 2]'):
            shared.write_frame(stream, request)
            answer = shared.read_frame(stream)
            assert answer is not None
            assert answer[:1] == shared.ERROR
        shared.write_frame(stream, b'["still served"]')
        answer = shared.read_frame(stream)
        assert answer is not None
        assert answer[:1] == shared.VECTORS
        assert len(answer) == 1 + 4 * local_model.DIMENSIONS
        # A frame claiming more than the largest allowed is not read: the connection is closed.
        stream.sendall(shared.HEADER.pack(shared.MAX_FRAME + 1))
        assert stream.recv(1) == b""
    assert oct(shared_here.socket_path.stat().st_mode & 0o777) == "0o600"


def test_a_serving_process_without_a_usable_socket_embeds_for_itself(socket_path: Path) -> None:
    long = socket_path.parent / ("x" * 120) / "embedder.sock"
    with override_settings(UNFORGETTER={**settings.UNFORGETTER, "EMBEDDER_SOCKET": str(long)}):
        assert embeddings.share() is None
    with override_settings(UNFORGETTER={**settings.UNFORGETTER, "EMBEDDER_SOCKET": ""}):
        assert embeddings.share() is None
    assert isinstance(embeddings.embedder(), minilm.MiniLM)


def test_sharing_again_leaves_one_supervisor_and_one_service(socket_path: Path) -> None:
    with override_settings(UNFORGETTER={**settings.UNFORGETTER, "EMBEDDER_SOCKET": str(socket_path)}):
        first = embeddings.share()
        second = embeddings.share()
    try:
        assert first is not None
        assert second is not None
        assert first.service_pid is None  # stopped, its service with it
        wait_until(lambda: second.runs_the_service, timeout=DEADLINE, what="the new supervisor runs it")
        assert embeddings.embedder().embed([DEPLOYS]).shape == (1, local_model.DIMENSIONS)  # type: ignore[union-attr]
    finally:
        embeddings.unshare()


def _thread_nices(pid: int) -> dict[int, int]:
    """Each thread of the process and its nice value (field 19 of /proc/PID/task/TID/stat)."""
    nices = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[-1].split()
        except (FileNotFoundError, ProcessLookupError):
            # A thread that ended meanwhile (one served a passing connection): gone before its
            # file was opened (ENOENT), or between the open and the read (ESRCH).
            continue
        nices[int(task.name)] = int(fields[16])
    return nices


@pytest.mark.skipif(sys.platform != "linux", reason="a thread's own priority is Linux's")
def test_bulk_texts_are_embedded_at_the_lowest_priority_and_queries_are_not(
    shared_here: shared.Supervisor,
) -> None:
    pid = _service_pid(shared_here)
    before = _thread_nices(pid)
    assert set(before.values()) == {0}
    with (
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as bulk,
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as query,
    ):
        for stream, texts in ((bulk, ["first new item", "second new item"]), (query, ["a query"])):
            stream.settimeout(10)
            stream.connect(str(shared_here.socket_path))
            shared.write_frame(stream, json.dumps(texts).encode())
            answer = shared.read_frame(stream)
            assert answer is not None
            assert answer[:1] == shared.VECTORS
            assert len(answer) == 1 + 4 * local_model.DIMENSIONS * len(texts)
        # Each connection is served by a thread of its own: the bulk texts' alone yields.
        lowered = [tid for tid, nice in _thread_nices(pid).items() if nice == service.BULK_NICE]
        assert len(lowered) == 1
        assert lowered[0] not in before
        # The query's thread answers its next text at the priority it had, as every other does.
        shared.write_frame(query, json.dumps(["another query"]).encode())
        assert shared.read_frame(query) is not None
        assert {tid: nice for tid, nice in _thread_nices(pid).items() if nice} == {
            lowered[0]: service.BULK_NICE
        }
    # Its connection closed, that thread ends; the service's own threads never yielded.
    assert all(nice == 0 for tid, nice in _thread_nices(pid).items() if tid in before)


def _connections_served(pid: int) -> int:
    """How many threads the service runs: one per connection, beside its own few."""
    return len(list(Path(f"/proc/{pid}/task").iterdir()))


def _embedding_threads() -> set[str]:
    return {thread.name for thread in threading.enumerate() if thread.name.startswith("embed_")}


def test_a_query_sent_ahead_is_read_by_the_thread_that_wants_its_vector(
    shared_here: shared.Supervisor,
) -> None:
    pid = _service_pid(shared_here)
    model = embeddings.embedder()
    assert isinstance(model, shared.SharedEmbedder)
    weights = local_model.model_zip()
    assert weights is not None
    own = minilm.MiniLM(weights, folder=settings.UNFORGETTER["MODELS_DIR"], threads=1)
    vectors = embeddings._QueryVectors(64)
    threads, served = _embedding_threads(), _connections_served(pid)
    for i in range(20):
        text = f"task {i}: when is the web frontend deployed"
        vectors.prefetch(model, text)
        assert np.array_equal(vectors.get(model, text), own.embed([text])[0])
    # No thread between the socket and the caller, and one connection carried every text in turn.
    assert _embedding_threads() == threads
    assert _connections_served(pid) <= served + 1


def test_answers_no_call_read_are_read_later_and_their_connections_used_again(
    shared_here: shared.Supervisor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embeddings, "UNREAD_SECONDS", 0.05)
    pid = _service_pid(shared_here)
    model = embeddings.embedder()
    assert isinstance(model, shared.SharedEmbedder)
    vectors = embeddings._QueryVectors(64)
    threads, served = _embedding_threads(), _connections_served(pid)
    # Calls that ended before wanting their vectors (a bundle from the cache, say), twice over:
    # the second round finds the first round's connections idle again.
    for round_ in range(2):
        texts = [f"round {round_}, text {i}" for i in range(shared.ASKING_CONNECTIONS)]
        for text in texts:
            vectors.prefetch(model, text)
        assert model._asking == shared.ASKING_CONNECTIONS
        wait_until(lambda: len(model._idle) == model._asking, timeout=DEADLINE, what="every answer read")
    assert _embedding_threads() == threads
    assert _connections_served(pid) <= served + shared.ASKING_CONNECTIONS
    weights = local_model.model_zip()
    assert weights is not None
    own = minilm.MiniLM(weights, folder=settings.UNFORGETTER["MODELS_DIR"], threads=1)
    assert np.array_equal(vectors.get(model, "round 1, text 3"), own.embed(["round 1, text 3"])[0])


def _fake_service(
    path: Path, answers: list[bytes | None], gate: threading.Event | None = None
) -> threading.Thread:
    """A service at `path` that takes one connection per entry of `answers` and reads a text on
    it, then (once `gate` is set, if given) answers with the entry's frame or, for None, closes
    the connection unanswered."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(len(answers))

    def serve() -> None:
        with listener:
            for answer in answers:
                stream, _ = listener.accept()
                with stream:
                    assert shared.read_frame(stream) is not None
                    assert gate is None or gate.wait(DEADLINE)
                    if answer is not None:
                        shared.write_frame(stream, answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def test_an_answer_lost_with_its_connection_is_asked_for_again(socket_path: Path) -> None:
    vector = np.array([0.5, -0.5, 0.5, -0.5], dtype="<f4")
    service_ = _fake_service(socket_path, [None, shared.VECTORS + vector.tobytes()])
    model = shared.SharedEmbedder(socket_path, name="fake", dimensions=4)
    asked = model.ask("a query")
    assert asked is not None
    assert np.array_equal(asked.vector(), vector)  # the first connection closed unanswered
    assert np.array_equal(asked.vector(), vector)  # read once, kept
    service_.join(timeout=DEADLINE)
    assert not service_.is_alive()


def test_asking_never_waits_for_a_service_that_takes_no_connection(socket_path: Path) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(socket_path))
    listener.listen(1)
    waiting = []
    with listener:
        # Connections it never accepts, until its queue is full.
        for _ in range(100):
            stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            stream.setblocking(False)
            waiting.append(stream)
            try:
                stream.connect(str(socket_path))
            except BlockingIOError:
                break
        else:
            pytest.fail("the listener's queue never filled")
        model = shared.SharedEmbedder(socket_path, name="fake", dimensions=4)
        asked: list[object] = []
        asking = threading.Thread(target=lambda: asked.append(model.ask("a query")), daemon=True)
        asking.start()
        asking.join(timeout=DEADLINE)  # liveness: a connect that waited would hang here
        assert not asking.is_alive()
        assert asked == [None]  # the caller embeds the text the usual way
        assert model._asking == 0
    for stream in waiting:
        stream.close()


def test_a_bounded_wait_gives_up_on_a_late_answer_and_keeps_it_when_it_comes(socket_path: Path) -> None:
    vector = np.array([0.5, -0.5, 0.5, -0.5], dtype="<f4")
    gate = threading.Event()
    answer = shared.VECTORS + vector.tobytes()
    service_ = _fake_service(socket_path, [answer, answer], gate)
    model = shared.SharedEmbedder(socket_path, name="fake", dimensions=4)
    vectors = embeddings._QueryVectors(64)
    vectors.prefetch(model, "waited for here")
    vectors.prefetch(model, "read by another thread")
    with pytest.raises(embeddings.EmbedderSlow):
        vectors.get(model, "waited for here", within=0.05)
    assert vectors.failing("fake")
    # The other text's answer is being read by another thread (which holds its connection):
    # a bounded wait waits for that thread, and gives up just the same.
    reader = ThreadPoolExecutor(1)
    read = reader.submit(vectors.get, model, "read by another thread")
    taken = vectors._pending[("fake", "read by another thread")]
    assert isinstance(taken, embeddings._Answer)  # sent ahead on a connection of its own
    wait_until(lambda: not taken.unread, timeout=DEADLINE, what="the answer taken by the reader")
    with pytest.raises(embeddings.EmbedderSlow):
        vectors.get(model, "read by another thread", within=0.05)
    gate.set()
    assert np.array_equal(read.result(DEADLINE), vector)
    assert np.array_equal(vectors.get(model, "read by another thread", within=DEADLINE), vector)
    assert np.array_equal(vectors.get(model, "waited for here", within=DEADLINE), vector)
    assert not vectors.failing("fake")  # it answered
    reader.shutdown()
    service_.join(timeout=DEADLINE)
    assert not service_.is_alive()
