"""What a serving process loads: libraries it never uses with its configuration stay unimported.

Each module loaded is resident in every web worker for its whole life (issue #10's memory budget),
so the ones only some configurations need are imported by those configurations alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

_LOADED = """
import sys
import unforgetter.asgi
print(" ".join(sorted({name.split(".")[0] for name in sys.modules})))
if "celery" in sys.modules:
    from celery import current_app
    print("app:" + current_app.main)
"""


_EMBEDDING = """
import sys
import unforgetter.asgi
from memory.embeddings import embedder
embedder().embed(["Deploy the invoice worker after review"])
print(" ".join(sorted({name.split(".")[0] for name in sys.modules})))
"""


_SHARING = """
import sys
import unforgetter.asgi
from memory import embeddings
embeddings.share()
print(embeddings.embedder().embed(["Deploy the invoice worker after review"]).shape)
print(" ".join(sorted({name.split(".")[0] for name in sys.modules})))
embeddings.unshare()
"""


def _printed(script: str, **env: str) -> str:
    """What `script` prints, run by a new interpreter in the repository with `env` added."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")} | env
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    return done.stdout


def _loaded(**env: str) -> set[str]:
    return set(_printed(_LOADED, **env).split())


def test_the_local_cache_does_not_load_redis() -> None:
    loaded = _loaded(CACHE_URL="locmemcache://unforgetter")
    assert "django" in loaded
    assert "redis" not in loaded


def test_without_a_broker_celery_is_not_loaded() -> None:
    loaded = _loaded(CELERY_BROKER_URL="")
    assert "django" in loaded
    assert not {"celery", "kombu"} & loaded


def test_with_a_broker_the_configured_celery_app_is_the_current_one() -> None:
    loaded = _loaded(CELERY_BROKER_URL="redis://127.0.0.1:9/0")
    assert "app:unforgetter" in loaded


def test_without_the_local_embedder_onnx_runtime_is_not_loaded() -> None:
    loaded = _loaded(EMBEDDER="off")
    assert "django" in loaded
    assert not {"onnxruntime", "tokenizers"} & loaded


_RESOLVED = """
import sys
import unforgetter.asgi
from django.urls import resolve
resolve("/healthz")
resolve("/console/")
print("before:", "api.urls" in sys.modules, "drf_spectacular.plumbing" in sys.modules)
match = resolve("/api/v1/projects/")
print("after:", match.view_name, "drf_spectacular.plumbing" in sys.modules)
"""


def test_the_rest_api_and_its_openapi_annotations_load_with_its_first_request() -> None:
    # drf-spectacular's annotations import django.test: 17 MB no worker serving /mcp needs.
    assert _printed(_RESOLVED).split("\n")[:2] == ["before: False False", "after: api:projects True"]


def test_the_local_embedder_tokenizes_without_the_tokenizers_library() -> None:
    # Its WordPiece is memory.embeddings.wordpiece: the library was 9 MB more of every worker.
    loaded = set(_printed(_EMBEDDING, EMBEDDER="local").split())
    assert "onnxruntime" in loaded
    assert "tokenizers" not in loaded


def test_a_serving_process_sharing_the_embedder_never_loads_onnx_runtime() -> None:
    # The machine's shared embedder runs the model (memory.embeddings.shared): 50 MB less per worker.
    with tempfile.TemporaryDirectory(prefix="emb", dir="/tmp") as folder:
        shape, modules = _printed(_SHARING, EMBEDDER="local", EMBEDDER_SOCKET=f"{folder}/e.sock").splitlines()
    assert shape == "(1, 384)"
    assert "numpy" in modules.split()
    assert "onnxruntime" not in modules.split()
