"""Elementwise, reduce, normalization, pooling and movement rules, and the engine's accounting:
params, byte classes, real dtypes, exact integers, constant folding, uncosted ops.

Per-element conventions are those written in each rule module's docstring
(analyzer/counting/rules/onnx/*.py); DESIGN.md "Cost semantics" and Principles 3, 4, 11.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import analyzer
from analyzer.counting.cost import COUNT_FIELDS, Cost
from analyzer.ir.graph import TensorSpec
from onnx_builders import F32, analyze, cost_of, graph, ints, node_of, one_node, weight

BOOL, I64, F16, INT4 = TensorProto.BOOL, TensorProto.INT64, TensorProto.FLOAT16, TensorProto.INT4

# ----------------------------------------------------------------------------- elementwise

# (op, inputs, attrs/opset, vector_flops, transcendentals)
ELEMENTWISE = [
    ("Relu", [(2, 3, 4)], {}, 24, 0),                 # max(x,0): 1 * 2*3*4 = 24
    ("LeakyRelu", [(10,)], {}, 20, 0),                # mul + select: 2 * 10 = 20
    ("HardSwish", [(10,)], {}, 50, 0),                # hardsigmoid 4 + mul 1: 5 * 10 = 50
    ("Exp", [(3, 5)], {}, 0, 15),                     # 1 transcendental * 15
    ("Sigmoid", [(10,)], {}, 20, 10),                 # exp (T) + add + divide: (2, 1) * 10
    ("Mish", [(4,)], {"opset": 18}, 8, 12),           # (2, 3) * 4
    ("Add", [(2, 3, 4), (4,)], {}, 24, 0),            # broadcast: 1 per output element = 24
    ("Pow", [(6,), (6,)], {}, 0, 6),                  # exp(y log x): 1 transcendental * 6
    ("Sum", [(5,), (5,), (5,)], {}, 10, 0),           # variadic: (3-1) adds * 5 = 10
    ("Max", [(5,), (5,)], {}, 5, 0),                  # 1 compare * 5
    ("Mean", [(5,), (5,), (5,)], {}, 15, 0),          # (3-1) adds + 1 divide: 3 * 5 = 15
    ("Where", [((4,), BOOL), (4,), (4,)], {}, 4, 0),  # one select * 4
    ("Gelu", [(10,)], {"opset": 20}, 40, 10),         # erf form: (4, 1) * 10
    ("Gelu", [(10,)], {"opset": 20, "approximate": "tanh"}, 80, 10),  # tanh form: (8, 1) * 10
    ("Clip", [(10,), np.array(0, np.float32), np.array(6, np.float32)], {}, 20, 0),  # 2 bounds * 10
    ("Clip", [(10,), np.array(0, np.float32)], {}, 10, 0),  # min only: 1 * 10
    ("Cast", [(10,)], {"to": TensorProto.FLOAT16}, 0, 0),    # conversion is not arithmetic
]


@pytest.mark.parametrize("op, args, kw, vec, trans", ELEMENTWISE,
                         ids=[f"{e[0]}{i}" for i, e in enumerate(ELEMENTWISE)])
def test_elementwise_per_element_convention(op, args, kw, vec, trans):
    c = cost_of(op, *args, **kw)
    assert (c.mac_flops, c.vector_flops, c.transcendentals) == (0, vec, trans)


def test_prelu_slope_is_a_param():
    c = cost_of("PRelu", (2, 3), weight(3))
    assert c.vector_flops == 2 * 6  # mul + select per element: 2 * 2*3 = 12
    assert c.params == 3
    assert c.weight_bytes == 3 * 4  # 12


def test_cast_bytes_use_both_dtypes():
    c = cost_of("Cast", (10,), to=TensorProto.FLOAT16)
    assert c.activation_bytes_read == 10 * 4  # float32 in: 40
    assert c.activation_bytes_written == 10 * 2  # float16 out: 20


def test_dropout_is_an_identity_at_inference():
    c = cost_of("Dropout", (10,))
    assert c.flops == 0
    assert c.activation_bytes_read == 0 and c.activation_bytes_written == 0


# ----------------------------------------------------------------------------- reduce


@pytest.mark.parametrize("op, args, kw, vec, trans", [
    ("ReduceSum", [(4, 5), ints(1)], {"keepdims": 0}, 16, 0),          # 20 - 4 = 16 adds
    ("ReduceMean", [(4, 5)], {"axes": [1], "keepdims": 0}, 20, 0),     # 16 adds + 4 divides
    ("ReduceMax", [(3, 4)], {"keepdims": 0}, 11, 0),                   # all axes: 12 - 1 = 11
    ("ReduceL2", [(4, 5)], {"axes": [1]}, 36, 4),                      # 16 adds + 20 squares; 4 sqrt
    ("ReduceLogSumExp", [(4, 5)], {"axes": [1]}, 16, 24),              # 16 adds; 20 exp + 4 log
    ("ReduceSumSquare", [(4, 5)], {"axes": [0]}, 35, 0),               # (20-5) adds + 20 squares
    ("ArgMax", [(4, 5)], {"axis": 1}, 16, 0),                          # 20 - 4 compare-selects
], ids=["sum", "mean", "max_all", "l2", "logsumexp", "sumsquare", "argmax"])
def test_reduce(op, args, kw, vec, trans):
    c = cost_of(op, *args, **kw)
    assert (c.mac_flops, c.vector_flops, c.transcendentals) == (0, vec, trans)
    assert c.params == 0  # an axes input is shape-like, never a param


def test_argmax_writes_int64():
    c = cost_of("ArgMax", (4, 5), axis=1)  # -> int64[4,1]
    assert c.activation_bytes_read == 20 * 4  # 80
    assert c.activation_bytes_written == 4 * 8  # 32


# ----------------------------------------------------------------------------- normalization


def test_layer_norm_last_axis():
    # x [2,3,8], axis -1: n = 48 elements, 6 rows; with bias: 7 per element + 4 per row, 1 sqrt per row
    c = cost_of("LayerNormalization", (2, 3, 8), weight(8), weight(8), axis=-1)
    assert c.vector_flops == 7 * 48 + 4 * 6  # 336 + 24 = 360
    assert c.transcendentals == 6
    assert c.params == 16  # scale 8 + bias 8


def test_layer_norm_without_bias_and_wider_axis():
    # axis 1 on [2,3,8]: 2 rows of 24; no bias: 6 per element
    c = cost_of("LayerNormalization", (2, 3, 8), weight(3, 8), axis=1)
    assert c.vector_flops == 6 * 48 + 4 * 2  # 288 + 8 = 296
    assert c.transcendentals == 2


def test_batch_norm_inference():
    # x [2,4,3,3]: n = 72, c = 4: 4 per element + 2 per channel, 1 sqrt per channel
    c = cost_of("BatchNormalization", (2, 4, 3, 3), weight(4), weight(4), weight(4), weight(4))
    assert c.vector_flops == 4 * 72 + 2 * 4  # 288 + 8 = 296
    assert c.transcendentals == 4
    assert c.params == 16  # scale, bias, mean, var: 4*4


def test_instance_norm():
    # x [2,3,4,4]: n = 96, groups N*C = 6
    c = cost_of("InstanceNormalization", (2, 3, 4, 4), weight(3), weight(3))
    assert c.vector_flops == 7 * 96 + 4 * 6  # 672 + 24 = 696
    assert c.transcendentals == 6


def test_group_norm():
    # x [2,6,4], 3 groups: n = 48, groups N*G = 6 (opset 21: scale and bias are per channel).
    # ONNX has no shape inference for this function op, so the model declares the output.
    m = graph([helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], name="n", num_groups=3)],
              {"x": (2, 6, 4)}, {"y": ((2, 6, 4), F32)}, {"s": weight(6), "b": weight(6)}, opset=21)
    c = analyze(m).node("n").cost
    assert c.vector_flops == 7 * 48 + 4 * 6  # 336 + 24 = 360
    assert c.transcendentals == 6


def test_softmax_and_log_softmax():
    s = cost_of("Softmax", (2, 5), axis=-1)
    assert (s.vector_flops, s.transcendentals) == (4 * 10, 10)  # max, sub, sum, div = 40; 10 exp
    ls = cost_of("LogSoftmax", (2, 5), axis=-1)
    assert (ls.vector_flops, ls.transcendentals) == (4 * 10, 10 + 2)  # 40; 10 exp + 2 row logs


# ----------------------------------------------------------------------------- pooling


@pytest.mark.parametrize("op, shape, kw, vec, trans", [
    # [1,2,6,6], k2 s2 -> [1,2,3,3] = 18 outputs, 3 compares each = 54
    ("MaxPool", (1, 2, 6, 6), {"kernel_shape": [2, 2], "strides": [2, 2]}, 54, 0),
    # k3 s1 pads 1 -> 72 outputs, 8 adds + 1 divide each (padded taps included) = 648
    ("AveragePool", (1, 2, 6, 6), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, 648, 0),
    # [1,1,4,4], k2 s2, p 2 -> 4 outputs: (2*4 - 1) vector = 28; (4 + 1) transcendental = 20
    ("LpPool", (1, 1, 4, 4), {"kernel_shape": [2, 2], "strides": [2, 2]}, 28, 20),
    ("GlobalAveragePool", (1, 4, 5, 5), {}, 100, 0),  # (100-4) adds + 4 divides = 100
    ("GlobalMaxPool", (1, 4, 5, 5), {}, 96, 0),       # 100 - 4 compares = 96
], ids=["max", "avg", "lp", "gap", "gmp"])
def test_pooling(op, shape, kw, vec, trans):
    c = cost_of(op, shape, **kw)
    assert (c.mac_flops, c.vector_flops, c.transcendentals) == (0, vec, trans)


# ----------------------------------------------------------------------------- movement


def test_transpose_and_concat_copy_bytes():
    t = cost_of("Transpose", (2, 3, 4), perm=[2, 0, 1])
    assert t.flops == 0
    assert (t.activation_bytes_read, t.activation_bytes_written) == (96, 96)  # 24 floats in and out
    c = cost_of("Concat", (2, 3), (2, 5), axis=1)
    assert (c.activation_bytes_read, c.activation_bytes_written) == (24 + 40, 64)  # [2,8] out


@pytest.mark.parametrize("op, args, kw", [
    ("Reshape", [(2, 6), ints(3, 4)], {}),
    ("Flatten", [(2, 3, 4)], {"axis": 1}),
    ("Squeeze", [(2, 1, 3), ints(1)], {}),
    ("Unsqueeze", [(2, 3), ints(0)], {}),
    ("Identity", [(7,)], {}),
])
def test_views_move_no_bytes(op, args, kw):
    c = cost_of(op, *args, **kw)
    assert c == Cost()  # no flops, no bytes, and the shape argument is no param


def test_slice_reads_only_what_it_keeps():
    # x [10,8], rows 2..6 -> [4,8]: reads 4*8*4 = 128 bytes, not the whole 320
    nc = node_of("Slice", (10, 8), ints(2), ints(6), ints(0))
    assert nc.outputs == ("float32[4,8]",)
    c = nc.cost
    assert c.activation_bytes_read == 128
    assert c.activation_bytes_written == 128
    assert c.params == 0 and c.weight_bytes == 0  # starts/ends/axes are shape-like


def test_strided_slice_reads_kept_elements():
    # x [10], 0..10 step 2 -> 5 elements: 20 bytes
    c = cost_of("Slice", (10,), ints(0), ints(10), ints(0), ints(2))
    assert (c.activation_bytes_read, c.activation_bytes_written) == (20, 20)


def test_gather_from_constant_embedding_table():
    # table [1000,16] float32 (a weight), ids int64 [2,5] -> [2,5,16]
    c = cost_of("Gather", weight(1000, 16), ((2, 5), I64))
    assert c.params == 1000 * 16  # the whole table is a parameter: 16000
    assert c.weight_bytes == 2 * 5 * 16 * 4  # only the gathered rows are read: 640
    assert c.activation_bytes_read == 2 * 5 * 8  # the int64 ids: 80
    assert c.activation_bytes_written == 640


@pytest.mark.parametrize("op, args, read, written", [
    ("Expand", [(3, 1), ints(2, 3, 4)], 3 * 4, 24 * 4),   # [3,1] -> [2,3,4]
    ("Tile", [(2, 3), ints(2, 2)], 6 * 4, 24 * 4),        # [2,3] -> [4,6]
    ("Pad", [(2, 3), ints(1, 1, 1, 1)], 6 * 4, 20 * 4),   # [2,3] -> [4,5]
])
def test_shape_like_inputs_are_not_params(op, args, read, written):
    c = cost_of(op, *args)
    assert c.params == 0 and c.weight_bytes == 0
    assert (c.activation_bytes_read, c.activation_bytes_written) == (read, written)


def test_split_sizes_input_is_not_a_param():
    # x [6,4] split [2,4] on axis 0 -> [2,4] and [4,4]; the sizes steer the shape only
    c = cost_of("Split", (6, 4), ints(2, 4), n_out=2, axis=0)
    assert (c.activation_bytes_read, c.activation_bytes_written) == (96, 32 + 64)  # 24 floats in and out
    assert c.params == 0 and c.weight_bytes == 0


def test_resize_linear():
    # [1,1,4,4] -> scales (1,1,2,2) -> [1,1,8,8]: 2 resized dims, 2^2-1 = 3 lerps of 3 ops each
    c = cost_of("Resize", (1, 1, 4, 4), "", np.array([1, 1, 2, 2], np.float32), mode="linear")
    assert c.vector_flops == 64 * 3 * 3  # 576
    assert c.params == 0  # scales are shape-like


def test_shape_of_dynamic_input_reads_no_data():
    # not folded (the batch dim is unknown): reads only metadata, writes int64[2]
    nc = node_of("Shape", ("batch", 5))
    assert nc.status == "costed"
    assert nc.cost.activation_bytes_read == 0
    assert nc.cost.activation_bytes_written == 2 * 8  # 16


# ----------------------------------------------------------------------------- params


def test_shared_weight_counted_once_but_read_twice():
    n = helper.make_node
    m = graph([n("MatMul", ["x", "W"], ["h"], name="mm1"), n("MatMul", ["h", "W"], ["y"], name="mm2")],
              {"x": (2, 4)}, ["y"], {"W": weight(4, 4)})
    r = analyze(m)
    assert r.totals.params == 16  # 4*4, once
    assert r.node("mm1").cost.params == 16 and r.node("mm2").cost.params == 0
    assert r.totals.weight_bytes == 2 * 16 * 4  # traffic: read by both nodes = 128


def test_constant_of_shape_output_is_a_param():
    n = helper.make_node
    m = graph([n("ConstantOfShape", ["shp"], ["c"], name="cos",
                 value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
               n("Add", ["x", "c"], ["y"], name="add")],
              {"x": (3, 4)}, ["y"], {"shp": ints(3, 4)})
    r = analyze(m)
    assert r.node("cos").status == "folded"
    assert r.totals.params == 3 * 4  # the [3,4] constant; the int64 shape [2] is not a param: 12
    assert r.node("add").cost.weight_bytes == 12 * 4  # 48
    assert r.node("add").cost.activation_bytes_read == 12 * 4  # 48


def test_reshape_shape_initializer_is_not_a_param():
    r = analyze(one_node("Reshape", (2, 6), ints(3, 4)))
    assert r.totals.params == 0
    assert r.totals.weight_bytes == 0


def test_constant_node_scalar_consumed_by_mul_is_a_param():
    n = helper.make_node
    m = graph([n("Constant", [], ["k"], name="k", value=helper.make_tensor("v", TensorProto.FLOAT, [], [2.0])),
               n("Mul", ["x", "k"], ["y"], name="mul")], {"x": (3,)}, ["y"])
    r = analyze(m)
    assert r.node("k").status == "folded" and r.node("k").cost.flops == 0
    assert r.totals.params == 1
    assert r.node("mul").cost.weight_bytes == 4  # one float32
    assert r.node("mul").cost.vector_flops == 3


# ----------------------------------------------------------------------------- byte classes


def test_weight_vs_activation_bytes():
    c = cost_of("Add", (2, 3), weight(3))
    assert c.weight_bytes == 3 * 4  # 12
    assert c.activation_bytes_read == 6 * 4  # 24
    assert c.activation_bytes_written == 6 * 4  # 24
    assert c.bytes_moved == 12 + 24 + 24


# ----------------------------------------------------------------------------- dtypes


def test_fp16_halves_bytes():
    c32 = cost_of("MatMul", (4, 5), (5, 6))
    nc16 = node_of("MatMul", ((4, 5), F16), ((5, 6), F16))
    c16 = nc16.cost
    assert c32.activation_bytes_read == (20 + 30) * 4  # 200
    assert c16.activation_bytes_read == (20 + 30) * 2  # 100
    assert c16.activation_bytes_written == 24 * 2  # 48
    assert c16.mac_flops == c32.mac_flops == 2 * 4 * 6 * 5  # 240: the dtype does not change counts
    assert nc16.mac_dtype == "float16"


def test_int4_is_packed():
    # an int4 [10] input cast to float32: 10 * 4 bits = 40 bits = 5 bytes read
    c = cost_of("Cast", ((10,), INT4), opset=21, to=TensorProto.FLOAT)
    assert c.activation_bytes_read == 5
    assert c.activation_bytes_written == 40


@pytest.mark.parametrize("dtype, n, nbytes", [
    ("int4", 10, 5),           # 40 bits
    ("int4", 9, 5),            # 36 bits, rounded up to whole bytes
    ("float8e4m3fn", 10, 10),
    ("bfloat16", 10, 20),
    ("bool", 10, 10),
    ("float64", 3, 24),
])
def test_tensor_spec_nbytes(dtype, n, nbytes):
    assert TensorSpec((n,), dtype).nbytes() == nbytes


# ----------------------------------------------------------------------------- exact integers


def test_counts_stay_exact_beyond_float_and_int64():
    m, k, n = 3_000_017, 2_999_999, 3_000_029
    c = cost_of("MatMul", (m, k), (k, n))
    expected = 2 * m * n * k  # ~5.4e19 > 2**64: exact only as a Python int
    assert expected > 2 ** 64
    assert type(c.mac_flops) is int and c.mac_flops == expected
    assert int(float(expected)) != expected  # a float would have lost the low bits
    assert c.activation_bytes_written == m * n * 4
    # the machine form carries the exact value too
    r = analyze(one_node("MatMul", (m, k), (k, n)))
    assert json.loads(r.to_json())["totals"]["mac_flops"] == expected


def test_mac_flops_above_1e16_exact():
    m, k, n = 100_003, 100_019, 1_000_033
    c = cost_of("MatMul", (m, k), (k, n))
    assert c.mac_flops == 2 * m * n * k  # 2*100003*1000033*100019 ~ 2.0e16
    assert c.mac_flops > 1e16 and c.mac_flops > 2 ** 53


# ----------------------------------------------------------------------------- folding


def _shape_chain_model(via_reduce_prod: bool):
    """Reshape(x, shape computed from Shape(x)) -> MatMul. x [2,3,4] -> [2,12] -> [2,5]."""
    n = helper.make_node
    if via_reduce_prod:  # ONNX data propagation cannot see through ReduceProd; folding can
        chain = [n("Shape", ["x"], ["s"], name="shape"),
                 n("Slice", ["s", "one", "three"], ["tail"], name="slice"),
                 n("ReduceProd", ["tail"], ["p"], name="prod", keepdims=1),
                 n("Concat", ["minus1", "p"], ["c"], name="concat", axis=0)]
    else:
        chain = [n("Shape", ["x"], ["s"], name="shape"),
                 n("Gather", ["s", "zero"], ["g"], name="gather", axis=0),
                 n("Unsqueeze", ["g", "axes0"], ["u"], name="unsqueeze"),
                 n("Concat", ["u", "minus1"], ["c"], name="concat", axis=0)]
    nodes = chain + [n("Reshape", ["x", "c"], ["r"], name="reshape"),
                     n("MatMul", ["r", "W"], ["y"], name="mm")]
    inits = {"zero": np.array(0, np.int64), "axes0": ints(0), "minus1": ints(-1),
             "one": ints(1), "three": ints(3), "W": weight(12, 5)}
    return graph(nodes, {"x": (2, 3, 4)}, ["y"], inits), [c.name for c in chain]


@pytest.mark.parametrize("via_reduce_prod", [False, True], ids=["gather_chain", "reduceprod_chain"])
def test_shape_chain_is_folded(via_reduce_prod):
    m, chain = _shape_chain_model(via_reduce_prod)
    r = analyze(m)
    for name in chain:
        nc = r.node(name)
        assert nc.status == "folded", name
        assert nc.cost == Cost(), name
    assert r.node("reshape").outputs == ("float32[2,12]",)
    assert r.node("reshape").status == "costed"
    assert r.node("mm").cost.mac_flops == 2 * 2 * 5 * 12  # 2*m*n*k = 240
    assert r.totals.params == 12 * 5  # only W; the chain's int64 constants are shape arithmetic: 60
    assert r.coverage.folded == len(chain)
    assert r.coverage.nodes == len(chain) + 2


# ----------------------------------------------------------------------------- uncosted


def _custom_op_model():
    n = helper.make_node
    nodes = [n("Foo", ["x", "w"], ["t"], name="foo", domain="my.domain"),
             n("Relu", ["t"], ["y"], name="relu")]
    return graph(nodes, {"x": (2, 3)}, ["y"], {"w": weight(3)},
                 value_info=[helper.make_tensor_value_info("t", F32, [2, 3])],
                 domains={"my.domain": 1})


def test_op_without_rule_is_uncosted_but_bytes_counted():
    r = analyze(_custom_op_model())
    foo = r.node("foo")
    assert foo.status == "uncosted"
    assert foo.domain == "my.domain"
    assert foo.cost.flops == 0
    assert foo.cost.params == 3  # its constant input is still a parameter
    assert foo.cost.weight_bytes == 3 * 4  # 12
    assert foo.cost.activation_bytes_read == 6 * 4  # x: 24
    assert foo.cost.activation_bytes_written == 6 * 4  # t: 24
    assert r.coverage.uncosted == ("foo",)
    assert r.coverage.costed == 1 and r.coverage.nodes == 2
    assert "UNCOSTED" in r.coverage.line() and "my.domain::Foo" in r.coverage.line()
    d = r.to_dict()
    assert d["coverage"]["uncosted"] == ["foo"]


def test_require_full_coverage():
    r = analyze(_custom_op_model())
    with pytest.raises(analyzer.CheckFailed, match="foo") as e:
        r.require_full_coverage()
    assert e.value.exit_code == 1
    analyze(one_node("Relu", (3,))).require_full_coverage()  # fully costed: no error


# ----------------------------------------------------------------------------- fold <-> infer rounds

def _refold_model():
    h, T, nh = helper, TensorProto, numpy_helper
    nodes = [
     h.make_node("Shape", ["x"], ["sh"]),
     h.make_node("Gather", ["sh", "zero"], ["b"], axis=0),
     h.make_node("Unsqueeze", ["b", "ax0"], ["bu"]),
     h.make_node("Concat", ["bu", "m1"], ["s"], axis=0),
     h.make_node("Equal", ["s", "m1b"], ["eq"]),
     h.make_node("Where", ["eq", "ones", "s"], ["shp"]),
     h.make_node("Expand", ["W", "shp"], ["e"]),           # [batch, 32] once shp is known
     h.make_node("Shape", ["e"], ["esh"]),
     h.make_node("Gather", ["esh", "zero"], ["n"], axis=0),
     h.make_node("Range", ["zero", "n", "one"], ["pos"]),  # [batch] once Shape(e) folds
     h.make_node("Gather", ["P", "pos"], ["pe"]),          # [batch, 32]
     h.make_node("Add", ["x", "pe"], ["y"]),
    ]
    inits = [nh.from_array(np.array(0, np.int64), "zero"), nh.from_array(np.array(1, np.int64), "one"),
             nh.from_array(np.array([0], np.int64), "ax0"), nh.from_array(np.array([-1], np.int64), "m1"),
             nh.from_array(np.array([-1, -1], np.int64), "m1b"), nh.from_array(np.array([1, 1], np.int64), "ones"),
             nh.from_array(np.zeros((1, 32), np.float32), "W"), nh.from_array(np.zeros((100, 32), np.float32), "P")]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, ["batch", 32])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def test_shapes_that_resolve_after_reinference_fold_in_a_second_round():
    # transformers' BERT embeddings: an Expand whose target comes through Equal/Where is only
    # known after folding; the Shape of its output, a Range over it and the Gather that reads the
    # Range all resolve in a second fold -> infer round (one round left the Add unbound)
    r = analyze(_refold_model(), dims={"batch": 5})
    assert r.node("Range_9").status == "folded" and r.node("Range_9").out_specs[0].shape == (5,)
    assert r.node("Gather_10").out_specs[0].shape == (5, 32)
    add = r.node("Add_11").cost
    assert add.vector_flops == 5 * 32 == 160
    assert add.weight_bytes == 4 * 160 and add.activation_bytes_read == 4 * 160  # pe (folded) + x
    assert r.totals.params == 100 * 32  # the position table P, gathered ahead of time, once


# ----------------------------------------------------------------------------- invariants


def test_totals_are_the_sum_of_nodes():
    r = analyze(_shape_chain_model(False)[0])
    for f in COUNT_FIELDS:
        assert getattr(r.totals, f) == sum(getattr(n.cost, f) for n in r.nodes), f
    assert r.totals.flops == r.totals.mac_flops + r.totals.vector_flops + r.totals.transcendentals


# ----------------------------------------------------------------------------- known bugs (xfail)


def test_dropout_ratio_is_not_a_param():
    c = cost_of("Dropout", (10,), np.array(0.5, np.float32))
    assert c.params == 0  # currently 1
    assert c.weight_bytes == 0  # currently 4


def test_log_softmax_opset_11_rows():
    # opset 11, x [2,3,4], default axis 1: coerced to [2,12] -> 2 rows, so 2 logs
    c = cost_of("LogSoftmax", (2, 3, 4), opset=11)
    assert c.vector_flops == 4 * 24  # 96
    assert c.transcendentals == 24 + 2  # 24 exp + 2 row logs = 26 (currently 24 + 6 = 30)


def test_bound_dims_reach_the_files_own_value_info():
    # onnxruntime's optimizer writes value_info for the contrib ops it fuses, with the export's
    # symbols; --dim batch=2 must mean 2 there too (it did only for graph inputs)
    ms = "com.microsoft"
    nodes = [helper.make_node("SkipLayerNormalization", ["x", "skip", "gamma"], ["y"], name="sln",
                              domain=ms, epsilon=1e-5),
             helper.make_node("Relu", ["y"], ["z"], name="relu")]
    m = graph(nodes, {"x": ("batch", 4, 8), "skip": ("batch", 4, 8)}, ["z"], {"gamma": weight(8)},
              value_info=[helper.make_tensor_value_info("y", F32, ["batch", 4, 8])],
              domains={ms: 1})
    r = analyze(m, dims={"batch": 2})
    assert r.node("sln").out_specs[0].shape == (2, 4, 8)
    assert r.node("relu").cost.vector_flops == 2 * 4 * 8  # 64


def test_gather_elements_of_constants_folds():
    # HF BERT's token types: GatherElements(buffer [1,8], position ids [1,4]) is a constant
    from analyzer.frontends.onnx.fold import evaluate

    buf = np.arange(8, dtype=np.int64).reshape(1, 8) * 10
    idx = np.array([[0, 3, 5, -1]], np.int64)  # ONNX allows negative indices (from the end)
    assert evaluate("GatherElements", [buf, idx], {"axis": 1}).tolist() == [[0, 30, 50, 70]]
    errors = []
    assert evaluate("GatherElements", [buf, np.array([[9]], np.int64)], {"axis": 1}, errors=errors) is None
    assert errors and errors[0].startswith("IndexError")  # out of range: recorded, not raised
