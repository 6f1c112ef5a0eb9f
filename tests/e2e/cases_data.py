"""Small ONNX models for the data-movement and spatial ops on run-time tensors (Gather, Slice,
Split, Expand, Tile, Pad, DepthToSpace, SpaceToDepth, Trilu, non-float Transpose/Concat,
ConvTranspose, Resize, Upsample, GlobalMaxPool) and two model patterns that use them (a
ShuffleNetV2 unit, a UNet-style decoder). Same conventions as cases.py: each case is
(name, model, feeds, extra kann-c args); references come from ONNX Runtime (kann_check.py)."""
import numpy as np
from onnx import TensorProto, helper

from cases import const, conv_case, model, randn, rng, vi

F, I64, I32 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32


def one(name, op, x_shape, seed, inits=(), extra_inputs=(), opset=13, dtype=F, feeds=None,
        outputs=("y",), **attrs):
    """A one-node model: input x (plus extra_inputs, names of inits) -> outputs."""
    r = rng(seed)
    node = helper.make_node(op, ["x", *extra_inputs], list(outputs), name=name, **attrs)
    m = model([node], [vi("x", x_shape, dtype)] + [vi(k, v.shape, _onnx_type(v))
                                                    for k, v in (feeds or {}).items()],
              [vi(o, None, dtype) for o in outputs], inits, opset)
    x = randn(r, *x_shape) if dtype == F else r.integers(-50, 50, x_shape).astype(
        np.int64 if dtype == I64 else np.int32)
    return name, m, {"x": x, **(feeds or {})}, []


def _onnx_type(v):
    return {np.dtype(np.float32): F, np.dtype(np.int64): I64,
            np.dtype(np.int32): I32}[v.dtype]


def gather_cases():
    r = rng(100)
    idx = np.array([[0, 3, -1], [2, -4, 1]], np.int64)
    # an embedding lookup: constant table, indices at run time
    node = helper.make_node("Gather", ["table", "ids"], ["y"], name="embed")
    m = model([node], [vi("ids", [2, 3], I64)], [vi("y", None)],
              [const("table", randn(r, 5, 7))])
    yield "gather_embedding", m, {"ids": idx}, []
    yield one("gather_axis1_runtime_idx", "Gather", [3, 4, 5], 101, extra_inputs=["i"],
              feeds={"i": np.array([3, 0, -2], np.int32)}, axis=1)
    yield one("gather_const_idx_axis2", "Gather", [2, 3, 6], 102, extra_inputs=["i"],
              inits=[const("i", np.array([[5, 0], [1, -1]], np.int64))], axis=-1)
    yield one("gather_int64_data", "Gather", [4, 3], 103, dtype=I64, extra_inputs=["i"],
              feeds={"i": np.array([1, -1, 0], np.int64)}, axis=0)
    # one constant index along an axis with only unit dims before it: views of the data (q and
    # k from a stacked [3, ...] tensor, the first token of [1, S, E]; k a graph output too); axis
    # 1 of [3, 2, 5] not
    g = r.standard_normal((3, 2, 5)).astype(np.float32)
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Gather", ["r", "i1"], ["q"], axis=0),
             helper.make_node("Gather", ["r", "im1"], ["k"], axis=0),
             helper.make_node("Gather", ["r", "i1"], ["c"], axis=1),
             helper.make_node("Add", ["q", "k"], ["y"]),
             helper.make_node("Gather", ["t", "i0v"], ["first"], axis=1),
             helper.make_node("Relu", ["first"], ["y2"])]
    m = model(nodes, [vi("x", [3, 2, 5]), vi("t", [1, 4, 6])],
              [vi("y", None), vi("y2", None), vi("c", None), vi("k", None)],
              [const("i1", np.array(1, np.int64)), const("im1", np.array(-1, np.int64)),
               const("i0v", np.array([0], np.int32))])
    yield "gather_views", m, {"x": g, "t": randn(r, 1, 4, 6)}, ["--expect-summary",
                                                                 "3 views (no copy)"]
    gi = np.array([[[0, 2], [1, 0]], [[2, 2], [-1, 0]]], np.int64)
    yield one("gather_elements_axis1", "GatherElements", [2, 3, 2], 104, extra_inputs=["i"],
              feeds={"i": gi}, axis=1)


