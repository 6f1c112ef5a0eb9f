"""The sample CNN of the demo: conv + batch-norm + ReLU stem, max-pool, a depthwise-separable
residual block, a two-branch block joined by Concat, global average pooling, a classifier and
Softmax; seeded random weights. Explicit BatchNormalization nodes, as many exporters write them.

  sample_cnn.py OUT_DIR [--size 224]   writes sample_cnn.onnx and sample_cnn.input.npy
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def rng(seed):
    return np.random.default_rng(seed)


def randn(r, *shape, scale=1.0):
    return (r.standard_normal(shape) * scale).astype(np.float32)


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def vi(name, shape):
    return helper.make_tensor_value_info(name, F, shape)


def model(nodes, inputs, outputs, inits, name):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="kann-samples")
    m.ir_version = 7
    return m


def build(size=224, seed=70):
    """A compact CNN with every pattern: conv+BN+relu, depthwise, residual, pools, concat, fc."""
    r = rng(seed)
    inits, nodes = [], []
    def conv(x, y, cin, cout, k, stride=1, group=1, bn=True, act="Relu"):
        w = randn(r, cout, cin // group, k, k, scale=(2.0 / (cin // group * k * k)) ** 0.5)
        inits.append(const(f"{y}.w", w))
        nodes.append(helper.make_node("Conv", [x, f"{y}.w"], [f"{y}.c"], name=f"{y}.conv",
                                      pads=[k // 2] * 4, strides=[stride] * 2, group=group))
        cur = f"{y}.c"
        if bn:
            for n, v in zip(["g", "b", "m", "v"], [randn(r, cout) * 0.2 + 1, randn(r, cout) * 0.1,
                                                   randn(r, cout) * 0.1, np.abs(randn(r, cout)) + 0.5]):
                inits.append(const(f"{y}.{n}", v))
            nodes.append(helper.make_node("BatchNormalization",
                                          [cur, f"{y}.g", f"{y}.b", f"{y}.m", f"{y}.v"],
                                          [f"{y}.bn"], name=f"{y}.bn"))
            cur = f"{y}.bn"
        if act:
            nodes.append(helper.make_node(act, [cur], [y], name=f"{y}.act"))
        else:
            nodes.append(helper.make_node("Identity", [cur], [y], name=f"{y}.id"))
    conv("input", "s1", 3, 16, 3, stride=2)
    nodes.append(helper.make_node("MaxPool", ["s1"], ["p1"], name="pool1", kernel_shape=[3, 3],
                                  strides=[2, 2], pads=[1, 1, 1, 1]))
    conv("p1", "d1", 16, 16, 3, group=16)
    conv("d1", "e1", 16, 16, 1, act=None)
    nodes.append(helper.make_node("Add", ["e1", "p1"], ["r1"], name="res1"))
    nodes.append(helper.make_node("Relu", ["r1"], ["r1a"], name="res1.relu"))
    conv("r1a", "b1", 16, 24, 1)
    conv("r1a", "b2", 16, 24, 3)
    nodes.append(helper.make_node("Concat", ["b1", "b2"], ["cat"], name="cat", axis=1))
    conv("cat", "s2", 48, 64, 3, stride=2)
    nodes.append(helper.make_node("GlobalAveragePool", ["s2"], ["gap"], name="gap"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"))
    inits += [const("fc.w", randn(r, 10, 64, scale=0.2)), const("fc.b", randn(r, 10))]
    nodes.append(helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], name="fc", transB=1))
    nodes.append(helper.make_node("Softmax", ["logits"], ["prob"], name="softmax", axis=1))
    m = model(nodes, [vi("input", ["batch", 3, size, size])], [vi("prob", ["batch", 10])], inits,
              name="sample_cnn")
    return m, {"input": randn(r, 1, 3, size, size)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--size", type=int, default=224)
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    m, feeds = build(args.size)
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(args.out_dir, "sample_cnn.onnx"))
    np.save(os.path.join(args.out_dir, "sample_cnn.input.npy"), feeds["input"])


if __name__ == "__main__":
    main()
