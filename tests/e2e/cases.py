"""Small ONNX models covering every op and attribute the compiler accepts, built with
onnx.helper; each case is (name, model, inputs, extra kann-c args). References come from ONNX
Runtime at check time (kann_check.py)."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "samples"))
import sample_cnn  # noqa: E402

F = TensorProto.FLOAT


def rng(seed):
    return np.random.default_rng(seed)


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def model(nodes, inputs, outputs, inits=(), opset=13, name="g"):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="kann-tests")
    m.ir_version = 7 if opset < 15 else 8
    return m


def vi(name, shape, dtype=F):
    return helper.make_tensor_value_info(name, dtype, shape)


def randn(r, *shape, scale=1.0):
    return (r.standard_normal(shape) * scale).astype(np.float32)


def conv_case(name, x_shape, w_shape, seed, bias=True, opset=13, **attrs):
    r = rng(seed)
    inits = [const("W", randn(r, *w_shape, scale=0.3))]
    ins = ["x", "W"]
    if bias:
        inits.append(const("B", randn(r, w_shape[0])))
        ins.append("B")
    node = helper.make_node("Conv", ins, ["y"], name="conv", **attrs)
    m = model([node], [vi("x", x_shape)], [vi("y", None)], inits, opset)
    return name, m, {"x": randn(r, *x_shape)}, []


def conv_cases():
    yield conv_case("conv_basic", [1, 3, 9, 11], [5, 3, 3, 3], 1, pads=[1, 1, 1, 1])
    yield conv_case("conv_nobias_stride2", [1, 4, 10, 9], [6, 4, 3, 3], 2, bias=False,
                    strides=[2, 2])
    yield conv_case("conv_dilated_asym", [1, 2, 12, 13], [3, 2, 3, 2], 3, dilations=[2, 1],
                    pads=[2, 0, 1, 1], strides=[1, 2])
    yield conv_case("conv_groups", [1, 6, 8, 8], [4, 3, 3, 3], 4, group=2, pads=[1, 1, 1, 1])
    # groups of 4 or more output channels: one packed conv per group (wide, gather, pointwise)
    yield conv_case("conv_groups_packed_wide", [1, 16, 9, 11], [24, 4, 3, 3], 41, group=4,
                    pads=[1, 1, 1, 1])
    yield conv_case("conv_groups_packed_stride2", [1, 32, 13, 13], [32, 8, 3, 3], 42, group=4,
                    strides=[2, 2], pads=[1, 1, 1, 1])
    yield conv_case("conv_groups_packed_pointwise", [1, 16, 7, 7], [32, 4, 1, 1], 43, group=4)
    # 16-channel groups at stride 2 (a RegNet stage's first 3x3): their padded rows copied to a
    # band, 28 pixels a group: rows of 28, and of 7 four at a time from an odd-sized input
    yield conv_case("conv_groups_rows_stride2", [1, 48, 56, 56], [48, 16, 3, 3], 47, group=3,
                    strides=[2, 2], pads=[1, 1, 1, 1])
    yield conv_case("conv_groups_rows_stride2_7", [1, 32, 13, 13], [32, 16, 3, 3], 48, group=2,
                    strides=[2, 2], pads=[1, 1, 1, 1])
    # many 16-channel groups (a RegNet block's 3x3): on 2 streams each group runs whole on one,
    # 4 and 5 of them; the block's input added and a ReLU fused into every group's stores
    r = rng(50)
    node = helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv", group=9,
                            pads=[1, 1, 1, 1])
    nodes = [node, helper.make_node("Add", ["c", "x"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    yield ("conv_groups_whole_residual",
           model(nodes, [vi("x", [1, 144, 7, 7])], [vi("y", None)],
                 [const("W", randn(r, 144, 16, 3, 3, scale=0.2)), const("B", randn(r, 144))]),
           {"x": randn(r, 1, 144, 7, 7)}, [])
    # groups the packed kernel does not take (over 64 of them, or under 4 output channels
    # each): one depthwise conv over all groups per (output, input) channel of a group, the
    # input gathered group-major, the outputs interleaved back; a depthwise multiplier of 3 at
    # stride 2, 96 groups of 2 -> 1 with the block's input added and a ReLU, dilation
    yield conv_case("conv_groups_multiplier", [1, 8, 11, 12], [24, 1, 3, 3], 51, group=8,
                    strides=[2, 2], pads=[1, 1, 1, 1])
    r = rng(52)
    node = helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv", group=96,
                            pads=[1, 1, 1, 1])
    nodes = [node, helper.make_node("Add", ["c", "r"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    yield ("conv_groups_many_residual",
           model(nodes, [vi("x", [1, 192, 9, 10]), vi("r", [1, 96, 9, 10])], [vi("y", None)],
                 [const("W", randn(r, 96, 2, 3, 3, scale=0.3)), const("B", randn(r, 96))]),
           {"x": randn(r, 1, 192, 9, 10), "r": randn(r, 1, 96, 9, 10)}, [])
    yield conv_case("conv_groups_many_dilated", [1, 140, 10, 10], [140, 2, 3, 3], 53, group=70,
                    dilations=[2, 2], pads=[2, 2, 2, 2], bias=False)
    # atrous convs on a small map: taps that read only padding are cut (DeepLab's ASPP)
    yield conv_case("conv_atrous_center_tap_only", [1, 8, 6, 6], [4, 8, 3, 3], 44,
                    dilations=[7, 7], pads=[7, 7, 7, 7])
    yield conv_case("conv_atrous_rows_cut", [1, 8, 6, 9], [4, 8, 3, 3], 45, dilations=[7, 2],
                    pads=[7, 2, 7, 2])
    yield conv_case("conv_atrous_stride2_groups", [1, 8, 7, 7], [8, 2, 3, 3], 46, group=4,
                    dilations=[6, 6], pads=[6, 6, 6, 6], strides=[2, 2])
    # dilated 3x3 convs at stride 1 (DeepLab's backbone): every phase of the dilation gathered
    # into one image, one Winograd conv over it, the phases' outputs copied back; ragged phases
    # (maps not a multiple of the dilation), dilations differing by axis, ReLU fused
    r = rng(15)
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], dilations=[2, 2], pads=[2, 2, 2, 2]),
             helper.make_node("Relu", ["c"], ["y"])]
    yield ("conv_dilated_phases_relu",
           model(nodes, [vi("x", [1, 24, 20, 18])], [vi("y", None)],
                 [const("W", randn(r, 20, 24, 3, 3, scale=0.2)), const("B", randn(r, 20))]),
           {"x": randn(r, 1, 24, 20, 18)}, [])
    yield conv_case("conv_dilated_phases_ragged", [1, 16, 41, 37], [17, 16, 3, 3], 16,
                    dilations=[4, 3], pads=[4, 3, 4, 3])
    yield conv_case("conv_dilated_phases_uneven_pads", [1, 16, 21, 22], [16, 16, 3, 3], 17,
                    dilations=[2, 2], pads=[2, 0, 4, 2])
    yield conv_case("conv_dilated_pad_off_phase", [1, 16, 20, 20], [16, 16, 3, 3], 18,
                    dilations=[2, 2], pads=[1, 1, 1, 1])
    yield conv_case("conv_depthwise", [1, 7, 10, 10], [7, 1, 3, 3], 5, group=7, strides=[2, 2],
                    pads=[1, 1, 1, 1])
    # large-kernel depthwise convs (RepLKNet's 31x31, a 13x13 at stride 2): the band layout's
    # taps up to 32x32, rows computed row by row where the window's reach exceeds the map
    yield conv_case("conv_depthwise_31x31", [1, 20, 24, 24], [20, 1, 31, 31], 19, group=20,
                    pads=[15, 15, 15, 15])
    yield conv_case("conv_depthwise_13x13_s2", [1, 6, 30, 33], [6, 1, 13, 13], 20, group=6,
                    strides=[2, 2], pads=[6, 6, 6, 6])
    yield conv_case("conv_same_upper", [1, 3, 7, 8], [4, 3, 4, 4], 6, auto_pad="SAME_UPPER",
                    strides=[2, 2])
    yield conv_case("conv_same_lower", [1, 3, 7, 8], [4, 3, 4, 3], 7, auto_pad="SAME_LOWER")
    yield conv_case("conv_valid", [1, 3, 7, 8], [4, 3, 2, 5], 8, auto_pad="VALID")
    yield conv_case("conv_1d", [1, 3, 20], [4, 3, 5], 9, pads=[2, 1], strides=[2])
    # a 1-D conv at stride 2 over rows wider than the lanes path's band holds a few channels of
    # (a speech model's feature encoder): another path takes it
    yield conv_case("conv_1d_wide_stride2", [1, 64, 2101], [48, 64, 3], 14, strides=[2])
    yield conv_case("conv_batch2", [2, 3, 6, 6], [4, 3, 1, 1], 10)
    yield conv_case("conv_1x1_many", [1, 33, 5, 7], [17, 33, 1, 1], 11)
    # Winograd F(2x2) on small maps: one block of 16 tiles (7x7), 25 tiles (9x10) over more
    # input channels than the GEMMs prefetch ahead
    yield conv_case("conv_winograd_7x7", [1, 24, 7, 7], [20, 24, 3, 3], 12, pads=[1, 1, 1, 1])
    yield conv_case("conv_winograd_9x10", [1, 80, 9, 10], [16, 80, 3, 3], 13, pads=[1, 1, 1, 1])


def inverted_residual_cases():
    """Inverted-residual blocks (1x1 expand, depthwise 3x3, 1x1 projection, the block's input
    added): on 2 streams the projection is summed across them (a partial per stream over the
    channels its depthwise tile wrote); odd channel counts, a ReLU after the sum, stride 2."""
    for name, c, e, hw, stride, relu_out, seed in (
            ("inverted_residual_summed", 40, 240, 14, 1, False, 47),
            ("inverted_residual_summed_relu_odd", 27, 162, 9, 1, True, 48),
            ("inverted_residual_stride2", 24, 144, 15, 2, False, 49)):
        r = rng(seed)
        inits = [const("We", randn(r, e, c, 1, 1, scale=0.2)), const("Be", randn(r, e)),
                 const("Wd", randn(r, e, 1, 3, 3, scale=0.3)), const("Bd", randn(r, e)),
                 const("Wp", randn(r, c, e, 1, 1, scale=0.1)), const("Bp", randn(r, c)),
                 const("lo", np.float32(0)), const("hi", np.float32(6))]
        nodes = [helper.make_node("Conv", ["x", "We", "Be"], ["e"], name="expand"),
                 helper.make_node("Clip", ["e", "lo", "hi"], ["er"], name="expand_act"),
                 helper.make_node("Conv", ["er", "Wd", "Bd"], ["d"], name="dw", group=e,
                                  pads=[1, 1, 1, 1], strides=[stride, stride]),
                 helper.make_node("Clip", ["d", "lo", "hi"], ["dr"], name="dw_act"),
                 helper.make_node("Conv", ["dr", "Wp", "Bp"], ["p"], name="project")]
        if stride == 1:
            nodes.append(helper.make_node("Add", ["p", "x"], ["s"], name="residual"))
        else:
            nodes.append(helper.make_node("Identity", ["p"], ["s"], name="no_residual"))
        nodes.append(helper.make_node("Relu" if relu_out else "Identity", ["s"], ["y"],
                                      name="out"))
        yield name, model(nodes, [vi("x", [1, c, hw, hw])], [vi("y", None)], inits), \
            {"x": randn(r, 1, c, hw, hw)}, []


def dwblock_cases():
    """Inverted-residual blocks whose inner maps are large enough (1 MB) to run as one
    f32_dwblock record, band by band, with kann-c --fuse-blocks: with the block's input added,
    stride 2 over an odd map with a ReLU after, a dilated 5x5 depthwise conv, a
    depthwise-separable pair (no expansion, 5x5); one whose depthwise output a second node
    reads, which keeps its three records. Without the option (the CPU target), the blocks the
    AVX-512 lanes path takes over inner maps of 2 MiB or more: stride 2 (3x3) and stride 1
    (5x5, the lanes path's general taps), each against the same block under 2 MiB and the same
    block compiled with --target opencl, which keep their three records."""
    def block(name, c, e, h, w, seed, stride=1, k=3, dil=1, expand=True, residual=False,
              relu_out=False, shared=False, opts=("--fuse-blocks",), fused=True):
        r = rng(seed)
        pad = (k - 1) * dil // 2
        inits = [const("Wd", randn(r, e, 1, k, k, scale=0.3)), const("Bd", randn(r, e)),
                 const("Wp", randn(r, c, e, 1, 1, scale=0.1)), const("Bp", randn(r, c)),
                 const("lo", np.float32(0)), const("hi", np.float32(6))]
        nodes = []
        src = "x"
        if expand:
            inits += [const("We", randn(r, e, c, 1, 1, scale=0.2)), const("Be", randn(r, e))]
            nodes += [helper.make_node("Conv", ["x", "We", "Be"], ["e"], name="expand"),
                      helper.make_node("Clip", ["e", "lo", "hi"], ["er"], name="expand_act")]
            src = "er"
        nodes += [helper.make_node("Conv", [src, "Wd", "Bd"], ["d"], name="dw", group=e,
                                   pads=[pad] * 4, strides=[stride, stride],
                                   dilations=[dil, dil]),
                  helper.make_node("Clip", ["d", "lo", "hi"], ["dr"], name="dw_act"),
                  helper.make_node("Conv", ["dr", "Wp", "Bp"], ["p"], name="project")]
        last = "p"
        if residual:
            nodes.append(helper.make_node("Add", ["p", "x"], ["s"], name="residual"))
            last = "s"
        nodes.append(helper.make_node("Relu" if relu_out else "Identity", [last], ["y"],
                                      name="out"))
        outs = [vi("y", None)]
        if shared:
            nodes.append(helper.make_node("ReduceMean", ["dr"], ["m"], name="mean", axes=[2, 3]))
            outs.append(vi("m", None))
        expect = "f32_dwblock x1" if fused and not shared else "f32_dwconv2d x1"
        return name, model(nodes, [vi("x", [1, c, h, w])], outs, inits), \
            {"x": randn(r, 1, c, h, w)}, list(opts) + ["--expect-summary", expect]
    yield block("dwblock_residual", 24, 144, 40, 44, 60, residual=True)
    yield block("dwblock_stride2_odd_relu", 16, 96, 57, 61, 61, stride=2, relu_out=True)
    yield block("dwblock_dilated_5x5", 20, 100, 36, 38, 62, k=5, dil=2, residual=True)
    yield block("dwblock_separable_5x5", 64, 64, 64, 66, 63, k=5, expand=False)
    yield block("dwblock_shared_dw", 24, 144, 40, 44, 64, shared=True)
    yield block("dwblock_small_default", 24, 144, 40, 44, 65, residual=True, opts=(),
                fused=False)
    yield block("dwblock_stride2_default", 16, 96, 89, 93, 66, stride=2, opts=())
    yield block("dwblock_stride2_opencl", 16, 96, 89, 93, 67, stride=2,
                opts=("--target", "opencl"), fused=False)
    yield block("dwblock_5x5_default", 24, 120, 54, 58, 68, k=5, residual=True, opts=())


def bn_params(r, c):
    return [const("gamma", randn(r, c) * 0.5 + 1), const("beta", randn(r, c)),
            const("mean", randn(r, c)), const("var", np.abs(randn(r, c)) + 0.5)]


def atrous_taps_cases():
    """Dilated convs on maps smaller than their reach, where each tap reads input over only a
    rectangle of outputs: lowered tap by tap (a pointwise conv per tap over its rectangle, padded
    back and summed) when the rectangles hold at most half the products and one of them is the
    whole output; the summary counts the pads (one per tap but the whole-output one). Also
    strided and asymmetric, with the node's residual and activation, and a conv where no tap
    covers the whole output (left as one conv)."""
    def atrous(name, seed, x_shape, w_shape, expect, residual=False, **attrs):
        r = rng(seed)
        inits = [const("W", randn(r, *w_shape, scale=0.3)), const("B", randn(r, w_shape[0]))]
        nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv", **attrs)]
        ins, feeds = [vi("x", x_shape)], {"x": randn(r, *x_shape)}
        if residual:
            st, dl, pd = attrs.get("strides", [1, 1]), attrs["dilations"], attrs["pads"]
            out = [1, w_shape[0]] + [(x_shape[2 + i] + pd[i] + pd[2 + i] -
                                      dl[i] * (w_shape[2 + i] - 1) - 1) // st[i] + 1
                                     for i in range(2)]
            ins.append(vi("res", out))
            feeds["res"] = randn(r, *out)
            nodes.append(helper.make_node("Add", ["c", "res"], ["s"]))
            nodes.append(helper.make_node("Relu", ["s"], ["y"]))
        else:
            nodes.append(helper.make_node("Identity", ["c"], ["y"]))
        return name, model(nodes, ins, [vi("y", None)], inits), feeds, \
            ["--expect-summary", expect]
    yield atrous("conv_atrous_taps_aspp", 70, [1, 20, 14, 14], [30, 20, 3, 3], "f32_pad2d x8",
                 dilations=[12, 12], pads=[12, 12, 12, 12])
    yield atrous("conv_atrous_taps_residual_relu", 71, [1, 12, 14, 14], [16, 12, 3, 3],
                 "f32_binary x8", residual=True, dilations=[12, 12], pads=[12, 12, 12, 12])
    yield atrous("conv_atrous_taps_stride2", 72, [1, 8, 16, 14], [13, 8, 3, 3], "f32_pad2d x8",
                 strides=[2, 2], dilations=[10, 9], pads=[10, 9, 10, 9])
    yield atrous("conv_atrous_taps_asym", 73, [1, 5, 13, 17], [7, 5, 3, 3], "f32_pad2d x8",
                 strides=[2, 1], dilations=[10, 12], pads=[10, 12, 9, 11])
    yield atrous("conv_atrous_taps_5x5", 74, [1, 6, 10, 10], [9, 6, 5, 5], "f32_pad2d x24",
                 dilations=[4, 4], pads=[8, 8, 8, 8])
    yield atrous("conv_atrous_no_whole_tap", 75, [1, 6, 9, 11], [8, 6, 3, 2],
                 "kernels:  f32_conv2d_packed x1 f32_pad2d x1\n", dilations=[6, 7],
                 pads=[6, 7, 6, 7])


def bn_cases():
    """Conv + explicit BatchNormalization and its pre-folded twin; a standalone BN."""
    r = rng(20)
    x = randn(r, 1, 4, 8, 8)
    w, b = randn(r, 6, 4, 3, 3, scale=0.3), randn(r, 6)
    bnp = bn_params(r, 6)
    eps = 1e-3
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["n"],
                              name="bn", epsilon=eps),
             helper.make_node("Relu", ["n"], ["y"], name="relu")]
    inits = [const("W", w), const("B", b)] + bnp
    yield "bn_explicit", model(nodes, [vi("x", [1, 4, 8, 8])], [vi("y", None)], inits), \
        {"x": x}, ["--expect-summary", "1 batch-norms into conv"]
    g, be, mu, var = (numpy_helper.to_array(t) for t in bnp)
    s = g / np.sqrt(var + eps)
    wf = (w * s[:, None, None, None]).astype(np.float32)
    bf = ((b - mu) * s + be).astype(np.float32)
    nodes2 = [helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv", pads=[1, 1, 1, 1]),
              helper.make_node("Relu", ["c"], ["y"], name="relu")]
    yield "bn_prefolded_twin", model(nodes2, [vi("x", [1, 4, 8, 8])], [vi("y", None)],
                                     [const("W", wf), const("B", bf)]), {"x": x}, []
    # BN on a graph input cannot fold: a per-channel multiply-add.
    r = rng(21)
    nodes = [helper.make_node("BatchNormalization", ["x", "gamma", "beta", "mean", "var"], ["n"],
                              name="bn"),
             helper.make_node("Relu", ["n"], ["y"], name="relu")]
    yield "bn_standalone", model(nodes, [vi("x", [1, 5, 4, 6])], [vi("y", None)], bn_params(r, 5)), \
        {"x": randn(r, 1, 5, 4, 6)}, ["--expect-summary", "1 batch-norms as a per-channel"]
    # Gemm followed by BN (1-D features).
    r = rng(22)
    nodes = [helper.make_node("Gemm", ["x", "W", "B"], ["g"], name="fc", transB=1),
             helper.make_node("BatchNormalization", ["g", "gamma", "beta", "mean", "var"], ["y"],
                              name="bn")]
    yield "gemm_bn", model(nodes, [vi("x", [1, 12])], [vi("y", None)],
                           [const("W", randn(r, 7, 12)), const("B", randn(r, 7))] + bn_params(r, 7)), \
        {"x": randn(r, 1, 12)}, []


def pool_cases():
    r = rng(30)
    x = randn(r, 1, 3, 11, 10)
    def pool(name, op, **attrs):
        n = helper.make_node(op, ["x"], ["y"], name="pool", **attrs)
        return name, model([n], [vi("x", [1, 3, 11, 10])], [vi("y", None)]), {"x": x}, []
    yield pool("maxpool_basic", "MaxPool", kernel_shape=[3, 3], strides=[2, 2])
    yield pool("maxpool_ceil_pads", "MaxPool", kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1], ceil_mode=1)
    yield pool("maxpool_dilated", "MaxPool", kernel_shape=[2, 3], dilations=[2, 2])
    yield pool("avgpool_exclude_pad", "AveragePool", kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1])
    yield pool("avgpool_include_pad", "AveragePool", kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 0, 1, 2], count_include_pad=1)
    yield pool("avgpool_ceil", "AveragePool", kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)
    yield pool("maxpool_same_upper", "MaxPool", kernel_shape=[3, 3], strides=[2, 2],
               auto_pad="SAME_UPPER")
    yield pool("global_avgpool", "GlobalAveragePool")


def stem_pool_cases():
    """An image stem and the max pool after it, one f32_conv2d_maxpool record: squeezenet's
    (3x3 stride 2, pool 3x3 stride 2 in ceil mode), resnet's (7x7 stride 2 pad 3, pool 3x3 stride
    2 pad 1), a strided pool wider than its stride with its last window cut by the map's end,
    over enough output channels for two passes; and a stem whose output a second node reads
    too, which keeps its own pool."""
    def stem(name, hw, c_out, k, stride, pad, pool_attrs, seed, shared=False):
        r = rng(seed)
        inits = [const("W", randn(r, c_out, 3, k, k, scale=0.3)), const("B", randn(r, c_out))]
        nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], name="stem",
                                  strides=[stride, stride], pads=[pad] * 4),
                 helper.make_node("Relu", ["c"], ["cr"], name="stem_relu"),
                 helper.make_node("MaxPool", ["cr"], ["y"], name="pool", **pool_attrs)]
        outs = [vi("y", None)]
        if shared:
            nodes.append(helper.make_node("ReduceMean", ["cr"], ["m"], name="mean", axes=[2, 3]))
            outs.append(vi("m", None))
        expect = "f32_conv2d_packed x1" if shared else "f32_conv2d_maxpool x1"
        return name, model(nodes, [vi("x", [1, 3, hw, hw + 3])], outs, inits), \
            {"x": randn(r, 1, 3, hw, hw + 3)}, ["--expect-summary", expect]
    yield stem("stem_pool_squeezenet", 45, 20, 3, 2, 0,
               dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1), 50)
    yield stem("stem_pool_resnet", 40, 70, 7, 2, 3,
               dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), 51)
    yield stem("stem_pool_cut_window", 33, 13, 3, 1, 1,
               dict(kernel_shape=[2, 3], strides=[3, 2], pads=[1, 0, 1, 2], ceil_mode=1), 52)
    yield stem("stem_pool_shared", 30, 16, 3, 2, 1, dict(kernel_shape=[3, 3], strides=[2, 2]),
               53, shared=True)


def head_gap_cases():
    """A classifier head: a 1x1 conv, its activation and the global average pool after it (or a
    ReduceMean over the two spatial axes, mnasnet's), one f32_pointwise_gap record (squeezenet's
    13x13 with ReLU, 1000 classes cut short; mobilenet_v2's 7x7 with ReLU6 as Clip, no bias); a
    head whose conv output a second node reads too keeps its conv and pool, as does any head
    compiled with --target opencl; a GlobalAveragePool after a 3x3 conv stays a pool, and a
    ReduceMean over the channels a reduce."""
    def head(name, seed, c_in, c_out, hw, act="Relu", bias=True, shared=False, k=1, opts=(),
             mean_axes=None):
        r = rng(seed)
        inits = [const("W", randn(r, c_out, c_in, k, k, scale=0.2))]
        ins = ["x", "W"]
        if bias:
            inits.append(const("B", randn(r, c_out)))
            ins.append("B")
        nodes = [helper.make_node("Conv", ins, ["c"], name="head", pads=[k // 2] * 4)]
        if act == "Relu":
            nodes.append(helper.make_node("Relu", ["c"], ["ca"], name="act"))
        else:
            inits += [const("lo", np.array(0.0, np.float32)), const("hi", np.array(6.0, np.float32))]
            nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["ca"], name="act"))
        if mean_axes is None:
            nodes.append(helper.make_node("GlobalAveragePool", ["ca"], ["y"], name="gap"))
        else:  # x.mean(axes) as exporters write it, the reduced dimensions dropped
            nodes.append(helper.make_node("ReduceMean", ["ca"], ["y"], name="gap",
                                          axes=mean_axes, keepdims=0))
        outs = [vi("y", None)]
        if shared:
            nodes.append(helper.make_node("ReduceMax", ["ca"], ["m"], name="max", axes=[2, 3]))
            outs.append(vi("m", None))
        fused = k == 1 and not shared and not opts and mean_axes in (None, [2, 3], [-1, -2])
        expect = ("f32_pointwise_gap x1" if fused else
                  "f32_reduce x1" if mean_axes else "f32_global_avgpool x1")
        return name, model(nodes, [vi("x", [1, c_in, hw, hw])], outs, inits), \
            {"x": randn(r, 1, c_in, hw, hw)}, list(opts) + ["--expect-summary", expect]
    yield head("head_gap_squeezenet", 80, 96, 70, 13)
    yield head("head_gap_mobilenet", 81, 40, 100, 7, act="Clip", bias=False)
    yield head("head_gap_shared", 82, 24, 33, 9, shared=True)
    yield head("head_gap_3x3", 83, 16, 20, 8, k=3)
    yield head("head_gap_target_opencl", 84, 32, 40, 7, opts=("--target", "opencl"))
    yield head("head_gap_reduce_mean", 85, 40, 36, 7, mean_axes=[2, 3])
    yield head("head_gap_reduce_mean_negative_axes", 86, 40, 36, 5, mean_axes=[-1, -2])
    yield head("head_gap_reduce_mean_channels", 87, 40, 36, 5, mean_axes=[1])


def pointwise_lanes_cases():
    """1x1 convs over small maps with a long reduction, one f32_pointwise_lanes record each: a
    7x7 map with ragged blocks of output channels (70), ReLU6 and a residual add; a 14x14 map
    without a bias; an inverted residual block's projection after a depthwise conv (on two
    streams summed across them, each stream's part a pointwise_lanes call); with --target opencl,
    or over a 28x28 map, or with a short reduction, a conv2d_packed call instead. Few output
    channels that 12-row panels leave ragged (16, 30) take the lanes path on any map from 128
    input channels on (23x23 with a residual and ReLU6; 27x27), not from 96, nor 24 channels
    (two whole panels)."""
    def pw(name, seed, c_in, c_out, hw, act="Relu", bias=True, residual=False, dw=False,
           expect="f32_pointwise_lanes x1", opts=()):
        r = rng(seed)
        inits = [const("W", randn(r, c_out, c_in, 1, 1, scale=0.2))]
        ins = ["xd" if dw else "x", "W"]
        nodes = []
        if dw:
            inits.append(const("Wd", randn(r, c_in, 1, 3, 3, scale=0.5)))
            nodes.append(helper.make_node("Conv", ["x", "Wd"], ["xd"], name="dw", group=c_in,
                                          pads=[1, 1, 1, 1]))
        if bias:
            inits.append(const("B", randn(r, c_out)))
            ins.append("B")
        nodes.append(helper.make_node("Conv", ins, ["c"], name="pw"))
        out = "c"
        feeds = {"x": randn(r, 1, c_in, hw, hw)}
        inputs = [vi("x", [1, c_in, hw, hw])]
        if residual:
            nodes.append(helper.make_node("Add", ["c", "s"], ["cs"], name="res"))
            feeds["s"] = randn(r, 1, c_out, hw, hw)
            inputs.append(vi("s", [1, c_out, hw, hw]))
            out = "cs"
        if act == "Relu":
            nodes.append(helper.make_node("Relu", [out], ["y"], name="act"))
        else:
            inits += [const("lo", np.array(0.0, np.float32)), const("hi", np.array(6.0, np.float32))]
            nodes.append(helper.make_node("Clip", [out, "lo", "hi"], ["y"], name="act"))
        return name, model(nodes, inputs, [vi("y", None)], inits), feeds, \
            list(opts) + ["--expect-summary", expect]
    yield pw("pointwise_lanes_7x7", 90, 96, 70, 7, act="Clip", residual=True)
    yield pw("pointwise_lanes_14x14", 91, 128, 40, 14, bias=False)
    yield pw("pointwise_lanes_projection", 92, 192, 40, 7, dw=True, residual=True,
             expect="f32_pointwise_lanes x")
    yield pw("pointwise_lanes_target_opencl", 93, 96, 48, 7, opts=("--target", "opencl"),
             expect="f32_conv2d_packed x1")
    yield pw("pointwise_lanes_28x28", 94, 96, 48, 28, expect="f32_conv2d_packed x1")
    yield pw("pointwise_lanes_short", 95, 32, 48, 7, expect="f32_conv2d_packed x1")
    yield pw("pointwise_lanes_few_channels", 96, 128, 16, 23, act="Clip", residual=True)
    yield pw("pointwise_lanes_few_30", 97, 160, 30, 27)
    yield pw("pointwise_lanes_few_short", 98, 96, 16, 28, expect="f32_conv2d_packed x1")
    yield pw("pointwise_lanes_few_whole_panels", 99, 256, 24, 27, expect="f32_conv2d_packed x1")


def gelu_cases():
    """GELU written as its Erf formula x * (1 + erf(x / sqrt(2))) * 0.5 after a conv: the
    formula's three placements of the half and both forms of the scale become the conv's
    epilogue (one kernel left); with the conv's output read again, or after a node with no
    epilogue (a Transpose), one standalone Gelu."""
    def gelu(name, seed, scale="div", half="last", shared=False, after="conv"):
        r = rng(seed)
        inits = [const("W", randn(r, 6, 4, 3, 3, scale=0.5)), const("B", randn(r, 6)),
                 const("s2", np.array(np.sqrt(2.0), np.float32)),
                 const("rs2", np.array(np.sqrt(0.5), np.float32)),
                 const("one", np.array(1.0, np.float32)),
                 const("half", np.array(0.5, np.float32))]
        nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c0"], name="conv")]
        x = "c0"
        if after == "transpose":
            nodes.append(helper.make_node("Transpose", ["c0"], ["c"], perm=[0, 1, 3, 2]))
            x = "c"
        nodes.append(helper.make_node("Div", [x, "s2"], ["d"]) if scale == "div" else
                     helper.make_node("Mul", ["rs2", x], ["d"]))
        nodes += [helper.make_node("Erf", ["d"], ["e"]),
                  helper.make_node("Add", ["one", "e"], ["a"])]
        if half == "last":
            nodes += [helper.make_node("Mul", [x, "a"], ["m"]),
                      helper.make_node("Mul", ["m", "half"], ["g"])]
        elif half == "first":
            nodes += [helper.make_node("Mul", ["half", x], ["h"]),
                      helper.make_node("Mul", ["a", "h"], ["g"])]
        else:
            nodes += [helper.make_node("Mul", ["a", "half"], ["h"]),
                      helper.make_node("Mul", [x, "h"], ["g"])]
        if shared:
            nodes.append(helper.make_node("Sub", ["g", x], ["y"]))
        else:
            nodes.append(helper.make_node("Identity", ["g"], ["y"]))
        fused = not shared and after == "conv"
        expect = "kernels:  f32_conv2d_packed x1\n" if fused else "f32_act x1"
        return name, model(nodes, [vi("x", [1, 4, 9, 11])], [vi("y", None)], inits), \
            {"x": randn(r, 1, 4, 9, 11)}, ["--expect-summary", expect]
    yield gelu("gelu_conv_div_half_last", 60)
    yield gelu("gelu_conv_mul_half_first", 61, scale="mul", half="first")
    yield gelu("gelu_conv_half_on_sum", 62, half="sum")
    yield gelu("gelu_conv_shared", 63, shared=True)
    yield gelu("gelu_after_transpose", 64, scale="mul", after="transpose")


def gemm_cases():
    r = rng(40)
    def gemm(name, a_shape, b_shape, c_shape, b_const=True, **attrs):
        inits = [const("C", randn(r, *c_shape))] if c_shape is not None else []
        ins = [vi("a", a_shape)]
        feeds = {"a": randn(r, *a_shape)}
        if b_const:
            inits.append(const("B", randn(r, *b_shape)))
        else:
            ins.append(vi("B", b_shape))
            feeds["B"] = randn(r, *b_shape)
        n = helper.make_node("Gemm", ["a", "B"] + (["C"] if c_shape is not None else []), ["y"],
                             name="gemm", **attrs)
        return name, model([n], ins, [vi("y", None)], inits), feeds, []
    yield gemm("gemm_plain", [3, 5], [5, 4], [4])
    yield gemm("gemm_transB_fc", [1, 64], [10, 64], [10], transB=1)
    yield gemm("gemm_transA_alpha_beta", [5, 3], [5, 4], [3, 4], transA=1, alpha=0.5, beta=2.0)
    yield gemm("gemm_both_trans_scalar_c", [6, 2], [7, 6], [], transA=1, transB=1)
    yield gemm("gemm_col_c_runtime_b", [4, 6], [6, 3], [4, 1], b_const=False)
    yield gemm("gemm_no_c", [2, 8], [8, 9], None)
    # several rows, more than 64 columns: B^T copied to panels of 64 columns, the last ragged
    yield gemm("gemm_transB_panels", [9, 33], [150, 33], [150], transB=1)
    def matmul(name, a_shape, b_shape, b_const):
        feeds = {"a": randn(r, *a_shape)}
        ins, inits = [vi("a", a_shape)], []
        if b_const:
            inits.append(const("B", randn(r, *b_shape)))
        else:
            ins.append(vi("B", b_shape))
            feeds["B"] = randn(r, *b_shape)
        n = helper.make_node("MatMul", ["a", "B"], ["y"], name="mm")
        return name, model([n], ins, [vi("y", None)], inits), feeds, []
    yield matmul("matmul_2d", [3, 7], [7, 5], True)
    yield matmul("matmul_batched", [2, 3, 4], [2, 4, 5], False)
    yield matmul("matmul_broadcast_weights", [2, 3, 4], [4, 6], True)
    # ConvNeXt's channels-last linear layer: the batches of A one matrix of 35 rows
    yield matmul("matmul_rank4_rows_folded", [1, 5, 7, 40], [40, 70], True)
    yield matmul("matmul_vector", [4], [4, 3], True)
    # constant B with a batch of its own, each batch in panels
    yield matmul("matmul_batched_const_panels", [3, 5, 20], [3, 20, 130], True)
    def einsum(name, equation, *shapes, b_const=False):
        names = ["a", "b"][:len(shapes)]
        feeds = {nm: randn(r, *sh) for nm, sh in zip(names, shapes)}
        ins, inits = [vi(nm, sh) for nm, sh in zip(names, shapes)], []
        if b_const:
            inits.append(const("b", feeds.pop("b")))
            ins = ins[:1]
        n = helper.make_node("Einsum", names, ["y"], name="einsum", equation=equation)
        return name, model([n], ins, [vi("y", None)], inits, opset=12), feeds, []
    # attention as MaxViT and relative-position code write it
    yield einsum("einsum_attention_scores", "bhid,bhjd->bhij", [1, 2, 5, 8], [1, 2, 7, 8])
    yield einsum("einsum_attention_values", "bhij,bhjd->bhid", [1, 2, 5, 7], [1, 2, 7, 8])
    yield einsum("einsum_permuted_output", "bid,jd -> bji", [2, 3, 4], [5, 4], b_const=True)
    yield einsum("einsum_ellipsis_broadcast", "...ij,...jk->...ik", [3, 1, 2, 4], [3, 5, 4, 3])
    yield einsum("einsum_implicit_output", "ij,jk", [3, 4], [4, 5])
    yield einsum("einsum_outer", "i,j->ij", [3], [4])
    yield einsum("einsum_dot", "i,i", [6], [6])
    yield einsum("einsum_sum_one_side", "ij,k->ik", [3, 4], [5])
    yield einsum("einsum_transpose", "abc->cab", [2, 3, 4])
    yield einsum("einsum_reduce", "abc->b", [2, 3, 4])


def eltwise_cases():
    r = rng(50)
    for op in ["Add", "Sub", "Mul", "Div"]:
        n = helper.make_node(op, ["x", "c"], ["y"], name=op.lower())
        c = np.abs(randn(r, 3, 1, 1)) + 0.5
        yield f"{op.lower()}_channel_const", model([n], [vi("x", [1, 3, 4, 5])], [vi("y", None)],
                                                   [const("c", c)]), {"x": randn(r, 1, 3, 4, 5)}, []
    n = helper.make_node("Div", ["x", "z"], ["y"], name="div")
    yield "div_broadcast_both", model([n], [vi("x", [2, 1, 5]), vi("z", [3, 1])], [vi("y", None)]), \
        {"x": randn(r, 2, 1, 5), "z": np.abs(randn(r, 3, 1)) + 0.5}, []
    n = helper.make_node("Mul", ["x", "s"], ["y"], name="mul")
    yield "mul_scalar", model([n], [vi("x", [4, 6])], [vi("y", None)],
                              [const("s", np.float32(1.7))]), {"x": randn(r, 4, 6)}, []


def misc_cases():
    r = rng(60)
    x = randn(r, 2, 3, 4)
    for opset, axis in [(11, 1), (13, -1), (13, 1)]:
        n = helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=axis)
        yield f"softmax_op{opset}_axis{axis}", model([n], [vi("x", [2, 3, 4])], [vi("y", None)],
                                                     opset=opset), {"x": x}, []
    n = helper.make_node("LogSoftmax", ["x"], ["y"], name="lsm", axis=2)
    yield "logsoftmax", model([n], [vi("x", [2, 3, 4])], [vi("y", None)]), {"x": x}, []
    n = helper.make_node("Transpose", ["x"], ["y"], name="t", perm=[2, 0, 1])
    yield "transpose", model([n], [vi("x", [2, 3, 4])], [vi("y", None)]), {"x": x}, []
    n = helper.make_node("Transpose", ["x"], ["y"], name="t")
    yield "transpose_default", model([n], [vi("x", [2, 3, 4])], [vi("y", None)]), {"x": x}, []
    # Concat on channels after two convs (views), and on an inner axis (copies).
    w1, w2 = randn(r, 3, 2, 1, 1), randn(r, 5, 2, 3, 3)
    nodes = [helper.make_node("Conv", ["x", "W1"], ["a"], name="c1"),
             helper.make_node("Conv", ["x", "W2"], ["b"], name="c2", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["ar"], name="r1"),
             helper.make_node("Concat", ["ar", "b"], ["y"], name="cat", axis=1)]
    yield "concat_channels", model(nodes, [vi("x", [1, 2, 6, 6])], [vi("y", None)],
                                   [const("W1", w1), const("W2", w2)]), {"x": randn(r, 1, 2, 6, 6)}, []
    # densenet's layers: each concatenates every feature map so far (the first Concat of one
    # input), pre-activated by a per-channel multiply-add and ReLU; the last Concat holds them
    # all and every earlier one is a view of its first channels (7 views, no copy).
    nodes, inits, feats = [helper.make_node("Conv", ["x", "W0"], ["f0"], name="stem")], \
        [const("W0", randn(r, 4, 3, 3, 3)), const("S", randn(r, 1, 10, 1, 1)),
         const("T", randn(r, 1, 10, 1, 1))], ["f0"]
    for i in range(1, 4):
        c = 4 + 2 * (i - 1)
        nodes += [helper.make_node("Concat", list(feats), [f"cat{i}"], name=f"cat{i}", axis=1),
                  helper.make_node("Slice", ["S", "zero1", f"c{i}", "one1"], [f"s{i}"], name=f"ss{i}"),
                  helper.make_node("Slice", ["T", "zero1", f"c{i}", "one1"], [f"t{i}"], name=f"st{i}"),
                  helper.make_node("Mul", [f"cat{i}", f"s{i}"], [f"m{i}"], name=f"mul{i}"),
                  helper.make_node("Add", [f"m{i}", f"t{i}"], [f"a{i}"], name=f"add{i}"),
                  helper.make_node("Relu", [f"a{i}"], [f"r{i}"], name=f"relu{i}"),
                  helper.make_node("Conv", [f"r{i}", f"W{i}"], [f"f{i}"], name=f"conv{i}",
                                   pads=[1, 1, 1, 1])]
        inits += [const(f"W{i}", randn(r, 2, c, 3, 3, scale=0.3)),
                  const(f"c{i}", np.array([c], np.int64))]
        feats.append(f"f{i}")
    nodes.append(helper.make_node("Concat", feats, ["y"], name="cat_all", axis=1))
    inits += [const("zero1", np.array([0], np.int64)), const("one1", np.array([1], np.int64))]
    yield "concat_growing", model(nodes, [vi("x", [1, 3, 7, 7])], [vi("y", None)], inits), \
        {"x": randn(r, 1, 3, 7, 7)}, ["--expect-summary", "7 views (no copy)"]
    nodes = [helper.make_node("Concat", ["x", "x2"], ["y"], name="cat", axis=-1)]
    yield "concat_inner_axis", model(nodes, [vi("x", [2, 3, 4]), vi("x2", [2, 3, 2])],
                                     [vi("y", None)]), {"x": x, "x2": randn(r, 2, 3, 2)}, []
    # The exporter's Shape -> Gather -> Unsqueeze -> Concat -> Reshape flatten.
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], name="conv"),
             helper.make_node("Shape", ["c"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
             helper.make_node("Unsqueeze", ["n", "axes"], ["n1"], name="unsq"),
             helper.make_node("Concat", ["n1", "minus1"], ["shape2"], name="cat", axis=0),
             helper.make_node("Reshape", ["c", "shape2"], ["flat"], name="reshape"),
             helper.make_node("Gemm", ["flat", "FW", "FB"], ["y"], name="fc", transB=1)]
    inits = [const("W", randn(r, 4, 3, 3, 3)), const("zero", np.int64(0)),
             const("axes", np.array([0], np.int64)), const("minus1", np.array([-1], np.int64)),
             const("FW", randn(r, 10, 4 * 4 * 4)), const("FB", randn(r, 10))]
    yield "exporter_reshape_pattern", model(nodes, [vi("x", [1, 3, 6, 6])], [vi("y", None)], inits), \
        {"x": randn(r, 1, 3, 6, 6)}, []
    nodes = [helper.make_node("Flatten", ["x"], ["f"], name="flat", axis=2),
             helper.make_node("Identity", ["f"], ["i"], name="id"),
             helper.make_node("Dropout", ["i"], ["y"], name="drop")]
    yield "flatten_identity_dropout", model(nodes, [vi("x", [2, 3, 4])], [vi("y", None)]), \
        {"x": x}, []
    # Residual block: conv -> add(skip) -> relu, and ReLU6 as Clip in both opset styles.
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c", "x"], ["s"], name="add"),
             helper.make_node("Relu", ["s"], ["y"], name="relu")]
    yield "residual_add_relu", model(nodes, [vi("x", [1, 4, 5, 5])], [vi("y", None)],
                                     [const("W", randn(r, 4, 4, 3, 3, scale=0.3)),
                                      const("B", randn(r, 4))]), {"x": randn(r, 1, 4, 5, 5)}, \
        ["--expect-summary", "1 residual adds"]
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], name="conv"),
             helper.make_node("Clip", ["c"], ["y"], name="relu6", min=0.0, max=6.0)]
    yield "clip_opset6", model(nodes, [vi("x", [1, 3, 5, 5])], [vi("y", None)],
                               [const("W", randn(r, 4, 3, 1, 1, scale=4.0))], opset=6), \
        {"x": randn(r, 1, 3, 5, 5)}, []
    nodes = [helper.make_node("Constant", [], ["lo"], name="k0", value=const("lo", np.float32(0))),
             helper.make_node("Constant", [], ["hi"], name="k1", value=const("hi", np.float32(6))),
             helper.make_node("Conv", ["x", "W"], ["c"], name="conv"),
             helper.make_node("Clip", ["c", "lo", "hi"], ["y"], name="relu6")]
    yield "clip_opset13_constants", model(nodes, [vi("x", [1, 3, 5, 5])], [vi("y", None)],
                                          [const("W", randn(r, 4, 3, 1, 1, scale=4.0))]), \
        {"x": randn(r, 1, 3, 5, 5)}, ["--expect-summary", "1 activations"]
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    yield "relu_standalone", model(nodes, [vi("x", [3, 7])], [vi("y", None)]), \
        {"x": randn(r, 3, 7)}, []
    # Symbolic batch: defaults to 1, or bound with --input-shape.
    n = helper.make_node("Conv", ["x", "W"], ["y"], name="conv")
    m = model([n], [vi("x", ["N", 3, 4, 4])], [vi("y", None)], [const("W", randn(r, 2, 3, 1, 1))])
    yield "symbolic_batch_default", m, {"x": randn(r, 1, 3, 4, 4)}, []
    yield "symbolic_batch_bound", m, {"x": randn(r, 3, 3, 4, 4)}, ["--input-shape", "x=3x3x4x4"]


def all_cases():
    yield from conv_cases()
    yield from atrous_taps_cases()
    yield from bn_cases()
    yield from inverted_residual_cases()
    yield from dwblock_cases()
    yield from pool_cases()
    yield from stem_pool_cases()
    yield from head_gap_cases()
    yield from pointwise_lanes_cases()
    yield from gelu_cases()
    yield from gemm_cases()
    yield from eltwise_cases()
    yield from misc_cases()
    m, feeds = sample_cnn.build(size=64)
    yield "sample_cnn", m, feeds, ["--expect-summary", "batch-norms into conv"]
