"""A BERT-style transformer encoder written node by node the way PyTorch's TorchScript exporter
writes one (opset 17): Gather embeddings (token + position + token type), LayerNormalization,
MatMul with broadcast batch dims and a separate bias Add, attention through Shape/Gather/Concat
reshape arithmetic, Reshape/Transpose/MatMul/Div by sqrt(d)/Softmax, an additive mask built from
the int64 attention mask with Cast/Equal/Unsqueeze/Expand/Where, and GELU as the Erf formula.
With ln="decomposed" each LayerNormalization is ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add,
as exporters before opset 17 write it. Weights are seeded random.

  cases_transformer.py OUT_DIR [--layers 4 --hidden 256 --heads 4 --seq 64]
      writes OUT_DIR/transformer.onnx and its inputs (input_ids.npy, attention_mask.npy)
"""
import argparse
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64


class _Graph:
    def __init__(self, seed):
        self.r = np.random.default_rng(seed)
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, base):
        self.n += 1
        return f"/{base}_{self.n}"

    def const(self, base, arr):
        nm = self.name(base) + ".value"
        self.inits.append(numpy_helper.from_array(np.asarray(arr), nm))
        return nm

    def weight(self, base, *shape, scale=0.05):
        return self.const(base, (self.r.standard_normal(shape) * scale).astype(np.float32))

    def op(self, op_type, inputs, n_out=1, **attrs):
        nm = self.name(op_type)
        outs = [f"{nm}_output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=nm, **attrs))
        return outs[0] if n_out == 1 else outs

    def scalar(self, v, dtype=np.float32):
        return self.const("Constant", np.array(v, dtype=dtype))

    def ints(self, *v):
        return self.const("Constant", np.array(v, dtype=np.int64))


def _layer_norm(g, x, hidden, ln, eps=1e-12):
    gamma = g.const("LayerNorm.weight",
                    (1.0 + 0.1 * g.r.standard_normal(hidden)).astype(np.float32))
    beta = g.weight("LayerNorm.bias", hidden, scale=0.1)
    if ln == "op":
        return g.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=eps)
    mean = g.op("ReduceMean", [x], axes=[-1], keepdims=1)
    centred = g.op("Sub", [x, mean])
    var = g.op("ReduceMean", [g.op("Pow", [centred, g.scalar(2.0)])], axes=[-1], keepdims=1)
    std = g.op("Sqrt", [g.op("Add", [var, g.scalar(eps)])])
    return g.op("Add", [g.op("Mul", [g.op("Div", [centred, std]), gamma]), beta])


def _linear(g, x, n_in, n_out, base):
    # TorchScript: MatMul with the transposed weight stored as an initializer, then Add(bias).
    w = g.weight(f"{base}.weight", n_in, n_out, scale=1.0 / np.sqrt(n_in))
    b = g.weight(f"{base}.bias", n_out, scale=0.02)
    return g.op("Add", [b, g.op("MatMul", [x, w])])


def _split_heads(g, x, heads, head_dim):
    # new_shape = x.size()[:-1] + (heads, head_dim), through Shape/Gather/Unsqueeze/Concat.
    shape = g.op("Shape", [x])
    b = g.op("Unsqueeze", [g.op("Gather", [shape, g.scalar(0, np.int64)], axis=0), g.ints(0)])
    s = g.op("Unsqueeze", [g.op("Gather", [shape, g.scalar(1, np.int64)], axis=0), g.ints(0)])
    new_shape = g.op("Concat", [b, s, g.ints(heads), g.ints(head_dim)], axis=0)
    return g.op("Reshape", [x, new_shape])


def _gelu(g, x):
    erf = g.op("Erf", [g.op("Div", [x, g.scalar(1.4142135381698608)])])
    return g.op("Mul", [g.op("Mul", [x, g.op("Add", [erf, g.scalar(1.0)])]), g.scalar(0.5)])