def slice_split_cases():
    def ints(name, v):
        return const(name, np.array(v, np.int64))
    # contiguous ranges of [1, 6, 64, 48] are views: channels 2-4, the split's 2 + 4 channels, and
    # rows 1-2 of channel 1; a Concat of two of them copies them (in rows the streams share)
    r = rng(109)
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Slice", ["r", "s0", "e0", "a0"], ["ch"]),
             helper.make_node("Split", ["r", "sp"], ["lo", "hi"], axis=1),
             helper.make_node("Slice", ["r", "s1", "e1", "a1"], ["rows"]),
             helper.make_node("Concat", ["ch", "lo"], ["cat"], axis=1),
             helper.make_node("Neg", ["hi"], ["nhi"])]
    m = model(nodes, [vi("x", [1, 6, 64, 48])],
              [vi("cat", None), vi("nhi", None), vi("rows", None), vi("lo", None)],
              [ints("s0", [2]), ints("e0", [5]), ints("a0", [1]), ints("sp", [2, 4]),
               ints("s1", [1, 1]), ints("e1", [2, 3]), ints("a1", [1, 2])])
    yield "slice_split_views", m, {"x": randn(r, 1, 6, 64, 48)}, ["--expect-summary",
                                                                "4 views (no copy)"]
    yield one("slice_neg_steps", "Slice", [5, 6, 7], 110, extra_inputs=["s", "e", "a", "t"],
              inits=[ints("s", [-1, 1, 6]), ints("e", [-100, 5, 0]), ints("a", [0, 1, 2]),
                     ints("t", [-2, 2, -3])])
    yield one("slice_int64", "Slice", [4, 6], 111, dtype=I64, extra_inputs=["s", "e"],
              inits=[ints("s", [1, 2]), ints("e", [3, 100])])
    yield one("split_equal_axis1", "Split", [2, 6, 3], 112, outputs=("a", "b", "c"), axis=1)
    yield one("split_variable", "Split", [7, 4], 113, extra_inputs=["sp"],
              inits=[ints("sp", [2, 5])], outputs=("a", "b"))
    yield one("split_num_outputs_18", "Split", [2, 7], 114, opset=18, outputs=("a", "b", "c"),
              axis=-1, num_outputs=3)


def broadcast_cases():
    yield one("expand_bidirectional", "Expand", [3, 1, 4], 120, extra_inputs=["s"],
              inits=[const("s", np.array([2, 1, 5, 4], np.int64))])
    yield one("tile_3d", "Tile", [2, 3, 2], 121, extra_inputs=["rep"],
              inits=[const("rep", np.array([2, 1, 3], np.int64))])
    yield one("tile_int64", "Tile", [3, 2], 122, dtype=I64, extra_inputs=["rep"],
              inits=[const("rep", np.array([2, 2], np.int64))])


def pad_cases():
    pads = const("p", np.array([0, 1, 2, 0, 0, 2, 1, 1], np.int64))
    for mode in ("constant", "reflect", "edge"):
        yield one(f"pad_{mode}", "Pad", [1, 3, 4, 5], 130, extra_inputs=["p", "v"] if
                  mode == "constant" else ["p"], inits=[pads, const("v", np.float32(1.5))]
                  if mode == "constant" else [pads], mode=mode)
    yield one("pad_wrap_19", "Pad", [2, 3, 4], 131, opset=19, extra_inputs=["p"],
              inits=[const("p", np.array([1, 0, 3, 0, 2, 2], np.int64))], mode="wrap")
    yield one("pad_crop_axes_18", "Pad", [2, 5, 6], 132, opset=18, extra_inputs=["p", "", "ax"],
              inits=[const("p", np.array([-1, 2, 1, -2], np.int64)),
                     const("ax", np.array([1, 2], np.int64))])
    yield one("pad_opset2_attr", "Pad", [1, 2, 3, 3], 133, opset=2, pads=[0, 0, 1, 2, 0, 0, 2, 1],
              value=-3.0)


