"""The shared embedder: one process per machine that embeds for every serving process beside it.

The local model costs each process that loads it 55-70 MB (ONNX Runtime's library, its session
and the pages of the weights it reads), and a web worker only embeds queries, a few milliseconds
now and then. So the serving processes of one machine (`make run`'s workers, a fleet's uvicorn)
leave the model to this process and ask it over a Unix socket (memory.embeddings.shared): a
worker then holds no ONNX Runtime at all, and the vectors are the ones it would have made
itself, bit for bit (the same model files, one text per run).

The protocol (framed by memory.embeddings.shared), both ways a 4-byte big-endian length and then
the frame:
- request: a JSON array of texts;
- answer: b"v" and the rows as little-endian float32 (384 per text), or b"e" and a message.

The socket is bound only once the model is loaded and has embedded a text, under a name of its
own, and then renamed into place: a process that connects is answered at once, and a restarted
service replaces the old socket without a moment when there is none. It is the caller's file
alone (mode 0600). The process ends with the one that started it (`--parent`).

Run by memory.embeddings.shared's supervisor as `python -m memory.embeddings.service`; it does
not set Django up, so it is the model and little else.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import logging
import os
import signal
import socketserver
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from memory.embeddings import local_model, minilm
from memory.embeddings.shared import ERROR, VECTORS, read_frame, write_frame
from memory.heap import limit_malloc_arenas, trim_periodically
from workspaces.logs import console_handler

logger = logging.getLogger("memory.embeddings.service")

PR_SET_PDEATHSIG = 1
PARENT_CHECK_SECONDS = 0.5


# The CPU priority (nice value) of a thread that has answered a request of several texts.
BULK_NICE = 19


def answer(model: minilm.MiniLM, request: bytes, *, bulk: Callable[[], None] | None = None) -> bytes:
    """The answer frame to one request frame; `bulk` is called before a request of several texts
    is embedded (the service's threads: `yield_to_queries`)."""
    try:
        texts = json.loads(request)
        if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
            raise ValueError("a request is a JSON array of texts")
    except ValueError as exc:
        return ERROR + str(exc).encode()
    if len(texts) > 1 and bulk is not None:
        bulk()
    try:
        rows = model.embed(texts) if texts else np.zeros((0, local_model.DIMENSIONS), dtype=np.float32)
    except Exception as exc:
        logger.exception("embedding %d text(s) failed", len(texts))
        return ERROR + f"embedding failed ({type(exc).__name__})".encode()
    return VECTORS + rows.astype("<f4", copy=False).tobytes()


def yield_to_queries() -> None:
    """Run this thread's work after everyone else's: a request of several texts is bulk work (the
    embedded worker embedding what was published or imported), and a query's one text, which a
    call waits for, must not wait behind it on a busy machine. The thread serves one connection,
    whose texts all come from that same background work; its nice value only ever rises (lowering
    it again would need a privilege), which Linux sets per thread. Elsewhere nothing changes.

    The model runs on the calling thread (one intra-op thread, as the calibration chooses on
    small machines); where it runs a pool of its own, the pool keeps its priority."""
    if sys.platform != "linux":
        return
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BULK_NICE)
    except OSError:
        logger.debug("could not lower a bulk embedding thread's priority", exc_info=True)


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        while True:
            try:
                request = read_frame(self.request)
            except (OSError, ValueError):
                return
            if request is None:
                return
            try:
                write_frame(self.request, answer(self.server.model, request, bulk=yield_to_queries))
            except OSError:
                return


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    # Connections waiting to be taken: a serving process connects without waiting
    # (SharedEmbedder.ask), and a connection refused for a full queue costs it a thread hop.
    request_queue_size = 64

    def __init__(self, path: str, model: minilm.MiniLM) -> None:
        self.model = model
        super().__init__(path, _Handler)


def bound(path: Path, model: minilm.MiniLM) -> _Server:
    """The server listening at `path`: bound under a name of its own, then renamed into place."""
    staging = path.with_name(f"{path.name}.{os.getpid()}")
    staging.unlink(missing_ok=True)
    server = _Server(str(staging), model)
    os.chmod(staging, 0o600)
    os.replace(staging, path)
    return server


def _end_with(parent: int) -> None:
    """End this process when `parent` ends, even by kill -9."""
    prctl = getattr(ctypes.CDLL(None, use_errno=True), "prctl", None)  # Linux's alone
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)

    def watch() -> None:  # the parent may have gone before prctl, or there is no prctl
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--socket", required=True, type=Path)
    parser.add_argument("--model-zip", required=True, type=Path)
    parser.add_argument("--folder", required=True, type=Path)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--parent", type=int, default=0, help="end when this process ends")
    args = parser.parse_args(argv)
    # Before any thread starts: each connection is served by a thread of its own.
    limit_malloc_arenas()
    # As the serving processes log (LOGGING in the settings, which this process does not load).
    logging.basicConfig(
        level=os.environ.get("LOG_LEVEL", "INFO"),
        handlers=[console_handler(os.environ.get("LOG_FORMAT", "json"))],
    )
    if args.parent:
        _end_with(args.parent)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    # Ctrl-C at `make run` reaches the whole process group: the workers stop, and this process
    # with them (`--parent`), not before them (its supervisor would start it again).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    model = minilm.MiniLM(args.model_zip, folder=args.folder, threads=args.threads)
    model.embed([minilm.MEASURED_TASK])  # loaded and warm before anyone can connect
    server = bound(args.socket, model)
    # Concurrent texts each take their activations in a thread of their own, and glibc keeps what
    # they freed: 20 MB more after a burst of 8 clients, for the process's life, without a trim.
    trim_periodically()
    logger.info("shared embedder %s serving at %s (pid %d)", model.name, args.socket, os.getpid())
    try:
        server.serve_forever()
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