def _encoder_layer(g, h, mask, hidden, heads, ln):
    d = hidden // heads
    q = g.op("Transpose", [_split_heads(g, _linear(g, h, hidden, hidden, "query"), heads, d)],
             perm=[0, 2, 1, 3])
    k = g.op("Transpose", [_split_heads(g, _linear(g, h, hidden, hidden, "key"), heads, d)],
             perm=[0, 2, 3, 1])
    v = g.op("Transpose", [_split_heads(g, _linear(g, h, hidden, hidden, "value"), heads, d)],
             perm=[0, 2, 1, 3])
    scores = g.op("Div", [g.op("MatMul", [q, k]), g.scalar(float(np.sqrt(d)))])
    probs = g.op("Softmax", [g.op("Add", [scores, mask])], axis=-1)
    ctx = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    ctx = g.op("Reshape", [ctx, g.ints(1, -1, hidden)])
    attn = _linear(g, ctx, hidden, hidden, "attention.output.dense")
    h = _layer_norm(g, g.op("Add", [attn, h]), hidden, ln)
    inter = _gelu(g, _linear(g, h, hidden, 4 * hidden, "intermediate.dense"))
    out = _linear(g, inter, 4 * hidden, hidden, "output.dense")
    return _layer_norm(g, g.op("Add", [out, h]), hidden, ln)


def build(layers=4, hidden=256, heads=4, seq=64, vocab=1000, ln="op", opset=17, seed=0):
    """Returns (model, feeds): inputs input_ids and attention_mask, int64 [1, seq]; output
    last_hidden_state [1, seq, hidden]."""
    g = _Graph(seed)
    ids = "input_ids"
    word = g.op("Gather", [g.weight("word_embeddings.weight", vocab, hidden, scale=0.5), ids])
    pos_ids = g.const("position_ids", np.arange(seq, dtype=np.int64)[None, :])
    pos = g.op("Gather", [g.weight("position_embeddings.weight", seq, hidden, scale=0.5), pos_ids])
    type_ids = g.const("token_type_ids", np.zeros((1, seq), np.int64))
    typ = g.op("Gather", [g.weight("token_type_embeddings.weight", 2, hidden, scale=0.5), type_ids])
    h = _layer_norm(g, g.op("Add", [g.op("Add", [word, typ]), pos]), hidden, ln)
    # Additive mask: 0 where attended, the most negative float where masked.
    m = g.op("Cast", [g.op("Unsqueeze", [g.op("Unsqueeze", ["attention_mask", g.ints(1)]),
                                          g.ints(2)])], to=F)
    m = g.op("Expand", [m, g.ints(1, 1, seq, seq)])
    masked = g.op("Equal", [m, g.scalar(0.0)])
    mask = g.op("Where", [masked, g.scalar(float(np.finfo(np.float32).min)), g.scalar(0.0)])
    for _ in range(layers):
        h = _encoder_layer(g, h, mask, hidden, heads, ln)
    g.nodes.append(helper.make_node("Identity", [h], ["last_hidden_state"], name="/output"))
    graph = helper.make_graph(
        g.nodes, "bert_encoder",
        [helper.make_tensor_value_info("input_ids", I64, [1, seq]),
         helper.make_tensor_value_info("attention_mask", I64, [1, seq])],
        [helper.make_tensor_value_info("last_hidden_state", F, [1, seq, hidden])], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="pytorch", producer_version="2.1.0")
    model.ir_version = 8
    r = np.random.default_rng(seed + 1)
    input_ids = r.integers(0, vocab, size=(1, seq), dtype=np.int64)
    attention_mask = np.ones((1, seq), np.int64)
    attention_mask[0, seq - seq // 4:] = 0  # padded tail
    return model, {"input_ids": input_ids, "attention_mask": attention_mask}


def all_cases():
    """Small encoders for the default end-to-end tests (the full-size one is benchmarked)."""
    m, feeds = build(layers=1, hidden=64, heads=4, seq=16, vocab=50, ln="op", opset=17, seed=1)
    yield "transformer_tiny_ln17", m, feeds, []
    m, feeds = build(layers=1, hidden=64, heads=2, seq=16, vocab=50, ln="decomposed", opset=13,
                     seed=2)
    yield "transformer_tiny_ln_decomposed", m, feeds, []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--ln", choices=["op", "decomposed"], default="op")
    args = ap.parse_args()
    import onnx
    m, feeds = build(args.layers, args.hidden, args.heads, args.seq, ln=args.ln,
                     opset=17 if args.ln == "op" else 13)
    os.makedirs(args.out_dir, exist_ok=True)
    onnx.save(m, os.path.join(args.out_dir, "transformer.onnx"))
    for k, v in feeds.items():
        np.save(os.path.join(args.out_dir, k + ".npy"), v)


if __name__ == "__main__":
    main()