def layout_cases():
    for mode in ("DCR", "CRD"):
        yield one(f"depth_to_space_{mode}", "DepthToSpace", [1, 8, 3, 2], 140, blocksize=2,
                  mode=mode)
    yield one("space_to_depth", "SpaceToDepth", [2, 3, 4, 6], 141, blocksize=2)
    # maps wide enough that the copy walks the map's columns innermost, not the block's (rows
    # of 40 and 13 against 2 and 3; tiles split across streams mid-row)
    yield one("depth_to_space_wide", "DepthToSpace", [1, 12, 5, 40], 146, blocksize=2)
    yield one("depth_to_space_crd_b3", "DepthToSpace", [1, 18, 4, 13], 147, blocksize=3,
              mode="CRD")
    yield one("space_to_depth_wide", "SpaceToDepth", [1, 3, 6, 34], 148, blocksize=2)
    yield one("transpose_int64", "Transpose", [2, 3, 4], 142, dtype=I64, perm=[2, 0, 1])
    yield one("trilu_upper_k", "Trilu", [2, 4, 5], 143, extra_inputs=["k"],
              feeds={"k": np.array(1, np.int64)}, opset=14)
    yield one("trilu_lower_default", "Trilu", [5, 3], 144, opset=14, upper=0)
    r = rng(145)
    node = helper.make_node("Concat", ["a", "b"], ["y"], axis=1)
    m = model([node], [vi("a", [2, 3], I64), vi("b", [2, 2], I64)], [vi("y", None, I64)])
    yield "concat_int64", m, {"a": r.integers(-9, 9, (2, 3)), "b": r.integers(-9, 9, (2, 2))}, []
    # shape arithmetic folds; the int64 result is a constant output
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Size", ["x"], ["n"]),
             helper.make_node("Range", ["zero", "n4", "two"], ["rg"]),
             helper.make_node("Relu", ["x"], ["y"])]
    m = model(nodes, [vi("x", [2, 3, 4])], [vi("y", None), vi("s", None, I64),
                                               vi("n", None, I64), vi("rg", None, I64)],
              [const("zero", np.int64(0)), const("n4", np.int64(7)), const("two", np.int64(2))])
    yield "shape_size_range_outputs", m, {"x": randn(r, 2, 3, 4)}, []


def conv_transpose_case(name, x_shape, w_shape, seed, bias=True, opset=13, **attrs):
    r = rng(seed)
    inits = [const("W", randn(r, *w_shape, scale=0.3))]
    ins = ["x", "W"]
    if bias:
        inits.append(const("B", randn(r, w_shape[1] * attrs.get("group", 1))))
        ins.append("B")
    node = helper.make_node("ConvTranspose", ins, ["y"], name=name, **attrs)
    m = model([node], [vi("x", x_shape)], [vi("y", None)], inits, opset)
    return name, m, {"x": randn(r, *x_shape)}, []


