"""Generated cases for the reductions, normalizations, Hardmax, CumSum, TopK, the losses and
broadcasting MatMul: each (name, model, inputs, extra kann-c args), references from ONNX Runtime
(kann_check.py). Shapes are odd-sized so tiles over 2 cores are ragged."""
import numpy as np
from onnx import TensorProto, helper

from cases import const, model, randn, rng, vi

I64 = TensorProto.INT64


def one(name, op, x_shape, seed, opset=13, inits=(), extra_inputs=(), n_out=1, out_types=None,
        **attrs):
    r = rng(seed)
    inputs = ["x", *extra_inputs]
    outs = [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op, inputs, outs, name=op.lower(), **attrs)
    types = out_types or [TensorProto.FLOAT] * n_out
    m = model([node], [vi("x", x_shape)], [vi(o, None, t) for o, t in zip(outs, types)],
              list(inits), opset)
    return name, m, {"x": randn(r, *x_shape)}


def reduce_cases():
    ops = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
           "ReduceL2", "ReduceLogSumExp", "ReduceSumSquare"]
    for i, op in enumerate(ops):
        # non-adjacent axes, one of them negative, keepdims off
        name, m, feeds = one(f"reduce_{op}_axes_0_m1", op, [3, 5, 4, 7], 10 + i, opset=11,
                             axes=[0, -1], keepdims=0)
        if op == "ReduceProd":
            feeds = {"x": (0.5 + np.abs(feeds["x"])).astype(np.float32)}
        yield name, m, feeds, []
    # ReduceLogSum needs positive sums
    name, m, feeds = one("reduce_ReduceLogSum_1", "ReduceLogSum", [4, 9, 5], 30, axes=[1])
    yield name, m, {"x": np.abs(feeds["x"]) + 0.1}, []
    # squeeze-excitation: mean over the spatial dims of NCHW
    yield (*one("reduce_mean_spatial_se", "ReduceMean", [1, 24, 14, 14], 31, axes=[2, 3]), [])
    # everything (no axes), opset 18 axes as an input, noop_with_empty_axes
    yield (*one("reduce_max_all", "ReduceMax", [3, 4, 5], 32, keepdims=0), [])
    yield (*one("reduce_sum_axes_input", "ReduceSum", [2, 6, 5], 33,
                inits=[const("axes", np.array([2, 0], np.int64))], extra_inputs=["axes"]), [])
    yield (*one("reduce_mean_opset18", "ReduceMean", [5, 3, 6], 34, opset=18,
                inits=[const("axes", np.array([-2], np.int64))], extra_inputs=["axes"]), [])
    yield (*one("reduce_sum_noop", "ReduceSum", [3, 4], 35, noop_with_empty_axes=1), [])


def arg_cases():
    yield (*one("argmax_axis1_keep", "ArgMax", [4, 7, 5], 40, axis=1, out_types=[I64]), [])
    yield (*one("argmin_last_nokeep", "ArgMin", [6, 9], 41, axis=-1, keepdims=0,
                select_last_index=1, out_types=[I64]), [])
    # across planes (a segmentation map's classes): runs of up to 64 outputs side by side, a
    # run cut at each row's end; ties (values rounded to halves) pick the first or the last
    name, m, feeds = one("argmax_classes_ties", "ArgMax", [2, 5, 3, 70], 42, axis=1,
                         out_types=[I64])
    yield name, m, {"x": np.round(feeds["x"] * 2) / 2}, []
    name, m, feeds = one("argmin_classes_last", "ArgMin", [1, 6, 9, 11], 43, axis=1,
                         select_last_index=1, out_types=[I64])
    yield name, m, {"x": np.round(feeds["x"] * 2) / 2}, []
    yield (*one("reduce_max_classes", "ReduceMax", [2, 4, 5, 67], 44, axes=[1]), [])
    yield (*one("reduce_mean_classes", "ReduceMean", [1, 7, 3, 130], 45, axes=[1], keepdims=0),
           [])


def norm_cases():
    r = rng(50)
    yield (*one("layernorm_axis_m1", "LayerNormalization", [3, 10, 48], 51, opset=17,
                inits=[const("s", randn(r, 48)), const("b", randn(r, 48))],
                extra_inputs=["s", "b"], epsilon=1e-5), [])
    yield (*one("layernorm_axis1_stats", "LayerNormalization", [5, 3, 7], 52, opset=17,
                inits=[const("s", randn(r, 3, 7))], extra_inputs=["s"], axis=1, n_out=3), [])
    yield (*one("instancenorm", "InstanceNormalization", [2, 5, 6, 7], 53, opset=6,
                inits=[const("s", randn(r, 5)), const("b", randn(r, 5))],
                extra_inputs=["s", "b"], epsilon=1e-3), [])
    yield (*one("lrn", "LRN", [1, 9, 5, 6], 54, size=3, alpha=0.01, beta=0.6, bias=2.0), [])
    yield (*one("hardmax_axis1", "Hardmax", [3, 8, 5], 55, axis=1), [])
    # BatchNormalization with statistics that are graph inputs (computed at run time)
    x = vi("x", [2, 5, 7, 3])
    ps = [vi(n, [5]) for n in ("s", "b", "mean", "var")]
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "mean", "var"], ["y"],
                            name="bn", epsilon=1e-3)
    m = model([node], [x, *ps], [vi("y", None)], [], 15)
    feeds = {"x": randn(r, 2, 5, 7, 3), "s": randn(r, 5), "b": randn(r, 5),
             "mean": randn(r, 5), "var": (np.abs(randn(r, 5)) + 0.5).astype(np.float32)}
    yield "batchnorm_runtime_stats", m, feeds, []


