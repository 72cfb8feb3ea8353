"""The OpenAI-compatible embedder (memory.embeddings.remote), against a loopback endpoint."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import numpy as np
import pytest

from memory.embeddings import remote
from memory.embeddings.remote import RemoteEmbedder


class _Embeddings(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert self.path == "/v1/embeddings"
        assert self.headers["Authorization"] == "Bearer sk-test"
        # Out of order, as the API allows: the embedder sorts by index.
        data = [{"index": i, "embedding": [3.0, 4.0 * (i + 1)]} for i in range(len(body["input"]))][::-1]
        answer = json.dumps({"model": body["model"], "data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1/"
    finally:
        server.shutdown()
        server.server_close()


def test_vectors_come_back_in_order_and_unit_length(endpoint: str) -> None:
    model = RemoteEmbedder(url=endpoint, model="text-embedding-3-small", api_key="sk-test")
    vectors = model.embed(["first", "second"])
    assert model.name == "openai:text-embedding-3-small"
    assert np.allclose(vectors, [[0.6, 0.8], [3 / np.hypot(3, 8), 8 / np.hypot(3, 8)]])


def test_importing_it_loads_no_http_client() -> None:
    # httpx would bring its command line's rich and pygments into every serving process.
    code = "import sys, memory.embeddings.remote; print('httpx' in sys.modules)"
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


class _Hanging(BaseHTTPRequestHandler):
    """An endpoint that accepts the request and never answers (until the test ends)."""

    released = threading.Event()

    def do_POST(self) -> None:
        self.released.wait(60)

    def log_message(self, *args: object) -> None:
        pass


def test_a_query_waits_for_a_hanging_endpoint_only_its_own_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    # An agent's call waits on a query's text; a consolidator's batch may take longer.
    monkeypatch.setattr(remote, "QUERY_TIMEOUT_SECONDS", 0.5)
    monkeypatch.setattr(remote, "TIMEOUT_SECONDS", 60.0)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hanging)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        model = RemoteEmbedder(url=f"http://127.0.0.1:{server.server_port}/v1/", model="m")
        with pytest.raises(httpx.TimeoutException):
            model.embed(["How often does invoice-worker retry?"])
    finally:
        _Hanging.released.set()
        server.shutdown()
        server.server_close()