def spatial_cases():
    yield conv_transpose_case("convt_basic", [1, 3, 5, 4], [3, 2, 3, 3], 150)
    yield conv_transpose_case("convt_stride_pad_outpad", [1, 4, 5, 6], [4, 3, 3, 3], 151,
                              strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 0])
    yield conv_transpose_case("convt_dilated_group", [1, 4, 4, 4], [4, 2, 2, 3], 152, group=2,
                              dilations=[2, 1], strides=[1, 2])
    yield conv_transpose_case("convt_same_upper", [1, 2, 3, 3], [2, 3, 3, 3], 153, bias=False,
                              strides=[2, 2], auto_pad="SAME_UPPER")
    yield conv_transpose_case("convt_output_shape", [1, 2, 3, 3], [2, 2, 3, 3], 154,
                              strides=[3, 2], output_shape=[10, 8])
    yield conv_transpose_case("convt_1d", [1, 3, 7], [3, 4, 3], 155, strides=[2])
    yield conv_transpose_case("convt_3d", [1, 2, 3, 4, 3], [2, 2, 2, 3, 2], 156,
                              strides=[1, 2, 2])
    # group-1 transposed convs as stride-1 convs, one per output phase (kernel 4 stride 2 of a
    # DCGAN, 2x2 stride 2 of a U-Net: 1x1 phases, a kernel shorter than its stride: phases of
    # bias alone, 3x3 stride 1 on Winograd: the output written straight)
    yield conv_transpose_case("convt_k4s2p1", [1, 20, 6, 7], [20, 12, 4, 4], 158, strides=[2, 2],
                              pads=[1, 1, 1, 1])
    yield conv_transpose_case("convt_k2s2_unet", [1, 16, 5, 6], [16, 8, 2, 2], 159,
                              strides=[2, 2])
    yield conv_transpose_case("convt_k1s3", [1, 3, 4, 4], [3, 5, 1, 1], 160, strides=[3, 2])
    yield conv_transpose_case("convt_k3s1_winograd", [1, 16, 9, 10], [16, 17, 3, 3], 161,
                              pads=[1, 1, 1, 1])
    yield conv_transpose_case("convt_asym_pads", [1, 5, 7, 5], [5, 6, 5, 3], 162, bias=False,
                              strides=[3, 2], pads=[3, 0, 1, 2])
    # phases all of out / stride outputs, none starting late: written side by side, turned
    # into y by one transpose (pairs of columns interleaved a vector at a time, rows of 3 one
    # by one); a depthwise one, a 1-D one, a map of rows wider than a vector
    yield conv_transpose_case("convt_k2s2_wide", [1, 8, 9, 37], [8, 5, 2, 2], 166,
                              strides=[2, 2])
    yield conv_transpose_case("convt_k3s3", [1, 4, 5, 6], [4, 3, 3, 3], 167, strides=[3, 3])
    yield conv_transpose_case("convt_depthwise_k2s2", [1, 6, 7, 20], [6, 1, 2, 2], 168, group=6,
                              strides=[2, 2])
    yield conv_transpose_case("convt_k2s2_1d", [1, 3, 40], [3, 4, 2], 169, strides=[2])
    # depthwise transposed convs (learned upsampling): each phase a depthwise conv
    yield conv_transpose_case("convt_depthwise_k4s2", [1, 6, 7, 9], [6, 1, 4, 4], 164, group=6,
                              strides=[2, 2], pads=[1, 1, 1, 1])
    yield conv_transpose_case("convt_depthwise_k3s1_1d", [1, 5, 11], [5, 1, 3], 165, group=5,
                              pads=[1, 1])
    # ConvTranspose, BatchNormalization, ReLU (a DCGAN generator's layer): the batch norm folds
    # into the weights, the ReLU into the stores
    r = rng(163)
    nodes = [helper.make_node("ConvTranspose", ["x", "W"], ["t"], strides=[2, 2],
                              pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["t", "g", "b", "mu", "var"], ["u"]),
             helper.make_node("Relu", ["u"], ["y"])]
    inits = [const("W", randn(r, 8, 6, 4, 4, scale=0.3)), const("g", randn(r, 6) * 0.5 + 1),
             const("b", randn(r, 6)), const("mu", randn(r, 6)),
             const("var", np.abs(randn(r, 6)) + 0.5)]
    yield ("convt_bn_relu", model(nodes, [vi("x", [1, 8, 4, 4])], [vi("y", None)], inits),
           {"x": randn(r, 1, 8, 4, 4)}, [])
    gm = helper.make_node("GlobalMaxPool", ["x"], ["y"])
    r = rng(157)
    yield "global_maxpool", model([gm], [vi("x", [1, 5, 4, 3])], [vi("y", None)]), \
        {"x": randn(r, 1, 5, 4, 3)}, []


def resize_case(name, x_shape, seed, scales=None, sizes=None, roi=None, opset=13, **attrs):
    r = rng(seed)
    inits, ins = [], ["x"]
    ins.append("roi" if roi is not None else "")
    if roi is not None:
        inits.append(const("roi", np.array(roi, np.float32)))
    if scales is not None:
        ins.append("scales")
        inits.append(const("scales", np.array(scales, np.float32)))
    else:
        ins += ["", "sizes"]
        inits.append(const("sizes", np.array(sizes, np.int64)))
    if opset == 10:
        ins = ["x", "scales"]
    node = helper.make_node("Resize", ins, ["y"], name=name, **attrs)
    m = model([node], [vi("x", x_shape)], [vi("y", None)], inits, opset)
    return name, m, {"x": randn(r, *x_shape)}, []


