"""Selection, scatter, recurrent, detection, signal, random, linear-algebra, training, sequence,
string, free and ai.onnx.ml rules against hand arithmetic.

Conventions: the docstrings of analyzer/counting/rules/onnx/ (indexing.py, recurrent.py,
sampling.py, spectral.py, rng.py, linalg.py, training.py, sequence.py, views.py) and
rules/onnx_ml/ml.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from analyzer.counting.cost import Cost
from onnx_builders import F32, analyze, cost_of, graph, ints, node_of, weight

I64, BOOL, STR = TensorProto.INT64, TensorProto.BOOL, TensorProto.STRING
ML, TRAINING = "ai.onnx.ml", "ai.onnx.preview.training"


def ops(c):
    return c.mac_flops, c.vector_flops, c.transcendentals


def scalar(v, dtype=np.int64):
    return np.array(v, dtype=dtype)


# ----------------------------------------------------------------------------- selection


def test_topk():
    # X [3,10], k 4: per row 10*lg(4) = 20 heap compares + 4*lg(4) = 8 to sort = 28; 3 rows = 84
    nc = node_of("TopK", (3, 10), ints(4), n_out=2)
    assert ops(nc.cost) == (0, 84, 0)
    assert nc.cost.params == 0  # K is shape-like
    k1 = node_of("TopK", (3, 10), ints(1), n_out=2)
    assert k1.cost.vector_flops == 3 * 9  # k = 1 is an argmax: L-1 per row = 27


def test_nonzero_writes_upper_bound():
    nc = node_of("NonZero", (3, 4))
    assert nc.cost.vector_flops == 12  # one test per element
    assert nc.cost.activation_bytes_written == 2 * 12 * 8  # int64 [rank 2, at most 12]: 192
    assert "upper bound" in nc.note


def test_unique_upper_bound_of_open_outputs():
    nc = node_of("Unique", (8,), n_out=4)
    assert nc.cost.vector_flops == 8 * 3 + 8  # sort 8*lg(8) + adjacent compare = 32
    # Y at most 8 floats (32 B), indices and counts at most 8 int64 (64 B each), inverse [8] static (64 B)
    assert nc.cost.activation_bytes_written == 32 + 64 + 64 + 64


def test_compress():
    nc = node_of("Compress", (4, 3), ((4,), BOOL), axis=0)
    assert nc.cost.vector_flops == 4  # one test per condition element
    assert nc.cost.activation_bytes_written == 48  # upper bound: all 4 rows of 3 floats


def test_one_hot_and_trilu():
    oh = cost_of("OneHot", ((3,), I64), scalar(5), np.array([0.0, 1.0], np.float32))
    assert oh.vector_flops == 15  # one select per output element of [3,5]
    assert oh.params == 2  # the on/off values; depth is shape-like
    assert cost_of("Trilu", (4, 4)).vector_flops == 16


# ----------------------------------------------------------------------------- scatter / scan


def test_scatter_elements_reduction():
    args = [(4, 5), ((2, 5), I64), (2, 5)]
    assert cost_of("ScatterElements", *args, reduction="add", opset=18).vector_flops == 10  # 1 per update
    none = cost_of("ScatterElements", *args, opset=18)
    assert none.vector_flops == 0
    assert none.activation_bytes_read == 80 + 80 + 40  # data, int64 indices, updates
    assert none.activation_bytes_written == 80


def test_scatter_nd_moves_bytes_only():
    c = cost_of("ScatterND", (4, 5), ((2, 1), I64), (2, 5))
    assert ops(c) == (0, 0, 0)
    assert c.activation_bytes_read == 80 + 16 + 40


def test_tensor_scatter_writes_only_the_update():
    c = cost_of("TensorScatter", (1, 2, 8, 4), (1, 2, 3, 4), opset=24)
    assert (c.activation_bytes_read, c.activation_bytes_written) == (96, 96)  # the [1,2,3,4] update


@pytest.mark.parametrize("op, opset", [("CumSum", 14), ("CumProd", 26)])
def test_cumulative(op, opset):
    assert cost_of(op, (3, 4), scalar(1), opset=opset).vector_flops == 12  # one op per element


# ----------------------------------------------------------------------------- recurrent layers


def test_lstm_with_bias():
    # X [seq 5, batch 2, input 3], hidden 4: rows = 5*1*2 = 10
    c = cost_of("LSTM", (5, 2, 3), weight(1, 16, 3), weight(1, 16, 4), weight(1, 32), hidden_size=4, n_out=3)
    # input products 2*10*3*16 = 960, recurrent 2*10*4*16 = 1280
    assert ops(c) == (2240, 10 * 4 * (14 + 8), 10 * 4 * 5)  # (2240, 880, 200)


def test_gru_without_bias():
    c = cost_of("GRU", (5, 2, 3), weight(1, 12, 3), weight(1, 12, 4), hidden_size=4, n_out=2)
    assert ops(c) == (2 * 10 * 3 * 12 + 2 * 10 * 4 * 12, 10 * 4 * 12, 10 * 4 * 3)  # (1680, 480, 120)


def test_rnn_bidirectional():
    c = cost_of("RNN", (5, 2, 3), weight(2, 4, 3), weight(2, 4, 4), weight(2, 8), hidden_size=4,
                direction="bidirectional", n_out=2)
    # rows = 5*2*2 = 20: 2*20*3*4 + 2*20*4*4 = 1120; (1 + 2 bias) * 80 = 240; 80 tanh
    assert ops(c) == (1120, 240, 80)


# ----------------------------------------------------------------------------- sampling / detection


def test_roi_align():
    # 3 RoIs over [1,2,8,8], 2x2 bins -> 24 outputs, 2x2 samples of 7 + combine 1 each, + average
    nc = node_of("RoiAlign", (1, 2, 8, 8), (3, 4), ((3,), I64), output_height=2, output_width=2,
                 sampling_ratio=2)
    assert nc.cost.vector_flops == 24 * 4 * 8 + 24  # 792
    adaptive = node_of("RoiAlign", (1, 2, 8, 8), (3, 4), ((3,), I64), output_height=2, output_width=2)
    assert adaptive.cost.vector_flops == 792 and "2x2" in adaptive.note


def test_max_roi_pool_upper_bound():
    nc = node_of("MaxRoiPool", (1, 2, 8, 8), (3, 5), pooled_shape=[2, 2])
    assert nc.cost.vector_flops == 24 * 15  # window 4*4 = 16: 15 compares per output = 360


def test_non_max_suppression():
    nc = node_of("NonMaxSuppression", (1, 6, 4), (1, 2, 6))
    # per class: sort 6*3 + areas 18 + score test 6 + 13 * (6*5/2) = 18 + 18 + 6 + 195 = 237; 2 classes
    assert nc.cost.vector_flops == 474
    assert nc.cost.activation_bytes_written == 1 * 2 * 6 * 3 * 8  # upper bound: 288


@pytest.mark.parametrize("theta, size, mac, vec, written", [
    # 2D: theta [2,2,3], output [2,5,6,2]: 2 * N 2 * 30 points * 2*3 MACs = 720; linspaces
    # 2*(5+6) = 22; 120 floats written = 480 bytes
    ((2, 2, 3), [2, 3, 5, 6], 720, 22, 480),
    # 3D: theta [1,3,4], output [1,2,3,4,3]: 2 * 1 * 24 points * 3*4 MACs = 576; 2*(2+3+4) = 18;
    # 72 floats = 288 bytes
    ((1, 3, 4), [1, 1, 2, 3, 4], 576, 18, 288),
])
def test_affine_grid_with_a_constant_size(theta, size, mac, vec, written):
    # its function body cannot be used (an If on align_corners leaves shapes open): a rule counts it
    for align in (0, 1):
        c = cost_of("AffineGrid", theta, ints(*size), opset=20, align_corners=align)
        assert (c.mac_flops, c.vector_flops, c.transcendentals) == (mac, vec, 0)
        assert c.params == 0  # the size input is shape-like
        assert c.activation_bytes_read == 4 * int(np.prod(theta))
        assert c.activation_bytes_written == written


def test_grid_sample():
    # X [1,2,4,4], grid [1,3,3,2] -> 18 outputs; bilinear 4 taps: 7 each; 9 points * 2 coords * 2 ops
    assert cost_of("GridSample", (1, 2, 4, 4), (1, 3, 3, 2), opset=16).vector_flops == 18 * 7 + 36  # 162
    assert cost_of("GridSample", (1, 2, 4, 4), (1, 3, 3, 2), opset=16, mode="nearest").vector_flops == 36


def test_col2im():
    c = cost_of("Col2Im", (1, 8, 9), ints(4, 4), ints(2, 2), opset=18)
    assert c.vector_flops == 72  # one add per input element
    assert c.params == 0  # image and block shapes are shape-like


def test_deform_conv():
    # X [1,2,5,5], W [3,2,3,3], offset [1,18,3,3] -> [1,3,3,3]
    c = cost_of("DeformConv", (1, 2, 5, 5), weight(3, 2, 3, 3), (1, 18, 3, 3), opset=19)
    samples = 9 * 2 * 9  # N*out spatial * C_in * kernel = 162
    assert ops(c) == (2 * 27 * 18, samples * 7, 0)  # (972, 1134, 0)


def test_max_unpool_reverse_sequence_eye_like_move_bytes():
    mu = cost_of("MaxUnpool", (1, 1, 2, 2), ((1, 1, 2, 2), I64), kernel_shape=[2, 2], strides=[2, 2])
    assert ops(mu) == (0, 0, 0) and mu.activation_bytes_written == 64
    rs = cost_of("ReverseSequence", (4, 2, 3), ((2,), I64), batch_axis=1, time_axis=0)
    assert ops(rs) == (0, 0, 0) and rs.activation_bytes_written == 96
    ey = cost_of("EyeLike", (3, 3))
    assert (ey.activation_bytes_read, ey.activation_bytes_written) == (0, 36)


# ----------------------------------------------------------------------------- signal processing


def test_dft_real_input():
    # opset 20, [1,16,1] real signal over axis -2: 5*16*lg(16)/2 = 160
    assert cost_of("DFT", (1, 16, 1), opset=20).vector_flops == 160
    assert cost_of("DFT", (1, 16, 1), opset=20, onesided=1).vector_flops == 160
    assert cost_of("DFT", (1, 16, 2), opset=20, inverse=1).vector_flops == 320 + 16  # complex + 1/N scaling


def test_stft():
    # [1,64,1], step 16, window 16 -> 4 frames: per frame fft 160 + window 16 = 176
    c = cost_of("STFT", (1, 64, 1), scalar(16), weight(16), opset=17)
    assert c.vector_flops == 4 * 176  # 704


def test_mel_weight_matrix():
    args = [scalar(4), scalar(16), scalar(8000), np.array(0.0, np.float32), np.array(4000.0, np.float32)]
    c = cost_of("MelWeightMatrix", *args, opset=17)
    assert ops(c) == (0, 4 * 9 * 4, 2 * (4 + 2))  # [9, 4] output: (0, 144, 12)


def test_tfidf_vectorizer():
    kw = dict(max_gram_length=2, min_gram_length=1, max_skip_count=0, ngram_counts=[0, 3],
              ngram_indexes=[0, 1, 2, 3, 4], pool_int64s=[1, 2, 3, 1, 2, 2, 3])
    assert cost_of("TfIdfVectorizer", ((2, 6), I64), mode="TF", **kw).vector_flops == 12 * 2  # 24 lookups
    assert cost_of("TfIdfVectorizer", ((2, 6), I64), mode="TFIDF", weights=[1.0] * 5,
                   **kw).vector_flops == 24 + 10  # + a weight per output element of [2, 5]


# ----------------------------------------------------------------------------- random


def _generated(op):
    m = graph([helper.make_node(op, [], ["y"], name="n", shape=[2, 3])], {}, ["y"])
    return analyze(m).node("n").cost


def test_random_generation():
    assert ops(_generated("RandomNormal")) == (0, 4 * 6, 2 * 6)  # Box-Muller: (4, 2) per element
    assert ops(_generated("RandomUniform")) == (0, 3 * 6, 0)  # draw, scale, shift
    like = cost_of("RandomUniformLike", (4,))
    assert ops(like) == (0, 12, 0)
    assert like.activation_bytes_read == 0  # only the input's shape is used


def test_multinomial():
    # [2,5] logits, 3 samples: 10 exps, 10 running-sum adds, 2*3*(1 + lg 5 = 3) = 24
    assert ops(cost_of("Multinomial", (2, 5), sample_size=3)) == (0, 34, 10)


# ----------------------------------------------------------------------------- linear algebra / norms


def test_lp_normalization():
    assert ops(cost_of("LpNormalization", (2, 5))) == (0, 30, 2)  # 3 per element, a sqrt per row
    assert ops(cost_of("LpNormalization", (2, 5), p=1)) == (0, 30, 0)


def test_det_lu():
    # 3x3: 3 pivot compares + 3 divides + 2*3*5/3 = 10 multiply-adds + 2 diagonal products = 18
    assert cost_of("Det", (2, 3, 3)).vector_flops == 36


def test_det_rejects_non_square():
    import analyzer

    m = graph([helper.make_node("Det", ["x"], ["y"], name="n")], {"x": (2, 3)}, {"y": ((), F32)})
    with pytest.raises(analyzer.ShapeError, match="square"):
        analyze(m)


# ----------------------------------------------------------------------------- activations / conv


def test_swish_and_swiglu():
    assert ops(cost_of("Swish", (10,), opset=24)) == (0, 40, 10)  # alpha*x, sigmoid (2+exp), *x
    assert ops(cost_of("SwiGLU", (2, 5), (2, 5), opset=28)) == (0, 50, 10)  # swish 4 + gate multiply 1


def test_causal_conv_with_state():
    # depthwise [1,4,10] with k=3: 2*40*3 = 240 mac; bias 40 + SiLU 3*40; 40 exps
    nc = node_of("CausalConvWithState", (1, 4, 10), weight(4, 1, 3), weight(4), opset=27, activation="silu",
                 n_out=2)
    assert ops(nc.cost) == (240, 160, 40)


# ----------------------------------------------------------------------------- preview training


def _training(op, inputs, n_out, **attrs):
    names = [f"i{k}" for k in range(len(inputs))]
    node = helper.make_node(op, names, [f"o{k}" for k in range(n_out)], name="n", domain=TRAINING, **attrs)
    m = graph([node], dict(zip(names, inputs)), [f"o{k}" for k in range(n_out)], domains={TRAINING: 1})
    return analyze(m).node("n").cost


R, T = ((), F32), ((), I64)


def test_adagrad():
    c = _training("Adagrad", [R, T, (3, 4), (3, 4), (3, 4)], 2)
    assert ops(c) == (0, 8 * 12 + 3, 12)  # 8 per element + 3 scalar ops; a sqrt per element


def test_adam():
    c = _training("Adam", [R, T, (5,), (5,), (5,), (5,)], 3)
    assert ops(c) == (0, 13 * 5 + 6, 5 + 2)  # (0, 71, 7)


@pytest.mark.parametrize("mode, per", [("standard", 7), ("nesterov", 9)])
def test_momentum(mode, per):
    c = _training("Momentum", [R, T, (5,), (5,), (5,)], 2, alpha=0.9, beta=1.0, norm_coefficient=0.0, mode=mode)
    assert ops(c) == (0, per * 5, 0)


# ----------------------------------------------------------------------------- sequences, optionals, strings


def _seq_graph(tail_op, tail_inputs, tail_out, **attrs):
    n = helper.make_node
    nodes = [n("SequenceConstruct", ["a", "b"], ["s"], name="sc"),
             n(tail_op, ["s"] + tail_inputs, ["y"], name="n", **attrs)]
    outs = {"y": tail_out} if tail_out else ["y"]
    return analyze(graph(nodes, {"a": (2, 3), "b": (2, 3)}, outs, {"pos": scalar(1)}))


def test_sequence_construct_copies_its_tensors():
    r = _seq_graph("SequenceLength", [], None)
    assert (r.node("sc").cost.activation_bytes_read, r.node("sc").cost.activation_bytes_written) == (48, 48)
    assert r.node("n").cost.activation_bytes_written == 8  # SequenceLength: an int64 scalar


def test_sequence_at_and_concat_from_sequence_read_and_write_their_output():
    at = _seq_graph("SequenceAt", ["pos"], None)
    c = at.node("n").cost  # copies element 1 (float32[2,3]): 6*4 = 24 bytes read, 24 written
    assert (c.activation_bytes_read, c.activation_bytes_written) == (24, 24)
    # ONNX infers [unk, 3] (the sequence length is not a shape); the frontend follows the
    # elements: [2,3] + [2,3] on axis 0 = [4,3], read and written whole (12*4 = 48 bytes)
    cat = _seq_graph("ConcatFromSequence", [], None, axis=0)
    assert cat.node("n").outputs == ("float32[4,3]",)
    c = cat.node("n").cost
    assert (c.activation_bytes_read, c.activation_bytes_written) == (48, 48)
    stack = _seq_graph("ConcatFromSequence", [], None, axis=1, new_axis=1)
    assert stack.node("n").outputs == ("float32[2,2,3]",)  # stacked on a new axis 1


def test_sequence_elements_are_followed_through_insert_and_erase():
    n = helper.make_node
    nodes = [n("SequenceEmpty", [], ["s0"], name="e"),
             n("SequenceInsert", ["s0", "a"], ["s1"], name="i1"),        # [a]
             n("SequenceInsert", ["s1", "b", "zero"], ["s2"], name="i2"),  # [b, a]
             n("SequenceErase", ["s2"], ["s3"], name="er"),              # [b] (the last goes)
             n("SequenceAt", ["s3", "zero"], ["y"], name="at"),
             n("SequenceLength", ["s2"], ["len"], name="len")]
    r = analyze(graph(nodes, {"a": (2, 3), "b": (5, 3)}, ["y", "len"], {"zero": scalar(0)}))
    assert r.node("at").outputs == ("float32[5,3]",)  # b: 15*4 = 60 bytes
    assert r.node("at").cost.activation_bytes_written == 60


def test_a_loop_over_a_sequence_length_runs_once_per_element():
    # SequenceLength of a followed sequence is a constant: the Loop's trip count
    n = helper.make_node
    body = helper.make_graph(
        [n("Identity", ["c_in"], ["c_out"], name="keep"),
         n("SequenceAt", ["s", "i"], ["el"], name="at"),
         n("Relu", ["el"], ["r"], name="relu")],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("c_in", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("r", TensorProto.FLOAT, None)])
    nodes = [n("SequenceConstruct", ["a", "a", "a"], ["s"], name="sc"),
             n("SequenceLength", ["s"], ["len"], name="len"),
             n("Loop", ["len", ""], ["rs"], name="loop", body=body)]
    r = analyze(graph(nodes, {"a": (2, 3)}, ["rs"]))
    assert r.node("loop").note.startswith("trip count 3")
    assert r.node("loop/relu").cost.vector_flops == 3 * 6  # 3 trips x 2*3 elements


def test_split_to_sequence():
    m = graph([helper.make_node("SplitToSequence", ["x"], ["s"], name="n"),
               helper.make_node("SequenceLength", ["s"], ["y"], name="len")], {"x": (4, 3)}, ["y"])
    c = analyze(m).node("n").cost
    assert (c.activation_bytes_read, c.activation_bytes_written) == (48, 48)


def test_free_ops_cost_nothing():
    from analyzer.counting.rules.onnx.views import FREE

    assert node_of("BitCast", (4,), opset=26, to=TensorProto.INT32).cost == Cost()
    n = helper.make_node
    m = graph([n("Optional", ["x"], ["o"], name="opt"), n("OptionalHasElement", ["o"], ["h"], name="has"),
               n("OptionalGetElement", ["o"], ["y"], name="get")], {"x": (3,)}, ["h", "y"], opset=18)
    r = analyze(m)
    assert r.node("opt").cost == Cost() and r.node("get").cost == Cost()
    assert r.node("has").cost.activation_bytes_written == 1  # a bool scalar
    assert r.node("opt").note == "free: " + FREE["Optional"]
    e = analyze(graph([n("SequenceEmpty", [], ["s"], name="n"), n("SequenceLength", ["s"], ["y"], name="len")],
                      {}, ["y"]))
    assert e.node("n").cost == Cost()


def test_string_ops_one_op_per_string():
    nc = node_of("StringNormalizer", ((3,), STR), case_change_action="LOWER")
    assert nc.cost.vector_flops == 3
    assert nc.cost.activation_bytes_read == 3 * 8  # a pointer-sized slot per string
    assert nc.cost.activation_bytes_written == 3 * 8 and "upper bound" in nc.note  # stop words may drop some
    assert cost_of("StringConcat", ((3,), STR), ((3,), STR), opset=20).vector_flops == 3
    assert cost_of("RegexFullMatch", ((3,), STR), opset=20, pattern="a+").vector_flops == 3


def test_string_split_bounds():
    nc = node_of("StringSplit", ((3,), STR), opset=20, maxsplit=2, n_out=2)
    assert nc.cost.vector_flops == 3
    assert nc.cost.activation_bytes_written == 3 * 3 * 8 + 3 * 8  # 3 tokens per string + counts = 96


# ----------------------------------------------------------------------------- ai.onnx.ml


def _ml(op, x, outs, opset=3, **attrs):
    """``outs``: output name -> (shape, elem_type), declared (several ml ops have no shape inference)."""
    node = helper.make_node(op, ["x"], list(outs), name="n", domain=ML, **attrs)
    m = graph([node], {"x": x}, outs, domains={ML: opset})
    return analyze(m).node("n")


def f32(*shape):
    return (shape, F32)


def test_ml_per_element_ops():
    assert _ml("Binarizer", (3, 4), {"y": f32(3, 4)}).cost.vector_flops == 12
    scaler = _ml("Scaler", (3, 4), {"y": f32(3, 4)}, offset=[0.0] * 4, scale=[1.0] * 4).cost
    assert (scaler.vector_flops, scaler.params, scaler.weight_bytes) == (24, 8, 32)
    imputer = _ml("Imputer", (3, 4), {"y": f32(3, 4)}, imputed_value_floats=[0.0], replaced_value_float=0.0)
    assert imputer.cost.vector_flops == 24
    assert (imputer.cost.params, imputer.cost.weight_bytes) == (1, 4)  # replaced_value is a setting
    enc = _ml("LabelEncoder", ((3,), I64), {"y": ((3,), I64)}, opset=2, keys_int64s=[1, 2], values_int64s=[3, 4])
    # a lookup table: 2 keys + 2 values are params; a run reads only the entries it hits
    assert (enc.cost.vector_flops, enc.cost.params, enc.cost.weight_bytes) == (3, 4, 0)


def test_ml_normalizer():
    assert ops(_ml("Normalizer", (3, 4), {"y": f32(3, 4)}, norm="L2").cost) == (0, 36, 3)
    assert ops(_ml("Normalizer", (3, 4), {"y": f32(3, 4)}, norm="MAX").cost) == (0, 24, 0)


def test_ml_linear_classifier():
    nc = _ml("LinearClassifier", (4, 3), {"label": ((4,), I64), "scores": f32(4, 2)}, coefficients=[0.1] * 6,
             intercepts=[0.0, 0.0],
             classlabels_ints=[0, 1], post_transform="SOFTMAX")
    # 2*4*2*3 = 48 mac; intercepts 8 + softmax 4*8 + argmax 1 per row 4 = 44; 8 exps
    assert ops(nc.cost) == (48, 44, 8)
    # the weights live in attributes: 6 coefficients + 2 intercepts, read whole (8 floats)
    assert (nc.cost.params, nc.cost.weight_bytes) == (8, 32)


def test_ml_linear_regressor():
    nc = _ml("LinearRegressor", (4, 3), {"y": f32(4, 1)}, coefficients=[0.1] * 3, intercepts=[0.0])
    assert ops(nc.cost) == (2 * 4 * 3, 4, 0)
    assert (nc.cost.params, nc.cost.weight_bytes) == (3 + 1, 4 * 4)


def test_ml_svm_classifier_rbf():
    nc = _ml("SVMClassifier", (2, 3), {"label": ((2,), I64), "scores": f32(2, 2)}, kernel_type="RBF",
             kernel_params=[0.5, 0.0, 3.0],
             support_vectors=[0.0] * 12, vectors_per_class=[2, 2], classlabels_ints=[0, 1],
             coefficients=[1.0] * 4, rho=[0.0])
    # 8 kernel values: 3*3 + 1 each = 80, 8 exps; decision 2*2*1*4 = 16 mac; rho + vote 2*1*2 = 4, argmax 2
    assert ops(nc.cost) == (16, 86, 8)
    # 12 support-vector values + 4 dual coefficients + 1 rho (kernel_params are settings)
    assert (nc.cost.params, nc.cost.weight_bytes) == (17, 17 * 4)


def test_ml_tree_ensemble_regressor_depth_from_attributes():
    # tree 0: depth 2 (0 -> 1 -> leaves); tree 1: depth 1
    kw = dict(nodes_treeids=[0, 0, 0, 0, 0, 1, 1, 1], nodes_nodeids=[0, 1, 2, 3, 4, 0, 1, 2],
              nodes_modes=["BRANCH_LEQ", "BRANCH_LEQ", "LEAF", "LEAF", "LEAF", "BRANCH_LEQ", "LEAF", "LEAF"],
              nodes_truenodeids=[1, 3, 0, 0, 0, 1, 0, 0], nodes_falsenodeids=[2, 4, 0, 0, 0, 2, 0, 0],
              nodes_featureids=[0] * 8, nodes_values=[0.5] * 8, target_treeids=[0, 0, 0, 1, 1],
              target_nodeids=[2, 3, 4, 1, 2], target_ids=[0] * 5, target_weights=[1.0] * 5, n_targets=1)
    nc = _ml("TreeEnsembleRegressor", (5, 3), {"y": f32(5, 1)}, **kw)
    assert nc.cost.vector_flops == 5 * (2 + 1 + 2 * 1 + 1)  # per sample: 3 compares, 2 leaf adds, base: 30
    # 3 branch thresholds (leaves' nodes_values are placeholders) + 5 leaf weights; a traversal
    # reads only its path: no bytes for them
    assert (nc.cost.params, nc.cost.weight_bytes) == (3 + 5, 0)
    assert "path" in nc.note


def test_ml_zip_map_writes_its_maps():
    nc = _ml("ZipMap", (2, 3), ["y"], classlabels_int64s=[0, 1, 2])
    assert nc.cost.activation_bytes_written == 24  # one value per input element


def test_deprecated_scatter_and_random_normal_like():
    assert ops(cost_of("Scatter", (4, 5), ((2, 5), I64), (2, 5), opset=10)) == (0, 0, 0)
    assert ops(cost_of("RandomNormalLike", (4,))) == (0, 16, 8)


def test_sequence_insert_and_erase():
    n = helper.make_node
    nodes = [n("SequenceConstruct", ["a", "b"], ["s"], name="sc"),
             n("SequenceInsert", ["s", "c"], ["s2"], name="ins"),
             n("SequenceErase", ["s2"], ["s3"], name="erase"),
             n("SequenceLength", ["s3"], ["y"], name="len")]
    r = analyze(graph(nodes, {"a": (2, 3), "b": (2, 3), "c": (2, 3)}, ["y"]))
    c = r.node("ins").cost
    assert (c.activation_bytes_read, c.activation_bytes_written) == (24, 24)  # the inserted [2,3] tensor
    assert r.node("erase").cost == Cost()


def test_ml_one_hot_encoder_and_array_feature_extractor():
    ohe = _ml("OneHotEncoder", ((3,), I64), {"y": f32(3, 4)}, cats_int64s=[1, 2, 3, 4]).cost
    assert (ohe.vector_flops, ohe.params) == (12, 4)
    node = helper.make_node("ArrayFeatureExtractor", ["x", "i"], ["y"], name="n", domain=ML)
    m = graph([node], {"x": (3, 10)}, {"y": f32(3, 2)}, {"i": ints(0, 4)}, domains={ML: 1})
    c = analyze(m).node("n").cost
    assert c.activation_bytes_read == 3 * 2 * 4  # only the gathered values: 24, not 120
    assert c.weight_bytes == 16  # the int64 indices


def test_ml_linear_svm_regressor():
    nc = _ml("SVMRegressor", (4, 3), {"y": f32(4, 1)}, coefficients=[0.1] * 3, n_supports=0, rho=[0.0])
    assert ops(nc.cost) == (2 * 4 * 3, 4, 0)  # a linear model: 24 mac + 4 rho adds
    assert nc.cost.params == 3 + 1  # coefficients + rho


def test_ml_tree_ensemble_classifier():
    kw = dict(nodes_treeids=[0, 0, 0, 0, 0, 1, 1, 1], nodes_nodeids=[0, 1, 2, 3, 4, 0, 1, 2],
              nodes_modes=["BRANCH_LEQ", "BRANCH_LEQ", "LEAF", "LEAF", "LEAF", "BRANCH_LEQ", "LEAF", "LEAF"],
              nodes_truenodeids=[1, 3, 0, 0, 0, 1, 0, 0], nodes_falsenodeids=[2, 4, 0, 0, 0, 2, 0, 0],
              nodes_featureids=[0] * 8, nodes_values=[0.5] * 8, class_treeids=[0, 0, 0, 1, 1],
              class_nodeids=[2, 3, 4, 1, 2], class_ids=[0, 1, 0, 1, 0], class_weights=[1.0] * 5,
              classlabels_int64s=[0, 1])
    nc = _ml("TreeEnsembleClassifier", (5, 3), {"label": ((5,), I64), "scores": f32(5, 2)}, **kw)
    # per sample: 3 compares + 2 leaf-weight adds (each leaf holds one class's weight: one add
    # per tree, not one per class) + 2 base values + 1 argmax = 8
    assert nc.cost.vector_flops == 40
    assert nc.cost.params == 3 + 5  # branch thresholds + class weights


def test_ml_tree_ensemble_v5_tensor_attributes():
    # root 0 -> (true: node 1, false: leaf 0); node 1 -> (leaf 1, leaf 2): depth 2
    t = helper.make_tensor
    kw = dict(tree_roots=[0], nodes_featureids=[0, 1], nodes_truenodeids=[1, 1], nodes_trueleafs=[0, 1],
              nodes_falsenodeids=[0, 2], nodes_falseleafs=[1, 1], leaf_targetids=[0, 0, 0], n_targets=1,
              nodes_modes=t("m", TensorProto.UINT8, [2], [0, 0]),
              nodes_splits=t("s", TensorProto.FLOAT, [2], [0.5, 0.5]),
              leaf_weights=t("w", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0]))
    nc = _ml("TreeEnsemble", (4, 2), {"y": f32(4, 1)}, opset=5, **kw)
    assert nc.cost.vector_flops == 4 * (2 + 1 + 1)  # depth 2 + a leaf add + the base value: 16
    assert nc.cost.params == 2 + 3  # two split values + three leaf weights


def test_ml_category_mapper_and_feature_vectorizer():
    cm = _ml("CategoryMapper", ((3,), STR), {"y": ((3,), I64)}, cats_strings=["a", "b"], cats_int64s=[1, 2])
    assert cm.cost.vector_flops == 3  # one lookup per string
    assert cm.cost.params == 4  # the two category lists
    node = helper.make_node("FeatureVectorizer", ["a", "b"], ["y"], name="n", domain=ML, inputdimensions=[3, 2])
    m = graph([node], {"a": (2, 3), "b": (2, 2)}, {"y": f32(2, 5)}, domains={ML: 1})
    c = analyze(m).node("n").cost
    assert ops(c) == (0, 0, 0) and (c.activation_bytes_read, c.activation_bytes_written) == (40, 40)


def _map_input_model(op, out_shape, **attrs):
    map_type = helper.make_map_type_proto(TensorProto.INT64, helper.make_tensor_type_proto(F32, []))
    node = helper.make_node(op, ["m"], ["y"], name="n", domain=ML, **attrs)
    g = helper.make_graph([node], "g", [helper.make_value_info("m", map_type)],
                          [helper.make_tensor_value_info("y", F32, list(out_shape))])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, 1)],
                             ir_version=8)


def test_ml_map_inputs_count_their_output():
    dv = analyze(_map_input_model("DictVectorizer", (1, 3), int64_vocabulary=[1, 2, 3])).node("n").cost
    assert dv.vector_flops == 3 and dv.activation_bytes_read == 0  # a lookup per output; the map is not a tensor
    cm = analyze(_map_input_model("CastMap", (1, 4), cast_to="TO_FLOAT", map_form="DENSE",
                                  max_map=4)).node("n").cost
    assert ops(cm) == (0, 0, 0) and cm.activation_bytes_written == 16


def test_data_dependent_sizes_are_listed_as_estimates():
    # NonZero's output length depends on the data: bytes written at the upper bound (every
    # element selected), the node flagged an estimate; TopK's k is a constant: no estimate
    nodes = [helper.make_node("NonZero", ["x"], ["nz"], name="nz"),
             helper.make_node("TopK", ["x2", "k"], ["v", "i"], name="topk", axis=-1)]
    r = analyze(graph(nodes, {"x": (3, 4), "x2": (2, 8)}, ["nz", "v", "i"], {"k": ints(2)}))
    nz = r.node("nz")
    assert nz.estimate and "upper bound" in nz.note
    assert nz.cost.activation_bytes_written == 2 * 12 * 8  # [rank, every element] int64
    assert not r.node("topk").estimate
    assert r.coverage.estimates == ("nz",)
    d = r.to_dict()
    assert d["coverage"]["estimates"] == ["nz"]
    assert [n.get("estimate") for n in d["nodes"]] == [True, None]
    import csv
    import io

    from analyzer.render.formats import render

    rows = {x["name"]: x for x in csv.DictReader(io.StringIO(render(r, "csv")))}
    assert rows["nz"]["estimate"] == "yes" and "upper bound" in rows["nz"]["note"]
    assert rows["topk"]["estimate"] == "" and rows["topk"]["note"] == ""
