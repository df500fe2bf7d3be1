"""What real exporters write, reduced to a few nodes (found by exporting ~30 transformers and
torch.nn models with the TorchScript and dynamo exporters and comparing with FlopCounterMode).
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import analyzer
from analyzer.errors import UnboundDimError
from analyzer.ir import dims as dim_expr
from onnx_builders import F32, graph, ints, weight

I64 = TensorProto.INT64


# ----------------------------------------------------------------------------- dynamo's expression dims

def _position_slice_model():
    # HF position ids: table[:s] for an input of length s; dynamo annotates the Slice output
    # with the dim 'Min(512, s)'
    nodes = [helper.make_node("Shape", ["x"], ["shp"], start=0, end=1),
             helper.make_node("Slice", ["table", "zero", "shp", "zero"], ["pos"]),
             helper.make_node("Add", ["x", "pos"], ["y"]),
             helper.make_node("MatMul", ["y", "w"], ["z"], name="mm")]
    vi = [helper.make_tensor_value_info("pos", F32, ["Min(512, s)", 4])]
    return graph(nodes, {"x": ("s", 4)}, ["z"],
                 {"table": weight(512, 4), "zero": ints(0), "w": weight(4, 4)}, value_info=vi)


def _head_split_model():
    # a head split written '2*s' by dynamo on a Concat output
    nodes = [helper.make_node("Concat", ["x", "x"], ["xx"], axis=0),
             helper.make_node("MatMul", ["xx", "w"], ["z"], name="mm")]
    vi = [helper.make_tensor_value_info("xx", F32, ["2*s", 4])]
    return graph(nodes, {"x": ("s", 4)}, ["z"], {"w": weight(4, 4)}, value_info=vi)


def test_an_expression_dim_is_evaluated_from_the_bound_symbols():
    r = analyzer.analyze(_position_slice_model(), dims={"s": 8})
    assert r.node("mm").cost.mac_flops == 2 * 8 * 4 * 4 == 256  # Min(512, 8) = 8
    r = analyzer.analyze(_head_split_model(), dims={"s": 8})
    assert r.node("mm").cost.mac_flops == 2 * (2 * 8) * 4 * 4 == 512


def test_an_unbound_expression_dim_names_the_symbols_to_bind():
    with pytest.raises(UnboundDimError, match=r"dim 'Min\(512, s\)' is an expression of symbolic "
                                              r"dims; pass dims=\{'s': \.\.\.\}"):
        analyzer.analyze(_position_slice_model())


@pytest.mark.parametrize("text, bound, value", [
    ("Min(512, s50)", {"s50": 8}, 8), ("Min(512, s50)", {"s50": 600}, 512), ("4*s77", {"s77": 3}, 12),
    ("((s0 - 1)//2) + 1", {"s0": 9}, 5), ("FloorDiv(s0, 2)", {"s0": 7}, 3), ("CeilDiv(s0, 2)", {"s0": 7}, 4),
    ("Max(1, s0 - 4)", {"s0": 2}, 1), ("s0 + s1", {"s0": 2}, None),       # s1 unbound
    ("__import__('os')", {}, None), ("s0.real", {"s0": 1}, None), ("s0 / 2", {"s0": 3}, None),
])
def test_dim_expressions_are_evaluated_safely(text, bound, value):
    assert dim_expr.evaluate(text, bound) == value
    assert dim_expr.is_expression(text)


def test_plain_names_are_not_expressions():
    assert not dim_expr.is_expression("batch") and not dim_expr.is_expression("s50")
    assert dim_expr.symbols("Min(512, s50) + FloorDiv(s1, 2)") == ["s50", "s1"]


def test_every_unbound_input_symbol_is_named_at_once():
    m = graph([helper.make_node("MatMul", ["a", "b"], ["c"], name="mm")],
              {"a": ("batch", "seq", 4), "b": (4, "width")}, ["c"])
    with pytest.raises(UnboundDimError,
                       match=r"pass dims=\{'batch': \.\.\., 'seq': \.\.\., 'width': \.\.\.\}") as e:
        analyzer.analyze(m)
    assert e.value.format("cli").endswith("pass --dim batch=VALUE,seq=VALUE,width=VALUE")


# ----------------------------------------------------------------------------- buffers sized by inputs

def _zero_state_model():
    # an RNN's h0 / zeros_like / a pixel mask: ConstantOfShape(Shape(x)) is a buffer the runtime
    # fills, sized by the input, not a weight
    nodes = [helper.make_node("Shape", ["x"], ["shp"]),
             helper.make_node("ConstantOfShape", ["shp"], ["zeros"],
                              value=helper.make_tensor("v", F32, [1], [0.0])),
             helper.make_node("Add", ["x", "zeros"], ["h"], name="add"),
             helper.make_node("MatMul", ["h", "w"], ["y"], name="mm")]
    return graph(nodes, {"x": ("batch", 4)}, ["y"], {"w": weight(4, 3)})


@pytest.mark.parametrize("batch", [2, 64])
def test_a_buffer_sized_by_an_input_is_not_a_parameter(batch):
    r = analyzer.analyze(_zero_state_model(), dims={"batch": batch})
    assert r.totals.params == 4 * 3 == 12  # only w, at every batch (was 12 + 4*batch)
    assert r.node("mm").cost.mac_flops == 2 * batch * 4 * 3


def test_a_constant_sized_fill_is_still_a_weight():
    # ConstantOfShape of a constant shape (how the onnx zoo stores weights): a parameter
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["W"],
                              value=helper.make_tensor("v", F32, [1], [0.5])),
             helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")]
    r = analyzer.analyze(graph(nodes, {"x": (2, 4)}, ["y"], {"shape": ints(4, 3)}))
    assert r.totals.params == 12


# ----------------------------------------------------------------------------- run-time shapes in a body

def _bag_model():
    # EmbeddingBag as exporters write it: a Loop over bags whose Slice bounds come from the
    # iteration number; after it, a MatMul that must still be counted
    body = helper.make_graph(
        [helper.make_node("Unsqueeze", ["i", "ax"], ["i1"]),
         helper.make_node("Add", ["i1", "one"], ["i2"]),
         helper.make_node("Slice", ["ids", "i1", "i2"], ["bag"]),
         helper.make_node("Gather", ["E", "bag"], ["rows"]),
         helper.make_node("ReduceMean", ["rows"], ["mean"], axes=[0], keepdims=0),
         helper.make_node("Identity", ["c"], ["c_out"])],
        "body", [helper.make_tensor_value_info("i", I64, []),
                 helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("mean", F32, [4])])
    nodes = [helper.make_node("Loop", ["M", ""], ["bags"], name="loop", body=body),
             helper.make_node("MatMul", ["bags", "w"], ["y"], name="mm")]
    inits = {"M": np.array(2, np.int64), "ax": ints(0), "one": ints(1), "E": weight(10, 4),
             "w": weight(4, 3)}
    return graph(nodes, {"ids": ((5,), I64)}, ["y"], inits, opset=13)


def test_a_run_time_shape_inside_a_body_leaves_those_nodes_uncosted_not_the_model():
    r = analyzer.analyze(_bag_model())
    assert r.node("mm").cost.mac_flops == 2 * 2 * 4 * 3 == 48  # the model after the Loop
    unc = {n.name: n for n in r.nodes if n.status == "uncosted"}
    # the slice and what reads it; the note names the run-time value and where it comes from
    assert sorted(unc) == ["loop/Gather_3", "loop/ReduceMean_4", "loop/Slice_2"]
    assert "depends on the value of 'i1' (computed at run time from body input 'i')" in \
        unc["loop/Slice_2"].note
    assert r.node("loop/Add_1").status == "costed"  # the index arithmetic itself is counted
    assert r.coverage.uncosted  # visible, and --strict fails on it
    with pytest.raises(analyzer.errors.CheckFailed):
        r.require_full_coverage()


# ----------------------------------------------------------------------------- per-block pad arithmetic

def _padded_blocks(n: int):
    # timm's Swin pads each block's input to a multiple of the window from Shape(x): Shape ->
    # Gather -> Mod -> Sub -> Mod -> Concat(ConstantOfShape, .) -> Pad. ONNX inference cannot
    # see through it, so each block's Shape folds only after the previous Pad was re-inferred
    nodes, x = [], "x"
    for i in range(n):
        nodes += [helper.make_node("Shape", [x], [f"s{i}"]),
                  helper.make_node("Gather", [f"s{i}", "one"], [f"w{i}"], axis=0),
                  helper.make_node("Mod", [f"w{i}", "four"], [f"m{i}"]),
                  helper.make_node("Sub", ["four", f"m{i}"], [f"d{i}"]),
                  helper.make_node("Mod", [f"d{i}", "four"], [f"r{i}"]),
                  helper.make_node("ConstantOfShape", ["three"], [f"z{i}"],
                                   value=helper.make_tensor("v", I64, [1], [0])),
                  helper.make_node("Concat", [f"z{i}", f"r{i}"], [f"p{i}"], axis=0),
                  helper.make_node("Pad", [x, f"p{i}"], [f"x{i + 1}"], name=f"pad{i}")]
        x = f"x{i + 1}"
    nodes.append(helper.make_node("MatMul", [x, "W"], ["y"], name="mm"))
    return graph(nodes, {"x": (2, 6)}, ["y"],
                 {"four": ints(4), "one": np.array(1, np.int64), "three": ints(3), "W": weight(8, 4)})


@pytest.mark.parametrize("blocks", [1, 5, 12])
def test_block_after_block_of_pad_arithmetic_resolves(blocks):
    # x [2,6]: the first Pad adds (4 - 6 % 4) % 4 = 2 columns -> [2,8], later ones add 0;
    # MatMul [2,8] x [8,4]: 2*2*8*4 = 128 (with 4 fold -> infer rounds, 5 blocks failed)
    r = analyzer.analyze(_padded_blocks(blocks))
    assert r.node("mm").cost.mac_flops == 128
    assert r.node(f"pad{blocks - 1}").out_specs[0].shape == (2, 8)


# ----------------------------------------------------------------------------- more exporter habits

def test_declarations_from_the_traced_batch_do_not_override_a_bound_batch():
    # dynamo traced at batch 1 declares intermediates with batch 1; the input says 'n'
    node = helper.make_node("Conv", ["x", "W"], ["y"], name="conv")
    vi = [helper.make_tensor_value_info("y", F32, [1, 3, 4, 4])]
    m = graph([node, helper.make_node("Relu", ["y"], ["z"], name="relu")], {"x": ("n", 2, 4, 4)},
              ["z"], {"W": weight(3, 2, 1, 1)}, value_info=vi)
    for n in (1, 4):
        r = analyzer.analyze(m, dims={"n": n})
        assert r.node("conv").cost.mac_flops == 2 * n * 3 * 4 * 4 * 2  # 192 per sample
        assert r.node("relu").cost.vector_flops == n * 3 * 4 * 4


@pytest.mark.parametrize("opset", [9, 11, 17])
def test_compress_with_a_constant_condition_has_a_static_output(opset):
    # cond [1,0,1,1] keeps 3 rows of x [4,3]; MatMul [3,3] x [3,2]: 2*3*3*2 = 36
    nodes = [helper.make_node("Compress", ["x", "cond"], ["c"], name="compress", axis=0),
             helper.make_node("MatMul", ["c", "M"], ["y"], name="mm")]
    m = graph(nodes, {"x": (4, 3)}, ["y"],
              {"cond": np.array([1, 0, 1, 1], bool), "M": weight(3, 2)}, opset=opset)
    r = analyzer.analyze(m)
    assert r.node("compress").out_specs[0].shape == (3, 3)
    assert r.node("mm").cost.mac_flops == 36


def test_one_hot_repeats_fold():
    # TorchScript's Tensor.repeat(N, 1): repeats = OneHot([0], depth 2, values [1, N]) = [N, 1]
    nodes = [helper.make_node("Shape", ["x"], ["s"], start=0, end=1),
             helper.make_node("Concat", ["one", "s"], ["vals"], axis=0),
             helper.make_node("OneHot", ["zero", "two", "vals"], ["oh"], axis=-1),
             helper.make_node("Reshape", ["oh", "flat"], ["rep"]),
             helper.make_node("Tile", ["x", "rep"], ["t"], name="tile"),
             helper.make_node("MatMul", ["t", "W"], ["y"], name="mm")]
    m = graph(nodes, {"x": ("n", 3)}, ["y"],
              {"one": ints(1), "zero": ints(0), "two": ints(2), "flat": ints(-1), "W": weight(3, 4)})
    r = analyzer.analyze(m, dims={"n": 2})
    assert r.node("tile").out_specs[0].shape == (4, 3)  # [n*n, 3]
    assert r.node("mm").cost.mac_flops == 2 * (2 * 2) * 3 * 4 == 96


def test_an_op_newer_than_the_models_opset_is_named():
    m = graph([helper.make_node("Erf", ["x"], ["y"])], {"x": (2, 3)}, ["y"], opset=7)
    # invalid (the ONNX checker and onnxruntime reject it): one error naming the node
    with pytest.raises(analyzer.errors.GraphError,
                       match=r"node 'Erf_0' \(Erf\) .*Erf is not defined in opset 7 \(it exists from opset 9\)"):
        analyzer.analyze(m)


# ----------------------------------------------------------------------------- old opsets (7-10)

@pytest.mark.parametrize("opset", [9, 13])
def test_batch_norm_statistics_outputs_at_old_opsets(opset):
    # BN-9..13 asked for its statistics (TorchScript's F.batch_norm(training=True)): the extra
    # outputs are per channel, and the batch statistics are computed
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"],
                              ["y", "rm", "rv", "sm", "sv"], name="bn", epsilon=1e-5),
             helper.make_node("MatMul", ["y", "M"], ["z"], name="mm")]
    inits = {k: weight(4) for k in ("s", "b", "m", "v")}
    inits["M"] = weight(6, 2)
    r = analyzer.analyze(graph(nodes, {"x": (1, 4, 6)}, ["z"], inits, opset=opset))
    bn = r.node("bn")
    assert [s.shape for s in bn.out_specs] == [(1, 4, 6)] + [(4,)] * 4
    # training: per element sum, subtract, square, sum (4n) + normalize (4n) + 4 per channel
    assert bn.cost.vector_flops == 4 * 24 + 4 * 24 + 4 * 4
    assert r.node("mm").cost.mac_flops == 2 * 4 * 6 * 2 == 96
    assert r.totals.params == 4 * 4 + 12 == 28


def test_xor_folds():
    # TorchScript's floor division at opsets 9-10: Div(w, 7) - Cast(Xor(w < 0, 7 < 0)); w = 28
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "one"], ["w"], axis=0),
             helper.make_node("Div", ["w", "seven"], ["q0"]),
             helper.make_node("Less", ["w", "zero"], ["a"]),
             helper.make_node("Less", ["seven", "zero"], ["b"]),
             helper.make_node("Xor", ["a", "b"], ["neg"]),
             helper.make_node("Cast", ["neg"], ["negi"], to=I64),
             helper.make_node("Sub", ["q0", "negi"], ["q"]),
             helper.make_node("Unsqueeze", ["q"], ["qq"], axes=[0]),
             helper.make_node("Concat", ["qq", "seven1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["r"]),
             helper.make_node("MatMul", ["r", "W"], ["y"], name="mm")]
    inits = {"one": np.array(1, np.int64), "seven": np.array(7, np.int64),
             "zero": np.array(0, np.int64), "seven1": ints(7), "W": weight(7, 3)}
    r = analyzer.analyze(graph(nodes, {"x": (1, 28)}, ["y"], inits, opset=9))
    assert r.node("mm").cost.mac_flops == 2 * 4 * 7 * 3 == 168


def test_negative_axes_before_opset_11():
    # opset 9 had no negative axes; exporters write -1 anyway and runtimes accept it. The Concat's
    # inputs get their rank only after folding resolves a Reshape
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Concat", ["s", "tail"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["r"]),
             helper.make_node("Concat", ["r", "r"], ["c"], axis=-1, name="cat"),
             helper.make_node("MatMul", ["c", "W"], ["y"], name="mm")]
    r = analyzer.analyze(graph(nodes, {"x": (2, 3)}, ["y"], {"tail": ints(1), "W": weight(2, 5)}, opset=9))
    assert r.node("cat").out_specs[0].shape == (2, 3, 2)
    assert r.node("mm").cost.mac_flops == 2 * 6 * 2 * 5 == 120


def test_ir_version_3_initializers_reach_reinference():
    # IR 3 (opset 7 exports): inference uses only initializers that are also graph inputs; a
    # folded Reshape target must be handed over as one
    nodes = [helper.make_node("Constant", [], ["c"], value=helper.make_tensor("c", TensorProto.DOUBLE, [1], [-1.0])),
             helper.make_node("Cast", ["c"], ["shape"], to=I64),
             helper.make_node("Constant", [], ["k"], value=helper.make_tensor("k", F32, [], [0.5])),
             helper.make_node("Mul", ["g", "k"], ["gk"]),
             helper.make_node("Reshape", ["gk", "shape"], ["scale"]),
             helper.make_node("Mul", ["x", "scale"], ["y"], name="mul")]
    m = graph(nodes, {"x": (2, 64)}, ["y"], {"g": weight(64, 1, 1, 1)}, opset=7)
    m.ir_version = 3
    m.graph.input.extend([helper.make_tensor_value_info("g", F32, [64, 1, 1, 1])])
    r = analyzer.analyze(m)
    assert r.node("mul").in_specs[1].shape == (64,)
    assert r.node("mul").cost.vector_flops == 2 * 64
    assert r.totals.params == 64 + 1  # g and the float scalar k


def test_a_token_count_decided_by_text_leaves_those_nodes_uncosted():
    # StringNormalizer with stop words: its length is the text's; no option can bind that, so
    # the nodes it sizes are uncosted (with a note) and the rest of the model is counted
    nodes = [helper.make_node("StringNormalizer", ["text"], ["norm"], name="norm", stopwords=["a"]),
             helper.make_node("Concat", ["norm", "norm"], ["both"], name="cat", axis=0),
             helper.make_node("Relu", ["x"], ["y"], name="relu")]
    m = graph(nodes, {"text": ((3,), TensorProto.STRING), "x": (2, 5)}, ["both", "y"])
    r = analyzer.analyze(m)
    assert r.node("relu").cost.vector_flops == 10
    assert r.node("cat").status == "uncosted"
    assert "StringNormalizer" in r.node("cat").note and "--value" not in r.node("cat").note
    with pytest.raises(analyzer.errors.CheckFailed):
        r.require_full_coverage()


def _same_padding_model():
    # timm's run-time "same" padding (pad_same): pads from the input size by float math,
    # pad = clamp((ceil(H / s) - 1) * s + (k - 1) * d + 1 - H, min=0), split left/right and
    # written as a Pad of Cast(Concat(...)); H = 9, s = 2, k = 3, d = 1:
    # (ceil(4.5) - 1) * 2 + 2 + 1 - 9 = 2 -> left 1, right 1 per spatial dim
    f = np.float32
    c = {"s": np.asarray(2, f), "one": np.asarray(1, f), "kd1": np.asarray(3, f), "zero": np.asarray(0, f),
         "two": np.asarray(2, f), "ax": ints(0), "z2": ints(0, 0)}
    nodes = [helper.make_node("Shape", ["x"], ["shp"]),
             helper.make_node("Gather", ["shp", "i2"], ["h"], axis=0),
             helper.make_node("Cast", ["h"], ["hf"], to=TensorProto.FLOAT),
             helper.make_node("Div", ["hf", "s"], ["q"]),
             helper.make_node("Ceil", ["q"], ["qc"]),
             helper.make_node("Sub", ["qc", "one"], ["q1"]),
             helper.make_node("Mul", ["q1", "s"], ["q2"]),
             helper.make_node("Add", ["q2", "kd1"], ["q3"]),
             helper.make_node("Sub", ["q3", "hf"], ["p"]),
             helper.make_node("Clip", ["p", "zero", ""], ["pc"]),
             helper.make_node("Div", ["pc", "two"], ["pl"]),
             helper.make_node("Floor", ["pl"], ["plf"]),
             helper.make_node("Sub", ["pc", "plf"], ["pr"]),
             helper.make_node("Pow", ["pr", "one"], ["pr1"]),
             helper.make_node("Round", ["pr1"], ["prr"]),
             helper.make_node("Cast", ["plf"], ["li"], to=TensorProto.INT64),
             helper.make_node("Cast", ["prr"], ["ri"], to=TensorProto.INT64),
             helper.make_node("Unsqueeze", ["li", "ax"], ["l1"]),
             helper.make_node("Unsqueeze", ["ri", "ax"], ["r1"]),
             helper.make_node("Concat", ["z2", "l1", "l1", "z2", "r1", "r1"], ["pads"], axis=0),
             helper.make_node("Slice", ["pads", "st", "en"], ["pads8"]),
             helper.make_node("Pad", ["x", "pads8"], ["xp"], name="pad"),
             helper.make_node("Conv", ["xp", "w"], ["y"], strides=[2, 2], name="conv")]
    c.update({"i2": np.asarray(2, np.int64), "st": ints(0), "en": ints(8), "w": weight(8, 4, 3, 3)})
    return graph(nodes, {"x": (1, 4, 9, 9)}, ["y"], c)


def test_runtime_same_padding_folds():
    # Clip, Round, Pow of shape arithmetic fold: the Pad is [1, 4, 11, 11], the strided 3x3
    # conv's output [1, 8, 5, 5]: 2 x 8 x 25 x (4 x 9) MACs = 14400
    r = analyzer.analyze(_same_padding_model())
    assert r.node("pad").out_specs[0].shape == (1, 4, 11, 11)
    assert r.node("conv").cost.mac_flops == 2 * 8 * 25 * 4 * 9 == 14400
