"""all-MiniLM-L6-v2 as an ONNX graph, built from the safetensors weights with `onnx.helper`.

The graph is BERT's encoder as sentence-transformers runs it: word and position embeddings (the
token type is always 0), LayerNorm, 6 layers of 12-head self-attention and an erf-GELU
feed-forward block, then the mean of the tokens under the attention mask, L2-normalised. It uses
standard operators only (opset 17), in the shapes a PyTorch export of BERT has, so that ONNX
Runtime's graph optimiser recognises and fuses them (attention, LayerNorm, GELU) and the
quantiser finds every linear layer as a MatMul with a constant weight.

Inputs: `input_ids` and `attention_mask`, int64 (batch, tokens). Output: `embedding`, float32
(batch, 384), unit rows. In float32 the graph's vectors are the numpy reference's within 1e-6
cosine; `quantise` writes the int8 model the embedder runs.

Standard operators were chosen over writing ONNX Runtime's fused contrib operators (Attention,
SkipLayerNormalization) by hand: the runtime's own optimiser fuses what pays (LayerNorm with its
residual, GELU with its bias, the attention scale into its MatMul) and
`onnxruntime.transformers.optimizer` added nothing measurable (and needs sympy).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import QuantType, quantize_dynamic

LAYERS = 6
HEADS = 12
EPSILON = 1e-12
OPSET = 17


class _Graph:
    """Nodes and initializers under construction; each op returns its output's name."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def constant(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def op(self, kind: str, *inputs: str, name: str = "", **attributes: Any) -> str:
        self._count += 1
        output = name or f"{kind.lower()}_{self._count}"
        self.nodes.append(helper.make_node(kind, list(inputs), [output], name=output, **attributes))
        return output


