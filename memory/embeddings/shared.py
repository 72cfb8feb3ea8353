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

import fcntl
import json
import logging
import os
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


def write_frame(stream: socket.socket, body: bytes) -> None:
    stream.sendall(HEADER.pack(len(body)) + body)


class SharedEmbedder:
    """The local model's vectors, made by the shared embedder: `name` is the model's own.

    Each thread keeps a connection of its own. A kept connection that fails is closed and the
    texts asked for once more on a new one (the service may have been restarted since); if that
    fails too, or the service refuses the texts, `EmbedderUnavailable`.
    """

    def __init__(self, path: Path, *, name: str, dimensions: int) -> None:
        self.name = name
        self.dimensions = dimensions
        self._path = str(path)
        self._local = threading.local()

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
