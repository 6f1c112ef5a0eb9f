"""Elementwise ops and the patterns built from them, as small ONNX models (same conventions as
cases.py: each case is (name, model, inputs, extra kann-c args), references from ONNX Runtime):
MobileNetV3 and EfficientNet blocks (HardSwish, HardSigmoid, SiLU as x * Sigmoid(x),
squeeze-excitation's broadcast Mul), every activation, unary math, broadcasting binary and
variadic ops, integer arithmetic, comparisons and logic, Where, Cast and Clip with bounds
computed at run time."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cases import const, model, randn, rng, vi  # noqa: E402

F = TensorProto.FLOAT
I64 = TensorProto.INT64
I32 = TensorProto.INT32
I8 = TensorProto.INT8
B = TensorProto.BOOL


def conv(name, x, y, w_shape, r, inits, group=1, pads=0):
    inits.append(const(name + ".w", randn(r, *w_shape, scale=0.4)))
    inits.append(const(name + ".b", randn(r, w_shape[0], scale=0.1)))
    return helper.make_node("Conv", [x, name + ".w", name + ".b"], [y], name=name, group=group,
                            pads=[pads] * 4)


def se_block(prefix, x, y, c, squeeze, gate, r, inits):
    """Squeeze-excitation: GlobalAveragePool -> 1x1 conv -> act -> 1x1 conv -> gate -> Mul."""
    nodes = [helper.make_node("GlobalAveragePool", [x], [prefix + ".pool"]),
             conv(prefix + ".fc1", prefix + ".pool", prefix + ".h", [squeeze, c, 1, 1], r, inits),
             helper.make_node("Relu", [prefix + ".h"], [prefix + ".hr"]),
             conv(prefix + ".fc2", prefix + ".hr", prefix + ".g", [c, squeeze, 1, 1], r, inits)]
    if gate == "HardSigmoid":
        nodes.append(helper.make_node("HardSigmoid", [prefix + ".g"], [prefix + ".s"],
                                      alpha=1.0 / 6.0, beta=0.5))
    else:
        nodes.append(helper.make_node(gate, [prefix + ".g"], [prefix + ".s"]))
    nodes.append(helper.make_node("Mul", [x, prefix + ".s"], [y]))
    return nodes


def silu(x, y):
    return [helper.make_node("Sigmoid", [x], [y + ".sig"]),
            helper.make_node("Mul", [x, y + ".sig"], [y])]


def mobilenetv3_block():
    """Inverted residual of MobileNetV3: expand + HardSwish, depthwise + HardSwish (also as
    x * HardSigmoid(x)), squeeze-excitation gated by HardSigmoid, project, residual Add."""
    r = rng(401)
    inits = []
    nodes = [conv("expand", "x", "e", [24, 8, 1, 1], r, inits),
             helper.make_node("HardSwish", ["e"], ["e_act"]),
             conv("dw", "e_act", "d", [24, 1, 3, 3], r, inits, group=24, pads=1),
             helper.make_node("HardSigmoid", ["d"], ["d_gate"], alpha=1.0 / 6.0, beta=0.5),
             helper.make_node("Mul", ["d", "d_gate"], ["d_act"])]
    nodes += se_block("se", "d_act", "s", 24, 8, "HardSigmoid", r, inits)
    nodes += [conv("project", "s", "p", [8, 24, 1, 1], r, inits),
              helper.make_node("Add", ["p", "x"], ["y"])]
    m = model(nodes, [vi("x", [1, 8, 14, 14])], [vi("y", None)], inits, opset=14)
    return "mbv3_block", m, {"x": randn(r, 1, 8, 14, 14)}, []


def efficientnet_block():
    """MBConv of EfficientNet as exported: SiLU as x * Sigmoid(x) after each conv, and
    squeeze-excitation with SiLU inside and a Sigmoid gate; the three SiLUs and the gate fuse
    into their convs, leaving the broadcast Mul the only elementwise kernel."""
    r = rng(402)
    inits = []
    nodes = [conv("expand", "x", "e", [32, 8, 1, 1], r, inits)] + silu("e", "e_act")
    nodes += [conv("dw", "e_act", "d", [32, 1, 3, 3], r, inits, group=32, pads=1)]
    nodes += silu("d", "d_act")
    pool = [helper.make_node("GlobalAveragePool", ["d_act"], ["pool"]),
            conv("fc1", "pool", "h", [8, 32, 1, 1], r, inits)] + silu("h", "h_act")
    pool += [conv("fc2", "h_act", "g", [32, 8, 1, 1], r, inits),
             helper.make_node("Sigmoid", ["g"], ["gate"]),
             helper.make_node("Mul", ["d_act", "gate"], ["s"])]
    nodes += pool + [conv("project", "s", "y", [8, 32, 1, 1], r, inits)]
    m = model(nodes, [vi("x", [1, 8, 12, 12])], [vi("y", None)], inits, opset=17)
    return "effnet_block", m, {"x": randn(r, 1, 8, 12, 12)}, ["--expect-summary",
                                                               "fused:    4 activations"]


def single(name, op, x, opset=13, out_dtype=None, inputs_extra=(), **attrs):
    ins = ["x"] + [n for n, _, _ in inputs_extra]
    node = helper.make_node(op, ins, ["y"], name=name, **attrs)
    xv = [vi("x", list(x.shape), helper.np_dtype_to_tensor_dtype(x.dtype))]
    for n, arr, _ in inputs_extra:
        xv.append(vi(n, list(arr.shape), helper.np_dtype_to_tensor_dtype(arr.dtype)))
    out = out_dtype or helper.np_dtype_to_tensor_dtype(x.dtype)
    m = model([node], xv, [vi("y", None, out)], opset=opset)
    feeds = {"x": x}
    for n, arr, _ in inputs_extra:
        feeds[n] = arr
    return name, m, feeds, []


def activation_cases():
    r = rng(403)
    x = randn(r, 2, 3, 5, 7, scale=3.0)
    yield single("elu", "Elu", x, alpha=0.7)
    yield single("selu", "Selu", x)
    yield single("celu", "Celu", x, alpha=1.5)
    yield single("softplus", "Softplus", x)
    yield single("softsign", "Softsign", x)
    yield single("thresholded_relu", "ThresholdedRelu", x, opset=10, alpha=0.5)
    yield single("leaky_relu", "LeakyRelu", x, alpha=0.2)
    yield single("tanh", "Tanh", x)
    yield single("hard_sigmoid", "HardSigmoid", x, alpha=0.3, beta=0.4)
    yield single("mish", "Mish", x, opset=18)
    yield single("gelu", "Gelu", x, opset=20)
    yield single("gelu_tanh", "Gelu", x, opset=20, approximate="tanh")
    yield "silu_standalone", model(silu("x", "y"), [vi("x", [2, 3, 5, 7])], [vi("y", None)]), \
        {"x": x}, []


def unary_cases():
    r = rng(404)
    x = randn(r, 3, 4, 5, scale=2.0)
    pos = np.abs(x) + 0.1
    unit = np.tanh(x) * 0.9
    for op, data in [("Abs", x), ("Neg", x), ("Exp", x), ("Log", pos), ("Sqrt", pos),
                     ("Reciprocal", pos), ("Floor", x), ("Ceil", x), ("Sign", x), ("Sin", x),
                     ("Cos", x), ("Tan", unit), ("Asin", unit), ("Acos", unit), ("Atan", x),
                     ("Sinh", x), ("Cosh", x), ("Asinh", x), ("Acosh", pos + 1), ("Atanh", unit),
                     ("Erf", x)]:
        yield single("unary_" + op.lower(), op, data)
    yield single("unary_round", "Round", np.array([[0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6]],
                                                    np.float32), opset=11)
    ints = r.integers(-100, 100, (4, 6)).astype(np.int64)
    yield single("unary_neg_int64", "Neg", ints)
    yield single("unary_abs_int32", "Abs", ints.astype(np.int32))


def binary_cases():
    r = rng(405)
    a = randn(r, 2, 3, 4, 5)
    b = randn(r, 3, 1, 5)
    c = randn(r, 1, 5)

    def graph(name, nodes, ins, opset=13):
        xv = [vi(n, list(v.shape), helper.np_dtype_to_tensor_dtype(v.dtype)) for n, v in ins]
        out = xv[0].type.tensor_type.elem_type
        return name, model(nodes, xv, [vi("y", None, out)], opset=opset), dict(ins), []

    yield graph("pow_bcast", [helper.make_node("Pow", ["a", "b"], ["y"])],
                [("a", np.abs(a) + 0.5), ("b", b)])
    yield graph("pow_int_exponent", [helper.make_node("Pow", ["a", "e"], ["y"])],
                [("a", a), ("e", r.integers(0, 4, (5,)).astype(np.int64))], opset=15)
    for op in ["Max", "Min", "Sum", "Mean"]:
        yield graph(op.lower() + "_variadic", [helper.make_node(op, ["a", "b", "c"], ["y"])],
                    [("a", a), ("b", b), ("c", c)])
    yield graph("prelu_channel_slope", [helper.make_node("PRelu", ["a", "s"], ["y"])],
                [("a", a), ("s", randn(r, 3, 1, 1))], opset=16)
    yield graph("div_bcast_relu", [helper.make_node("Div", ["a", "b"], ["t"]),
                                   helper.make_node("Relu", ["t"], ["y"])],
                [("a", a), ("b", np.abs(b) + 0.5)])
    ia = r.integers(-50, 50, (4, 6)).astype(np.int64)
    ib = r.integers(1, 9, (6,)).astype(np.int64) * np.where(r.random(6) < 0.5, -1, 1)
    for fmod in (0, 1):
        yield graph(f"mod_int64_fmod{fmod}", [helper.make_node("Mod", ["a", "b"], ["y"],
                                                               fmod=fmod)],
                    [("a", ia), ("b", ib)])
    yield graph("mod_float_fmod", [helper.make_node("Mod", ["a", "b"], ["y"], fmod=1)],
                [("a", a), ("b", np.abs(b) + 0.5)])
    for op in ["Add", "Sub", "Mul", "Div", "Max", "Min"]:
        yield graph(f"{op.lower()}_int32", [helper.make_node(op, ["a", "b"], ["y"])],
                    [("a", ia.astype(np.int32)), ("b", ib.astype(np.int32))])
    u8 = r.integers(0, 255, (3, 8)).astype(np.uint8)
    yield graph("add_uint8_wraps", [helper.make_node("Add", ["a", "b"], ["y"])],
                [("a", u8), ("b", u8[::-1].copy())], opset=14)


def predicate_cases():
    r = rng(406)
    a = np.round(randn(r, 3, 4, 5)).astype(np.float32)
    b = np.round(randn(r, 4, 1)).astype(np.float32)

    def graph(name, nodes, ins, out=B, opset=16):
        xv = [vi(n, list(v.shape), helper.np_dtype_to_tensor_dtype(v.dtype)) for n, v in ins]
        return name, model(nodes, xv, [vi("y", None, out)], opset=opset), dict(ins), []

    for op in ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"]:
        yield graph("cmp_" + op.lower(), [helper.make_node(op, ["a", "b"], ["y"])],
                    [("a", a), ("b", b)])
    p = r.random((3, 4)) < 0.5
    q = r.random((4,)) < 0.5
    for op in ["And", "Or", "Xor"]:
        yield graph("logic_" + op.lower(), [helper.make_node(op, ["p", "q"], ["y"])],
                    [("p", p), ("q", q)])
    yield graph("logic_not_cast", [helper.make_node("Not", ["p"], ["n"]),
                                   helper.make_node("Cast", ["n"], ["y"], to=F)], [("p", p)], F)
    x = randn(r, 3, 4)
    x[0, 0], x[1, 1], x[2, 2] = np.nan, np.inf, -np.inf
    yield graph("isnan", [helper.make_node("IsNaN", ["x"], ["y"])], [("x", x)])
    yield graph("isinf_negative", [helper.make_node("IsInf", ["x"], ["y"], detect_positive=0)],
                [("x", x)])


def mask_cases():
    """The attention-mask arithmetic of BERT-style exports: ids == pad -> Where -> added to
    scores; Cast of the mask; int64 ids."""
    r = rng(407)
    ids = r.integers(0, 4, (1, 16)).astype(np.int64)
    scores = randn(r, 1, 2, 16, 16)
    inits = [const("pad", np.array(0, np.int64)), const("neg", np.array(-1e4, np.float32)),
             const("zero", np.array(0.0, np.float32))]
    nodes = [helper.make_node("Equal", ["ids", "pad"], ["is_pad"]),
             helper.make_node("Where", ["is_pad", "neg", "zero"], ["bias"]),
             helper.make_node("Unsqueeze", ["bias", "axes"], ["bias4"]),
             helper.make_node("Add", ["scores", "bias4"], ["masked"]),
             helper.make_node("Not", ["is_pad"], ["keep"]),
             helper.make_node("Cast", ["keep"], ["keep_f"], to=F),
             helper.make_node("Mul", ["masked", "keep_f"], ["y"])]
    inits.append(const("axes", np.array([1, 2], np.int64)))
    m = model(nodes, [vi("ids", [1, 16], I64), vi("scores", [1, 2, 16, 16])], [vi("y", None)],
              inits, opset=13)
    yield "bert_mask", m, {"ids": ids, "scores": scores}, []
    x = randn(r, 2, 6)
    cond = r.random((2, 1)) < 0.5
    other = r.integers(-5, 5, (6,)).astype(np.int64)
    nodes = [helper.make_node("Where", ["c", "xi", "o"], ["y"])]
    m = model(nodes, [vi("c", [2, 1], B), vi("xi", [2, 6], I64), vi("o", [6], I64)],
              [vi("y", None, I64)])
    yield "where_int64_bcast", m, {"c": cond, "xi": (x * 10).astype(np.int64), "o": other}, []


def cast_clip_cases():
    r = rng(408)
    x = randn(r, 4, 5, scale=200.0)
    chain = [helper.make_node("Cast", ["x"], ["i32"], to=I32),
             helper.make_node("Cast", ["i32"], ["i64"], to=I64),
             helper.make_node("Cast", ["i64"], ["y"], to=F)]
    m = model(chain, [vi("x", [4, 5])], [vi("y", None)])
    yield "cast_chain", m, {"x": x}, []
    m = model([helper.make_node("CastLike", ["x", "like"], ["y"])],
              [vi("x", [4, 5]), vi("like", [1], I64)], [vi("y", None, I64)], opset=15)
    yield "castlike_int64", m, {"x": x, "like": np.zeros(1, np.int64)}, []
    lo, hi = np.array(-50.0, np.float32), np.array(80.0, np.float32)
    m = model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])],
              [vi("x", [4, 5]), vi("lo", []), vi("hi", [])], [vi("y", None)])
    yield "clip_runtime_bounds", m, {"x": x, "lo": lo, "hi": hi}, []
    m = model([helper.make_node("Clip", ["x", "", "hi"], ["y"])],
              [vi("x", [4, 5]), vi("hi", [])], [vi("y", None)])
    yield "clip_runtime_max_only", m, {"x": x, "hi": hi}, []
    xi = r.integers(-128, 127, (3, 7)).astype(np.int8)
    m = model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], [vi("x", [3, 7], I8)],
              [vi("y", None, I8)], [const("lo", np.array(-20, np.int8)),
                                const("hi", np.array(30, np.int8))])
    yield "clip_int8", m, {"x": xi}, []


def all_cases():
    yield mobilenetv3_block()
    yield efficientnet_block()
    yield from activation_cases()
    yield from unary_cases()
    yield from binary_cases()
    yield from predicate_cases()
    yield from mask_cases()
    yield from cast_clip_cases()
