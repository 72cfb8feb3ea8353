"""The serving processes' side of the shared embedder (memory.embeddings.service).

`share()` (memory.embeddings) makes a serving process ask the machine's shared embedder for its
vectors (`SharedEmbedder`) instead of loading the local model itself, and starts a `Supervisor`
there. Every serving process of the machine runs one; the one that holds the lock file beside
the socket runs the service as its child and starts it again whenever it ends. When that process
ends (kill -9 included), the kernel releases its lock and ends its child, and another serving
process's supervisor takes both over within a second or two.

While no service answers, `SharedEmbedder.embed` raises `EmbedderUnavailable` at once: a call is
then ranked by its words alone (memory.retrieval) and the consolidator embeds on a later cycle.

This module imports neither Django nor ONNX Runtime: the service imports its framing.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import select
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)

HEADER = struct.Struct(">I")
# A frame larger than this is refused (a backfill batch of 64 texts is a few hundred KB).
MAX_FRAME = 16 * 1024 * 1024
VECTORS = b"v"
ERROR = b"e"
# How long an answer may take: a backfill batch of long texts on a busy machine is a second or so.
TIMEOUT_SECONDS = 10.0
# The longest Unix socket path Linux binds (sun_path is 108 bytes with its terminating NUL).
MAX_SOCKET_PATH = 107
# The supervisor: how often a process without the lock tries to take it, and the waits between
# restarts of a service that keeps ending (doubling up to the longest, back to the first after a
# run of HEALTHY_SECONDS).
LOCK_RETRY_SECONDS = 1.0
FIRST_RESTART_SECONDS = 1.0
LONGEST_RESTART_SECONDS = 60.0
HEALTHY_SECONDS = 60.0


class EmbedderUnavailable(ConnectionError):
    """No shared embedder answers at the socket (not started yet, restarting, or gone)."""


def read_frame(stream: socket.socket) -> bytes | None:
    """One frame from `stream`, or None when the peer closed it between frames."""
    header = _read_exactly(stream, HEADER.size)
    if header is None:
        return None
    (size,) = HEADER.unpack(header)
    if size > MAX_FRAME:
        raise ValueError(f"a frame of {size} bytes is larger than {MAX_FRAME}")
    body = _read_exactly(stream, size)
    if body is None:
        raise ConnectionError("the peer closed the connection inside a frame")
    return body


def _read_exactly(stream: socket.socket, size: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = stream.recv(size - len(chunks))
        if not chunk:
            if chunks:
                raise ConnectionError("the peer closed the connection inside a frame")
            return None
        chunks += chunk
    return bytes(chunks)


def framed(body: bytes) -> bytes:
    """`body` as one frame: its length, then itself."""
    return HEADER.pack(len(body)) + body


def write_frame(stream: socket.socket, body: bytes) -> None:
    stream.sendall(framed(body))


# Connections `SharedEmbedder.ask` keeps at most (idle or owed an answer), per process.
ASKING_CONNECTIONS = 8


class SharedEmbedder:
    """The local model's vectors, made by the shared embedder: `name` is the model's own.

    Each thread keeps a connection of its own. A kept connection that fails is closed and the
    texts asked for once more on a new one (the service may have been restarted since); if that
    fails too, or the service refuses the texts, `EmbedderUnavailable`.

    `ask` sends one text without waiting for its answer, on connections of their own: the answer
    is read by whichever thread wants the vector (`Asked.vector`), so it reaches that thread
    straight from the socket, with no thread between the two.
    """

    def __init__(self, path: Path, *, name: str, dimensions: int) -> None:
        self.name = name
        self.dimensions = dimensions
        self._path = str(path)
        self._local = threading.local()
        self._asking_lock = threading.Lock()
        self._idle: list[socket.socket] = []  # `ask`'s connections owed no answer
        self._asking = 0  # `ask`'s connections, idle or owed an answer

    def ask(self, text: str) -> Asked | None:
        """`text` sent to the service now, its answer to be read later (`Asked.vector`); None
        when it cannot be sent at once (the caller embeds the text the usual way).

        Nothing here waits, so an event loop may call it: the request goes on an idle connection
        or a new one (a Unix socket connects at once or not at all, without blocking), and is
        written whole in one non-blocking send or not at all (the connection is then closed).
        """
        frame = framed(json.dumps([text]).encode())
        while (stream := self._asking_stream()) is not None:
            try:
                stream.setblocking(False)
                sent = stream.send(frame)
                stream.settimeout(TIMEOUT_SECONDS)
            except OSError:
                sent = 0
            if sent == len(frame):
                return Asked(self, stream, text)
            # Closed by a service that ended since, or not taken whole: its state is unknown.
            self._asking_closed(stream)
        return None

    def _asking_stream(self) -> socket.socket | None:
        """An idle connection for `ask`, or a new one while there are fewer than
        ASKING_CONNECTIONS; None when none is at hand without waiting."""
        with self._asking_lock:
            if self._idle:
                return self._idle.pop()
            if self._asking >= ASKING_CONNECTIONS:
                return None
            self._asking += 1
        stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            stream.setblocking(False)  # a listener whose backlog is full refuses (EAGAIN) at once
            stream.connect(self._path)
        except OSError:
            self._asking_closed(stream)
            return None
        return stream

    def _asking_closed(self, stream: socket.socket) -> None:
        stream.close()
        with self._asking_lock:
            self._asking -= 1

    def _asking_idle(self, stream: socket.socket) -> None:
        with self._asking_lock:
            self._idle.append(stream)

    def embed(self, texts: list[str]) -> np.ndarray:
        request = json.dumps(texts).encode()
        kept = getattr(self._local, "stream", None)
        try:
            if kept is not None:
                try:
                    return self._asked(kept, request, len(texts))
                except (OSError, ValueError):
                    pass  # kept from before a restart of the service, say: once more, anew
            return self._asked(self._connected(), request, len(texts))
        except (OSError, ValueError) as exc:
            raise EmbedderUnavailable(f"no shared embedder answers at {self._path} ({exc})") from exc

    def _asked(self, stream: socket.socket, request: bytes, count: int) -> np.ndarray:
        """The vectors `stream` answers `request` with; the stream is kept for the thread's next
        texts, or closed if anything fails (its state is then unknown)."""
        self._local.stream = stream
        try:
            write_frame(stream, request)
            body = read_frame(stream)
            if body is None:
                raise ConnectionError("the shared embedder closed the connection")
            return self._vectors(body, count)
        except BaseException:
            self._local.stream = None
            stream.close()
            raise

    def _connected(self) -> socket.socket:
        stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stream.settimeout(TIMEOUT_SECONDS)
        try:
            stream.connect(self._path)
        except OSError:
            stream.close()
            raise
        return stream

    def _vectors(self, body: bytes, count: int) -> np.ndarray:
        if body[:1] != VECTORS:
            raise ValueError(f"the shared embedder refused the texts: {body[1:].decode(errors='replace')}")
        rows = np.frombuffer(body, dtype="<f4", offset=1)
        return rows.reshape(count, self.dimensions).astype(np.float32)


class Asked:
    """One text `SharedEmbedder.ask` sent: its vector is read from the connection once, by the
    first thread that wants it (`vector`); the others get the same vector (or error)."""

    def __init__(self, embedder: SharedEmbedder, stream: socket.socket, text: str) -> None:
        self._embedder = embedder
        self._stream: socket.socket | None = stream
        self._text = text
        self._lock = threading.Lock()
        self._vector: np.ndarray | None = None
        self._error: BaseException | None = None

    @property
    def unread(self) -> bool:
        """Whether no thread has taken its answer from the connection yet."""
        return self._stream is not None

    def ready(self) -> bool:
        """Whether the vector can be had without waiting: read, or its answer has arrived."""
        return self.wait(0.0)

    def wait(self, timeout: float) -> bool:
        """Whether the vector can be had within `timeout` seconds (read, or its answer arrived);
        False, having waited that long, if not."""
        deadline = time.monotonic() + timeout
        stream = self._stream
        if stream is not None:
            with contextlib.suppress(OSError, ValueError):  # taken by another thread meanwhile
                if select.select([stream], [], [], timeout)[0]:
                    return True
            if self._stream is stream:
                return False
        # Taken by another thread, which holds the lock until the vector (or error) is in.
        if not self._lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            return False
        self._lock.release()
        return True

    def vector(self) -> np.ndarray:
        """The text's vector (read from its connection by the first caller, who may wait for
        it); `EmbedderUnavailable` if the service cannot answer. A connection whose answer was
        lost (the service restarted meanwhile) is closed and the text asked once more, anew."""
        with self._lock:
            stream, self._stream = self._stream, None
            if stream is not None:
                try:
                    body = read_frame(stream)
                    if body is None:
                        raise ConnectionError("the shared embedder closed the connection")
                    self._vector = self._embedder._vectors(body, 1)[0]
                except (OSError, ValueError):
                    self._embedder._asking_closed(stream)
                    try:
                        self._vector = self._embedder.embed([self._text])[0]
                    except BaseException as exc:
                        self._error = exc
                except BaseException as exc:
                    self._embedder._asking_closed(stream)
                    self._error = exc
                else:
                    self._embedder._asking_idle(stream)
            if self._error is not None:
                raise self._error
            assert self._vector is not None
            return self._vector


def answers(path: Path) -> bool:
    """Whether a shared embedder accepts connections at `path`."""
    stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        stream.connect(str(path))
    except OSError:
        return False
    finally:
        stream.close()
    return True


class Supervisor:
    """Keeps the machine's shared embedder running while this process serves.

    Every serving process runs one on a thread of its own; whichever holds the lock file
    (`flock`, released by the kernel when its process ends, however it ends) runs `command` as
    its child, with `--parent` so that the child ends with it.
    """

    def __init__(self, socket_path: Path, command: list[str], *, cwd: Path) -> None:
        self.socket_path = socket_path
        self._lock_path = socket_path.with_name(socket_path.name + ".lock")
        self._command = command
        self._cwd = cwd
        self._stop = threading.Event()
        self._child: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None

    @property
    def service_pid(self) -> int | None:
        """The service's process id where this process runs it now, else None."""
        child = self._child
        return child.pid if child is not None and child.poll() is None else None

    @property
    def runs_the_service(self) -> bool:
        """Whether this process is the one running the service now."""
        return self.service_pid is not None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="shared-embedder", daemon=True)
        self._thread.start()

    def wait_until_answered(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the service to answer; whether it does."""
        deadline = time.monotonic() + timeout
        while not answers(self.socket_path):
            if time.monotonic() >= deadline or self._stop.is_set():
                return False
            time.sleep(0.05)
        return True

    def stop(self) -> None:
        self._stop.set()
        child = self._child
        if child is not None and child.poll() is None:
            child.terminate()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        self.socket_path.parent.mkdir(parents=True, exist_ok=True)
        lock = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            while not self._stop.is_set():
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    self._stop.wait(LOCK_RETRY_SECONDS)
                    continue
                try:
                    self._keep_running()
                finally:
                    fcntl.flock(lock, fcntl.LOCK_UN)
        finally:
            os.close(lock)

    def _keep_running(self) -> None:
        restarts = 0
        while not self._stop.is_set():
            started = time.monotonic()
            # The command is built from settings (memory.embeddings.share), not from any request.
            command = [*self._command, "--parent", str(os.getpid())]
            self._child = subprocess.Popen(command, cwd=self._cwd)  # noqa: S603
            code = self._child.wait()
            if self._stop.is_set():
                return
            restarts = 0 if time.monotonic() - started >= HEALTHY_SECONDS else restarts + 1
            wait = (
                min(FIRST_RESTART_SECONDS * 2 ** (restarts - 1), LONGEST_RESTART_SECONDS) if restarts else 0.0
            )
            logger.warning(
                "the shared embedder ended (exit code %s); starting it again in %.0f s", code, wait
            )
            self._stop.wait(wait)
