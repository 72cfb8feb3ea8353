"""Which local model there is, known without loading it (memory.embeddings.minilm loads it).

A serving process that leaves embedding to the shared embedder (memory.embeddings.shared) names
the vectors it asks for by this name, and never imports ONNX Runtime.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

NAME = "all-MiniLM-L6-v2-int8"
DIMENSIONS = 384
PACKAGE = "all_minilm_l6_v2"


def model_zip() -> Path | None:
    """Where the package keeps the model, or None when it is not installed."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
    return path if path.is_file() else None