def loss_cases():
    r = rng(60)
    for red in ("none", "mean"):
        x = vi("x", [3, 5, 4])
        t = vi("t", [3, 4], I64)
        node = helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t", "w"], ["y", "log_prob"],
                                name="sce", reduction=red, ignore_index=2)
        m = model([node], [x, t], [vi("y", None), vi("log_prob", None)],
                  [const("w", np.abs(randn(r, 5)))], 13)
        feeds = {"x": randn(r, 3, 5, 4), "t": r.integers(0, 5, (3, 4)).astype(np.int64)}
        yield f"softmax_cross_entropy_{red}", m, feeds, []
    node = helper.make_node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"], name="nll",
                            reduction="sum")
    m = model([node], [vi("x", [4, 6]), vi("t", [4], I64)], [vi("y", None)], [], 13)
    yield "nll_loss_sum", m, {"x": randn(r, 4, 6), "t": np.array([0, 5, 3, 3], np.int64)}, []


def matmul_broadcast_cases():
    r = rng(70)
    for name, sa, sb in (("matmul_bcast_2x1_1x3", [2, 1, 5, 4], [1, 3, 4, 6]),
                         ("matmul_bcast_rank", [3, 5, 4], [2, 1, 4, 7]),
                         ("matmul_bcast_inner", [2, 3, 5, 4], [2, 1, 4, 6])):
        node = helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")
        m = model([node], [vi("a", sa), vi("b", sb)], [vi("y", None)], [], 13)
        yield name, m, {"a": randn(r, *sa), "b": randn(r, *sb)}, []


def cumsum_cases():
    r = rng(80)
    yield (*one("cumsum_axis1", "CumSum", [3, 7, 5], 81, opset=14,
                inits=[const("axis", np.array(1, np.int64))], extra_inputs=["axis"]), [])
    yield (*one("cumsum_last_exclusive_reverse", "CumSum", [4, 33], 82, opset=14,
                inits=[const("axis", np.array(-1, np.int32))], extra_inputs=["axis"],
                exclusive=1, reverse=1), [])
    # RoBERTa's position ids: cumsum of the non-padding mask, times the mask, plus the padding
    # index (int32 scan, int64 result)
    pad = 1
    nodes = [helper.make_node("Equal", ["ids", "pad"], ["is_pad"], name="eq"),
             helper.make_node("Not", ["is_pad"], ["keep"], name="not"),
             helper.make_node("Cast", ["keep"], ["mask"], name="cast", to=TensorProto.INT32),
             helper.make_node("CumSum", ["mask", "axis"], ["run"], name="cumsum"),
             helper.make_node("Mul", ["run", "mask"], ["pos32"], name="mul"),
             helper.make_node("Cast", ["pos32"], ["pos"], name="cast64", to=I64),
             helper.make_node("Add", ["pos", "pad"], ["y"], name="add")]
    m = model(nodes, [vi("ids", [2, 16], I64)], [vi("y", None, I64)],
              [const("pad", np.array(pad, np.int64)), const("axis", np.array(1, np.int64))], 14)
    ids = r.integers(2, 1000, (2, 16)).astype(np.int64)
    ids[0, 11:] = pad
    ids[1, 5:] = pad
    yield "cumsum_position_ids", m, {"ids": ids}, []


def topk_cases():
    r = rng(90)
    yield (*one("topk_last_largest", "TopK", [3, 50], 91, opset=11,
                inits=[const("k", np.array([5], np.int64))], extra_inputs=["k"], n_out=2,
                out_types=[TensorProto.FLOAT, I64]), [])
    yield (*one("topk_axis1_smallest", "TopK", [2, 9, 4], 92, opset=11,
                inits=[const("k", np.array([9], np.int64))], extra_inputs=["k"], n_out=2,
                out_types=[TensorProto.FLOAT, I64], axis=1, largest=0), [])
    yield (*one("topk_opset1_attr", "TopK", [4, 7], 93, opset=1, n_out=2,
                out_types=[TensorProto.FLOAT, I64], k=3), [])
    # int64 with ties: the lower index first
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", axis=0)
    m = model([node], [vi("x", [12, 3], I64)], [vi("v", None, I64), vi("i", None, I64)],
              [const("k", np.array([4], np.int64))], 13)
    yield "topk_int64_ties", m, {"x": r.integers(0, 4, (12, 3)).astype(np.int64)}, []


def all_cases():
    yield from reduce_cases()
    yield from cumsum_cases()
    yield from topk_cases()
    yield from arg_cases()
    yield from norm_cases()
    yield from loss_cases()
    yield from matmul_broadcast_cases()