def build(tensors: dict[str, np.ndarray]) -> onnx.ModelProto:
    """The encoder's graph over `tensors`, the model's weights by their safetensors names."""
    g = _Graph()

    def weight(name: str, *, transposed: bool = False) -> str:
        array = np.asarray(tensors[name], dtype=np.float32)
        return g.constant(name, np.ascontiguousarray(array.T if transposed else array))

    def scalar(name: str, value: float) -> str:
        return g.constant(name, np.array(value, dtype=np.float32))

    def shape(name: str, *dims: int) -> str:
        return g.constant(name, np.array(dims, dtype=np.int64))

    def linear(x: str, prefix: str) -> str:
        # torch keeps a linear layer's weight as (out, in); the graph multiplies by (in, out).
        # The product is named after the layer, so the quantiser can be told which to leave alone.
        product = g.op("MatMul", x, weight(f"{prefix}.weight", transposed=True), name=prefix)
        return g.op("Add", product, weight(f"{prefix}.bias"))

    def layer_norm(x: str, prefix: str) -> str:
        return g.op(
            "LayerNormalization",
            x,
            weight(f"{prefix}.weight"),
            weight(f"{prefix}.bias"),
            axis=-1,
            epsilon=EPSILON,
        )

    # The hidden size, read off the weights (384 for MiniLM-L6; memory.embeddings.minilm's DIMENSIONS).
    dimensions = int(tensors["embeddings.word_embeddings.weight"].shape[1])
    head = dimensions // HEADS
    split = shape("heads_shape", 0, 0, HEADS, head)
    joined = shape("hidden_shape", 0, 0, dimensions)
    one, half = scalar("one", 1.0), scalar("half", 0.5)

    # Embeddings: the token-type row (always type 0) is folded into the position table.
    positions = np.asarray(tensors["embeddings.position_embeddings.weight"], dtype=np.float32)
    token_type = np.asarray(tensors["embeddings.token_type_embeddings.weight"], dtype=np.float32)[0]
    g.constant("positions", positions + token_type)
    words = g.op("Gather", weight("embeddings.word_embeddings.weight"), "input_ids")
    length = g.op("Shape", "input_ids", start=1, end=2)
    placed = g.op("Slice", "positions", shape("zero", 0), length, shape("axis0", 0))
    x = layer_norm(g.op("Add", words, placed), "embeddings.LayerNorm")

    # Padding is kept out of attention by a large negative bias on its scores.
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    excluded = g.op("Sub", one, g.op("Unsqueeze", mask, shape("axes12", 1, 2)))
    blocked = g.op("Mul", excluded, scalar("blocked", -10000.0))

    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."

        def heads(x: str, name: str, perm: list[int], p: str = p) -> str:
            projected = g.op("Reshape", linear(x, f"{p}attention.self.{name}"), split)
            return g.op("Transpose", projected, perm=perm)

        # The key is transposed to (batch, heads, head width, tokens) at once, as torch exports it.
        query, key = heads(x, "query", [0, 2, 1, 3]), heads(x, "key", [0, 2, 3, 1])
        value = heads(x, "value", [0, 2, 1, 3])
        scores = g.op("Div", g.op("MatMul", query, key), scalar(f"{p}scale", math.sqrt(head)))
        weights = g.op("Softmax", g.op("Add", scores, blocked), axis=-1)
        context = g.op("Transpose", g.op("MatMul", weights, value), perm=[0, 2, 1, 3])
        attended = linear(g.op("Reshape", context, joined), f"{p}attention.output.dense")
        x = layer_norm(g.op("Add", attended, x), f"{p}attention.output.LayerNorm")
        hidden = linear(x, f"{p}intermediate.dense")
        erf = g.op("Erf", g.op("Div", hidden, scalar(f"{p}sqrt2", math.sqrt(2.0))))
        activated = g.op("Mul", g.op("Mul", hidden, half), g.op("Add", erf, one))
        x = layer_norm(g.op("Add", linear(activated, f"{p}output.dense"), x), f"{p}output.LayerNorm")

    # Mean of the unmasked tokens, then unit length (sentence-transformers' pooling and Normalize).
    counted = g.op("Unsqueeze", mask, shape("axis2", 2))
    summed = g.op("ReduceSum", g.op("Mul", x, counted), shape("axis1", 1), keepdims=0)
    count = g.op("Max", g.op("ReduceSum", counted, "axis1", keepdims=0), scalar("tiny_count", 1e-9))
    pooled = g.op("Div", summed, count)
    norm = g.op("Max", g.op("ReduceL2", pooled, axes=[-1], keepdims=1), scalar("tiny_norm", 1e-12))
    g.nodes.append(helper.make_node("Div", [pooled, norm], ["embedding"], name="normalised"))

    tokens = ["batch", "tokens"]
    graph = helper.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info(n, TensorProto.INT64, tokens)
            for n in ("input_ids", "attention_mask")
        ],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", dimensions])],
        g.initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="unforgetter"
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def quantise(model: onnx.ModelProto, path: Path, weights: str) -> None:
    """Write `model` to `path` with its MatMul weights and vocabulary table as int8.

    Dynamic quantisation: weights int8 with a scale per output channel (a scale per tensor moves
    vectors 4 times as far: mean cosine 0.962 to float32's instead of 0.993), activations
    quantised to uint8 as each call runs, so nothing is calibrated ahead. The tensors go to the
    file `weights` beside `path` (external data), which ONNX Runtime maps instead of reading.
    """
    quiet = _QuantiserNotes()
    logging.root.addFilter(quiet)
    embedded = path.with_name(f"{path.name}.embedded")
    try:
        quantize_dynamic(model, embedded, per_channel=True, weight_type=QuantType.QInt8)
    finally:
        logging.root.removeFilter(quiet)
    onnx.save_model(onnx.load(embedded), path, save_as_external_data=True, location=weights)
    embedded.unlink()


class _QuantiserNotes(logging.Filter):
    """Drops what the quantiser logs on the root logger: a line per tensor, and advice."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "onnxruntime" not in Path(record.pathname).parts