def resize_cases():
    up, down = [1, 1, 2, 1.5], [1, 1, 0.6, 0.8]
    yield resize_case("resize_nearest_up", [1, 2, 4, 4], 160, scales=up)
    yield resize_case("resize_nearest_down_ceil", [1, 2, 5, 7], 161, scales=down,
                      nearest_mode="ceil")
    yield resize_case("resize_nearest_align_floor", [1, 1, 4, 5], 162, sizes=[1, 1, 7, 8],
                      coordinate_transformation_mode="align_corners", nearest_mode="floor")
    yield resize_case("resize_nearest_tf_half", [1, 1, 4, 4], 163, sizes=[1, 1, 3, 2],
                      coordinate_transformation_mode="tf_half_pixel_for_nn")
    yield resize_case("resize_linear_up", [1, 3, 4, 5], 164, scales=up, mode="linear")
    yield resize_case("resize_linear_down", [1, 2, 6, 7], 165, scales=down, mode="linear")
    yield resize_case("resize_linear_align", [1, 1, 4, 4], 166, sizes=[1, 1, 7, 3], mode="linear",
                      coordinate_transformation_mode="align_corners")
    yield resize_case("resize_linear_pytorch", [1, 1, 5, 4], 167, sizes=[1, 1, 1, 7],
                      mode="linear", coordinate_transformation_mode="pytorch_half_pixel")
    yield resize_case("resize_linear_asym", [2, 1, 3, 4], 168, scales=[1, 1, 3, 2],
                      mode="linear", coordinate_transformation_mode="asymmetric")
    yield resize_case("resize_cubic_up", [1, 2, 4, 4], 169, scales=up, mode="cubic")
    yield resize_case("resize_cubic_exclude", [1, 1, 5, 6], 170, scales=down, mode="cubic",
                      cubic_coeff_a=-0.5, exclude_outside=1)
    yield resize_case("resize_crop_and_resize", [1, 1, 5, 5], 171, sizes=[1, 1, 4, 3],
                      roi=[0, 0, 0.2, -0.3, 1, 1, 0.9, 1.2], mode="linear",
                      coordinate_transformation_mode="tf_crop_and_resize",
                      extrapolation_value=7.0)
    yield resize_case("resize_3d_linear", [2, 3, 6], 172, scales=[1, 1, 1.5], mode="linear")
    yield resize_case("resize_opset10_nearest", [1, 1, 3, 4], 173, scales=[1, 1, 2, 3],
                      opset=10)
    r = rng(174)
    up_node = helper.make_node("Upsample", ["x", "s"], ["y"], mode="linear")
    m = model([up_node], [vi("x", [1, 2, 3, 3])], [vi("y", None)],
              [const("s", np.array([1, 1, 2, 2], np.float32))], opset=9)
    yield "upsample9_linear", m, {"x": randn(r, 1, 2, 3, 3)}, []


def shufflenet_unit():
    """A ShuffleNetV2 unit: channel split, a 1x1-dw3x3-1x1 branch, concat, channel shuffle."""
    r = rng(180)
    c, half, h = 8, 4, 6
    inits = [const("sp", np.array([half, half], np.int64)),
             const("w1", randn(r, half, half, 1, 1, scale=0.4)),
             const("wd", randn(r, half, 1, 3, 3, scale=0.4)),
             const("w2", randn(r, half, half, 1, 1, scale=0.4)),
             const("s5", np.array([1, 2, half, h, h], np.int64)),
             const("s4", np.array([1, c, h, h], np.int64))]
    nodes = [helper.make_node("Split", ["x", "sp"], ["a", "b"], axis=1),
             helper.make_node("Conv", ["b", "w1"], ["b1"]),
             helper.make_node("Relu", ["b1"], ["b2"]),
             helper.make_node("Conv", ["b2", "wd"], ["b3"], group=half, pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["b3", "w2"], ["b4"]),
             helper.make_node("Relu", ["b4"], ["b5"]),
             helper.make_node("Concat", ["a", "b5"], ["cat"], axis=1),
             helper.make_node("Reshape", ["cat", "s5"], ["r5"]),
             helper.make_node("Transpose", ["r5"], ["t5"], perm=[0, 2, 1, 3, 4]),
             helper.make_node("Reshape", ["t5", "s4"], ["y"])]
    m = model(nodes, [vi("x", [1, c, h, h])], [vi("y", None)], inits)
    return "shufflenet_unit", m, {"x": randn(r, 1, c, h, h)}, []


def unet_block():
    """A UNet-style decoder step: pool down, conv, upsample back (ConvTranspose and Resize),
    concat the skip connection, conv."""
    r = rng(190)
    inits = [const("w1", randn(r, 6, 3, 3, 3, scale=0.3)),
             const("wt", randn(r, 6, 4, 2, 2, scale=0.3)),
             const("sc", np.array([1, 1, 2, 2], np.float32)),
             const("w2", randn(r, 5, 13, 3, 3, scale=0.3))]
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("ConvTranspose", ["r1", "wt"], ["up"], strides=[2, 2]),
             helper.make_node("Resize", ["r1", "", "sc"], ["rs"], mode="nearest"),
             helper.make_node("Slice", ["rs", "st", "en", "ax"], ["rs3"]),
             helper.make_node("Concat", ["x", "up", "rs3"], ["cat"], axis=1),
             helper.make_node("Conv", ["cat", "w2"], ["y"], pads=[1, 1, 1, 1])]
    inits += [const("st", np.array([0], np.int64)), const("en", np.array([6], np.int64)),
              const("ax", np.array([1], np.int64))]
    m = model(nodes, [vi("x", [1, 3, 8, 8])], [vi("y", None)], inits)
    return "unet_block", m, {"x": randn(r, 1, 3, 8, 8)}, []


def index_cases():
    r = rng(200)
    node = helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=1, reduction="add")
    m = model([node], [vi("x", [3, 5]), vi("i", [3, 2], I64), vi("u", [3, 2])], [vi("y", None)],
              opset=16)
    yield "scatter_elements_add_dup", m, {"x": randn(r, 3, 5), "u": randn(r, 3, 2),
                                          "i": np.array([[1, 1], [0, -1], [4, 2]], np.int64)}, []
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"])
    m = model([node], [vi("x", [4, 3, 2]), vi("i", [2, 1], I64), vi("u", [2, 3, 2])],
              [vi("y", None)], opset=16)
    yield "scatter_nd_rows", m, {"x": randn(r, 4, 3, 2), "u": randn(r, 2, 3, 2),
                                 "i": np.array([[2], [-4]], np.int64)}, []
    node = helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=1)
    m = model([node], [vi("x", [2, 3, 4]), vi("i", [2, 2, 1], I64)], [vi("y", None)])
    yield "gather_nd_batch", m, {"x": randn(r, 2, 3, 4),
                                 "i": np.array([[[2], [0]], [[1], [-1]]], np.int64)}, []


def volume_cases():
    r = rng(210)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 0, 1, 1, 0, 1],
                              strides=[1, 2, 1], group=2),
             helper.make_node("Relu", ["c"], ["y"])]
    m = model(nodes, [vi("x", [1, 4, 4, 5, 3])], [vi("y", None)],
              [const("w", randn(r, 6, 2, 3, 2, 3, scale=0.3)), const("b", randn(r, 6))])
    yield "conv3d_groups_relu", m, {"x": randn(r, 1, 4, 4, 5, 3)}, []
    # group-1 3-D convs go as 2-D convs over depth slices: 3x3 at stride 1 on Winograd (8 x 3
    # channels), others on the packed kernel; the input gathered depth-major with its padding
    # (asymmetric, past the kernel, or cropped where the windows stop short), the output turned
    # back unless it is a single slice or channel
    yield conv_case("conv3d_winograd", [1, 8, 4, 9, 10], [16, 8, 3, 3, 3], 213,
                    pads=[1, 1, 1, 1, 1, 1])
    yield conv_case("conv3d_packed_odd", [1, 5, 5, 7, 6], [7, 5, 3, 3, 3], 214,
                    pads=[1, 1, 1, 1, 1, 1])
    yield conv_case("conv3d_stem_nobias", [1, 3, 4, 15, 14], [6, 3, 3, 7, 7], 215, bias=False,
                    strides=[1, 2, 2], pads=[1, 3, 3, 1, 3, 3])
    yield conv_case("conv3d_pointwise_stride2", [1, 6, 5, 9, 9], [10, 6, 1, 1, 1], 216,
                    strides=[2, 2, 2])
    yield conv_case("conv3d_asym_dilated", [1, 4, 7, 8, 9], [5, 4, 2, 3, 2], 217,
                    strides=[2, 1, 2], dilations=[1, 2, 1], pads=[2, 1, 0, 0, 2, 1])
    yield conv_case("conv3d_one_slice", [1, 4, 3, 6, 6], [9, 4, 3, 3, 3], 218, pads=[0, 1, 1, 0, 1, 1])
    yield conv_case("conv3d_one_channel", [1, 3, 5, 6, 6], [1, 3, 3, 3, 3], 219, pads=[1, 1, 1, 1, 1, 1])
    # one output slice reading the first of two input slices, no padding: gathered all the same
    # (x's channel planes lie two slices apart)
    yield conv_case("conv3d_first_slice_only", [1, 6, 2, 5, 5], [4, 6, 1, 3, 3], 222,
                    strides=[2, 1, 1])
    yield conv_case("conv3d_groups_packed", [1, 8, 4, 6, 5], [16, 2, 3, 3, 3], 223, group=4,
                    pads=[1, 1, 1, 1, 1, 1], strides=[1, 2, 1])
    yield conv_case("conv3d_groups_winograd", [1, 32, 3, 8, 8], [32, 16, 3, 3, 3], 224, group=2,
                    pads=[1, 1, 1, 1, 1, 1])
    # depthwise 3-D convs (X3D's): per output slice a depthwise 2-D conv for each depth tap,
    # each summing onto the one before; a depth of one tap; a channel multiplier of 2 stays on
    # conv_nd
    r = rng(228)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], group=12, strides=[1, 2, 2],
                              pads=[1, 1, 1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"])]
    m = model(nodes, [vi("x", [1, 12, 5, 9, 8])], [vi("y", None)],
              [const("w", randn(r, 12, 1, 3, 3, 3, scale=0.3)), const("b", randn(r, 12))])
    yield "conv3d_depthwise_relu", m, {"x": randn(r, 1, 12, 5, 9, 8)}, []
    yield conv_case("conv3d_depthwise_one_tap", [1, 6, 3, 7, 7], [6, 1, 1, 3, 3], 229, group=6,
                    pads=[0, 1, 1, 0, 1, 1])
    yield conv_case("conv3d_depthwise_multiplier", [1, 4, 3, 6, 6], [8, 1, 3, 3, 3], 230,
                    group=4, pads=[1, 1, 1, 1, 1, 1])
    yield conv_case("conv3d_depth_dilated", [1, 3, 7, 5, 5], [4, 3, 3, 3, 3], 220,
                    dilations=[2, 1, 1], pads=[2, 1, 1, 2, 1, 1])
    r = rng(221)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1, 1, 1]),
             helper.make_node("Add", ["c", "x"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    m = model(nodes, [vi("x", [1, 16, 4, 6, 7])], [vi("y", None)],
              [const("w", randn(r, 16, 16, 3, 3, 3, scale=0.1)), const("b", randn(r, 16))])
    yield "conv3d_residual_relu", m, {"x": randn(r, 1, 16, 4, 6, 7)}, []
    yield one("avgpool3d_pads", "AveragePool", [1, 2, 5, 4, 6], 211, kernel_shape=[2, 3, 2],
              strides=[2, 1, 2], pads=[1, 1, 0, 0, 1, 1], count_include_pad=1)
    yield one("maxpool3d_ceil", "MaxPool", [1, 2, 5, 5, 4], 212, kernel_shape=[3, 2, 2],
              strides=[2, 2, 2], ceil_mode=1)
    # 3-D pools as two 2-D ones (rows and columns, then depth): the average's divisor of a
    # clipped window (pads not counted, ceil mode's overhang), dilations
    yield one("avgpool3d_exclude_pad_ceil", "AveragePool", [1, 3, 6, 7, 5], 225,
              kernel_shape=[3, 3, 2], strides=[2, 2, 2], pads=[1, 1, 0, 1, 0, 1], ceil_mode=1)
    yield one("avgpool3d_include_pad_ceil", "AveragePool", [1, 2, 5, 6, 7], 227,
              kernel_shape=[2, 3, 3], strides=[2, 2, 2], pads=[1, 1, 1, 0, 0, 1], ceil_mode=1,
              count_include_pad=1)
    yield one("maxpool3d_dilated", "MaxPool", [1, 2, 7, 8, 9], 226, kernel_shape=[2, 3, 2],
              strides=[1, 2, 2], dilations=[2, 1, 2], pads=[1, 1, 1, 1, 1, 0])
    node = helper.make_node("MaxPool", ["x"], ["y", "ind"], kernel_shape=[3, 3], strides=[2, 2],
                            pads=[1, 1, 1, 1])
    m = model([node], [vi("x", [2, 3, 7, 6])], [vi("y", None), vi("ind", None, I64)])
    yield "maxpool_indices", m, {"x": randn(r, 2, 3, 7, 6)}, []


def all_cases():
    yield from gather_cases()
    yield from slice_split_cases()
    yield from broadcast_cases()
    yield from pad_cases()
    yield from layout_cases()
    yield from spatial_cases()
    yield from resize_cases()
    yield shufflenet_unit()
    yield unet_block()
    yield from index_cases()
    yield from volume_cases()
