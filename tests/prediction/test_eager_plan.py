"""The eager kernel plan (``prediction.eager_plan``, runtimes ``eager`` and ``eager-op``) against
closed forms: which kernels eager PyTorch launches for an exported graph's patterns.

The attention block is BERT's as the TorchScript exporter writes it: per layer Q, K, V =
MatMul(x, W) + Add(b) (nn.Linear of a 3-D input), Reshape [B, S, E] -> [B, S, H, D], Transpose
(0, 2, 1, 3) for Q and V, (0, 2, 3, 1) for K, MatMul(Q, K^T), Div(scale), Add(mask),
Softmax, MatMul(P, V), Transpose (0, 2, 1, 3), Reshape [B, S, E], the output Linear, the
residual Add and a LayerNormalization.  E = H x D.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx_builders import assert_search_scores_equal_analyze, graph, ints, weight

import analyzer
from analyzer.prediction import eager_rules, strides

S, H, D = 8, 2, 4
E = H * D


def _linear(nodes, inits, x, out, n_in, n_out, tag):
    inits[f"{tag}_w"] = weight(n_in, n_out)
    inits[f"{tag}_b"] = weight(n_out)
    nodes += [helper.make_node("MatMul", [x, f"{tag}_w"], [f"{tag}_mm"], name=f"{tag}_mm"),
              helper.make_node("Add", [f"{tag}_b", f"{tag}_mm"], [out], name=f"{tag}_add")]


def _attention(batch: int, layers: int):
    nodes, inits = [], {"heads": ints(batch, S, H, D), "flat": ints(batch, S, E),
                        "scale": np.asarray(2.0, np.float32)}
    x = "x"
    for li in range(layers):
        t = f"l{li}"
        for p in "qkv":
            _linear(nodes, inits, x, f"{t}{p}", E, E, f"{t}{p}")
            nodes.append(helper.make_node("Reshape", [f"{t}{p}", "heads"], [f"{t}{p}4"], name=f"{t}{p}_rs"))
        nodes += [
            helper.make_node("Transpose", [f"{t}q4"], [f"{t}qt"], perm=[0, 2, 1, 3], name=f"{t}qt"),
            helper.make_node("Transpose", [f"{t}k4"], [f"{t}kt"], perm=[0, 2, 3, 1], name=f"{t}kt"),
            helper.make_node("Transpose", [f"{t}v4"], [f"{t}vt"], perm=[0, 2, 1, 3], name=f"{t}vt"),
            helper.make_node("MatMul", [f"{t}qt", f"{t}kt"], [f"{t}s"], name=f"{t}qk"),
            helper.make_node("Div", [f"{t}s", "scale"], [f"{t}sd"], name=f"{t}div"),
            helper.make_node("Add", [f"{t}sd", "mask"], [f"{t}sm"], name=f"{t}mask"),
            helper.make_node("Softmax", [f"{t}sm"], [f"{t}p"], axis=-1, name=f"{t}softmax"),
            helper.make_node("MatMul", [f"{t}p", f"{t}vt"], [f"{t}c"], name=f"{t}pv"),
            helper.make_node("Transpose", [f"{t}c"], [f"{t}ct"], perm=[0, 2, 1, 3], name=f"{t}ct"),
            helper.make_node("Reshape", [f"{t}ct", "flat"], [f"{t}cf"], name=f"{t}c_rs")]
        _linear(nodes, inits, f"{t}cf", f"{t}o", E, E, f"{t}o")
        inits[f"{t}g"], inits[f"{t}beta"] = weight(E), weight(E)
        nodes += [helper.make_node("Add", [f"{t}o", x], [f"{t}r"], name=f"{t}res"),
                  helper.make_node("LayerNormalization", [f"{t}r", f"{t}g", f"{t}beta"], [f"{t}y"],
                                   axis=-1, name=f"{t}ln")]
        x = f"{t}y"
    return graph(nodes, {"x": (batch, S, E), "mask": (batch, 1, 1, S)}, [x], inits)


def _pred(model, runtime="eager"):
    return analyzer.analyze(model, hw="a100", runtime=runtime).predictions[0]


def _kernels(pred):
    """(first member name, members, bytes, (m, n, k, batch)) per kernel of the plan."""
    kt = pred.kernel_table
    f = kt.feats
    return [(kt.names[k], int(kt.members[k]), float(kt.nbytes[k]),
             (f["m"][k], f["n"][k], f["k"][k], f["batch"][k])) for k in range(len(kt.names))]


def test_two_attention_layers_batch_1():
    # per layer: 3 Linear (MatMul + bias Add as one addmm) + Q.K^T bmm + Div + mask Add +
    # Softmax + P.V bmm + the context copy (Reshape of the permuted [1, S, H, D]: no view) +
    # output Linear + residual Add + LayerNorm = 12; the Reshapes to heads and the Transposes
    # are views (K^T is a transposed cuBLAS operand), two layers: 24
    p = _pred(_attention(1, 2))
    assert p.launches == 24
    ks = {name: k for name, *k in _kernels(p)}
    # each Linear: one kernel of its two nodes
    assert ks["l0q_mm"][0] == 2 and ks["l1o_mm"][0] == 2
    # the bmm: batch B x H = 2, Q.K^T m = n = S = 8, k = D = 4; P.V m = S, n = D, k = S
    assert ks["l0qk"][2] == (8.0, 8.0, 4.0, 2.0)
    assert ks["l0pv"][2] == (8.0, 4.0, 8.0, 2.0)
    # the context copy reads and writes [1, S, E] fp32: 2 x 1*8*8*4 = 512 bytes
    assert ks["l0c_rs"][1] == 512.0
    for view in ("l0qt", "l0kt", "l0vt", "l0ct", "l0q_rs"):
        assert view not in ks


def test_two_attention_layers_batch_2_copies_the_bmm_operands():
    # B = 2: [B, H, S, D] permuted from [B, S, H, D] cannot merge B and H into one batch dim
    # by a view (stride of B = S*E != H's stride D times H = E), so torch.matmul's reshape
    # copies Q, K^T and V: 3 copies more per layer, 15 per layer, 30 in all
    p = _pred(_attention(2, 2))
    assert p.launches == 30
    ks = {name: k for name, *k in _kernels(p)}
    # each copy is its Transpose's own kernel: [2, H, S, D] fp32 read and written = 2 x 512
    for t in ("l0qt", "l0kt", "l0vt"):
        assert ks[t][1] == 1024.0
    assert ks["l0qk"][2] == (8.0, 8.0, 4.0, 4.0)   # batch = B x H = 4


def test_kernel_runtime_keeps_one_kernel_per_node():
    # the kernel runtime plans one kernel per node that does work (unchanged by the eager plan):
    # per layer 4 MatMul+Add pairs (8) + 4 Transposes + 2 bmm + Div + Add + Softmax + Add + LN = 19
    assert _pred(_attention(1, 2), "kernel").launches == 38


def test_eager_op_uses_the_same_plan():
    assert _pred(_attention(1, 2), "eager-op").launches == 24


def _gelu_model(kind: str):
    c = {k: np.asarray(v, np.float32) for k, v in
         (("c_sqrt2", 1.4142135), ("c1", 1.0), ("c_half", 0.5), ("c3", 3.0), ("c_k", 0.044715),
          ("c_b", 0.7978846))}
    mk = helper.make_node
    if kind == "erf":        # F.gelu as exported: Div, Erf, Add, Mul, Mul
        nodes = [mk("Div", ["x", "c_sqrt2"], ["a"]), mk("Erf", ["a"], ["b"]), mk("Add", ["b", "c1"], ["c"]),
                 mk("Mul", ["x", "c"], ["d"]), mk("Mul", ["d", "c_half"], ["y"])]
    elif kind == "tanh":     # F.gelu(approximate='tanh') as exported: 9 nodes, no Pow
        nodes = [mk("Mul", ["x", "x"], ["x2"]), mk("Mul", ["x", "x2"], ["x3"]),
                 mk("Mul", ["x3", "c_k"], ["k"]), mk("Add", ["x", "k"], ["s"]),
                 mk("Mul", ["s", "c_b"], ["i"]), mk("Tanh", ["i"], ["t"]),
                 mk("Add", ["t", "c1"], ["o"]), mk("Mul", ["x", "o"], ["h"]),
                 mk("Mul", ["h", "c_half"], ["y"])]
    else:                    # GPT-2's NewGELU written in Python: 8 eager ops
        nodes = [mk("Mul", ["x", "c_half"], ["h"]), mk("Pow", ["x", "c3"], ["p"]),
                 mk("Mul", ["p", "c_k"], ["k"]), mk("Add", ["x", "k"], ["s"]),
                 mk("Mul", ["s", "c_b"], ["i"]), mk("Tanh", ["i"], ["t"]),
                 mk("Add", ["t", "c1"], ["o"]), mk("Mul", ["h", "o"], ["y"])]
    return graph(nodes, {"x": (4, 64)}, ["y"], c)


@pytest.mark.parametrize("kind, kernels", [("erf", 1), ("tanh", 1), ("newgelu", 8)])
def test_gelu_chains(kind, kernels):
    p = _pred(_gelu_model(kind))
    assert p.launches == kernels
    if kernels == 1:
        # one kernel reads x once and writes y: 2 x 4*64*4 = 2048 bytes, plus its fp32 scalar
        # constants: erf 3 (sqrt 2, 1, 0.5) = 12 bytes, tanh 4 (kappa, beta, 1, 0.5) = 16
        assert _kernels(p)[0][2] == 2048 + {"erf": 12, "tanh": 16}[kind]


def _conv(bias_name: str, groups: int = 1):
    c = 8
    inits = {"w": weight(c, c // groups, 3, 3), bias_name: weight(c)}
    node = helper.make_node("Conv", ["x", "w", bias_name], ["y"], pads=[1, 1, 1, 1], group=groups)
    return graph([node], {"x": (1, c, 16, 16)}, ["y"], inits)


@pytest.mark.parametrize("bias, groups, kernels", [
    # (an fp32 8 -> 8 3x3 convolution on the A100 without a precision: PyTorch's default TF32,
    # cuDNN's input and filter conversions, rule cudnn-nhwc under TF32: +2)
    ("onnx::Conv_7", 1, 4),   # a BatchNorm the exporter folded: eager runs it
    ("conv.bias", 1, 4),      # the module's own bias on cuDNN: add_ after the convolution
    ("onnx::Conv_7", 8, 2),   # depthwise + folded BatchNorm
    ("conv.bias", 8, 1),      # depthwise with its own bias: the native kernel takes it
])
def test_conv_bias(bias, groups, kernels):
    assert _pred(_conv(bias, groups)).launches == kernels


@pytest.mark.parametrize("n, kernels", [(16, 1), (1, 2)])
def test_gemm_bias_epilogue_or_copy(n, kernels):
    # addmm: cuBLASLt's bias epilogue needs N > 1; N = 1 copies the bias into the output first
    node = helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)
    m = graph([node], {"x": (4, 32)}, ["y"], {"w": weight(n, 32), "b": weight(n)})
    assert _pred(m).launches == kernels


def test_linear_of_a_permuted_input_is_matmul_and_add():
    # x.transpose(1, 2) @ W + b: at::linear of a non-contiguous input runs matmul (folding
    # x into a matrix: a copy, no view exists) and add_: 3 kernels; the Transpose is the copy
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["xt", "w"], ["mm"]),
             helper.make_node("Add", ["mm", "b"], ["y"])]
    m = graph(nodes, {"x": (2, 16, 8)}, ["y"], {"w": weight(16, 32), "b": weight(32)})
    assert _pred(m).launches == 3


def test_view_strides_closed_forms():
    # [2, 3, 4] contiguous (12, 4, 1) -> [6, 4]: (4, 1); -> [2, 12]: (12, 1)
    assert strides.view_strides((2, 3, 4), (12, 4, 1), (6, 4)) == (4, 1)
    assert strides.view_strides((2, 3, 4), (12, 4, 1), (2, 12)) == (12, 1)
    # the transposed [2, 4, 3] (12, 1, 4) cannot merge 4 and 3: no view
    assert strides.view_strides((2, 4, 3), (12, 1, 4), (2, 12)) is None
    # ... but splitting a dim of it is a view: [2, 4, 3] -> [2, 2, 2, 3]: (12, 2, 1, 4)
    assert strides.view_strides((2, 4, 3), (12, 1, 4), (2, 2, 2, 3)) == (12, 2, 1, 4)
    # a size-1 batch merges with anything: [1, 2, 8, 4] strides (64, 4, 8, 1) -> [2, 8, 4]
    assert strides.view_strides((1, 2, 8, 4), (64, 4, 8, 1), (2, 8, 4)) == (4, 8, 1)
    assert strides.matrix_ok(8, 4, 8, 1) and strides.matrix_ok(4, 8, 1, 8) and not strides.matrix_ok(8, 4, 4, 2)


def _sliced(step: int):
    # x[2, 8, 16] -> x[:, 0:8:step] (a Slice of axis 1) -> Relu; steps -1 is torch.flip's export
    start, end = (0, 8) if step > 0 else (7, -9)
    nodes = [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["s"], name="slice"),
             helper.make_node("Relu", ["s"], ["y"], name="relu")]
    inits = {"st": ints(start), "en": ints(end), "ax": ints(1), "sp": ints(step)}
    return graph(nodes, {"x": (2, 8, 16)}, ["y"], inits)


@pytest.mark.parametrize("step, kernels", [(1, 1), (2, 1), (-1, 2)])
def test_slice_is_a_view_with_positive_steps(step, kernels):
    rep = analyzer.analyze(_sliced(step), hw="a100", runtime="eager")
    assert rep.nodes[0].kernel == f"steps=1,{step},1"
    # eager: aten::slice is a view (no kernel) for a positive step, the Relu reads it strided;
    # a negative step copies (flip); `kernel` keeps one kernel per node
    assert rep.predictions[0].launches == kernels
    assert _pred(_sliced(step), "kernel").launches == 2


def test_rules_name_their_sources():
    names = [r.name for r in eager_rules.RULES]
    assert len(names) == len(set(names))
    assert all(r.source and r.eager and r.onnx for r in eager_rules.RULES)


def test_an_inserted_launch_is_issued_by_the_host():
    # Conv then Relu, host-bound (a 16 x 16 convolution: ~1 us of device time against 21 us of
    # dispatch): wall = the host's dispatch sum + the last kernel. The folded BatchNorm's launch
    # adds its own dispatch (12 us: runtimes.EAGER_DISPATCH_DEFAULT_US) to the host's time, so
    # the Relu is issued 12 us later (charged to the device only, it would hide under the gap)
    c = 8

    def conv_relu(bias: bool):
        ins = ["x", "w", "onnx::Conv_7"] if bias else ["x", "w"]
        inits = {"w": weight(c, c, 3, 3), **({"onnx::Conv_7": weight(c)} if bias else {})}
        return graph([helper.make_node("Conv", ins, ["h"], pads=[1, 1, 1, 1]),
                      helper.make_node("Relu", ["h"], ["y"])], {"x": (1, c, 16, 16)}, ["y"], inits)

    gap = _pred(conv_relu(True)).latency_s - _pred(conv_relu(False)).latency_s
    assert gap >= 12e-6 * 0.999


def _folded_embedding():
    """An export's embedding + mask as the TorchScript exporter folds them: the position ids and
    the mask's index tensor are Constants (arange), their lookup / comparison folded nodes."""
    c = helper.make_node
    ar = np.arange(S, dtype=np.int64)
    nodes = [
        c("Constant", [], ["pos_ids"], value=helper.make_tensor("v0", 7, (1, S), ar), name="pos_ids"),
        c("Gather", ["P", "pos_ids"], ["pos"], name="pos_gather"),           # folded lookup
        c("Gather", ["W", "ids"], ["word"], name="word_gather"),
        c("Add", ["word", "pos"], ["emb"], name="emb_add"),
        c("Transpose", ["W2"], ["W2t"], perm=[1, 0], name="w2_t"),           # folded view
        c("MatMul", ["emb", "W2t"], ["h"], name="mm"),
        c("Constant", [], ["eight"], value=helper.make_tensor("v1", 1, (), [8.0]), name="eight"),
        c("Sqrt", ["eight"], ["root"], name="sqrt"),                         # Python float
        c("Div", ["h", "root"], ["hs"], name="div"),
        c("Constant", [], ["q"], value=helper.make_tensor("v2", 7, (1, S, 1), ar), name="q"),
        c("Constant", [], ["zero"], value=helper.make_tensor("v3", 7, (), [0]), name="zero"),
        c("GreaterOrEqual", ["q", "zero"], ["keep"], name="ge"),             # folded mask
        c("Constant", [], ["f0"], value=helper.make_tensor("v4", 1, (), [0.0]), name="f0"),
        c("Constant", [], ["fmin"], value=helper.make_tensor("v5", 1, (), [-1e9]), name="fmin"),
        c("Where", ["keep", "f0", "fmin"], ["bias"], name="where"),
        c("Add", ["hs", "bias"], ["masked"], name="mask_add"),
        c("Constant", [], ["shp"], value=helper.make_tensor("v6", 7, (2,), [S, E]), name="shp"),
        c("Constant", [], ["one"], value=helper.make_tensor("v7", 7, (), [1]), name="one"),
        c("Mul", ["shp", "one"], ["shp2"], name="shape_mul"),                # shape arithmetic
        c("Reshape", ["masked", "shp2"], ["y"], name="flat")]
    inits = {"P": weight(4 * S, E), "W": weight(50, E), "W2": weight(E, E)}
    return graph(nodes, {"ids": ((1, S), onnx.TensorProto.INT64)}, ["y"], inits)


def test_folded_nodes_eager_recomputes():
    rep = analyzer.analyze(_folded_embedding(), hw="a100", runtime="eager")
    status = {n.name: n.status for n in rep.nodes}
    assert all(status[k] == "folded" for k in ("pos_gather", "w2_t", "sqrt", "ge", "where", "shape_mul"))
    p = rep.predictions[0]
    ran = {rep.nodes[r.index].name for r in p.nodes if r.kernel}
    # the graph's own kernels: word_gather, emb_add, mm, div, mask_add (5; the Reshape a view);
    # folded, recomputed: pos_gather, ge, where (3, one kernel each) and the two integer index
    # Constants pos_ids and q (torch.arange + offset: 2 each, 4); not: the weight's Transpose
    # (a view), sqrt(8.0) (Python float), the shape Mul (shape arithmetic), the scalar
    # Constants.  5 + 3 + 4 = 12
    assert {"pos_gather", "ge", "where", "pos_ids", "q"} <= ran
    assert not ran & {"w2_t", "sqrt", "shape_mul", "eight", "zero", "f0", "fmin", "shp", "one"}
    assert p.launches == 12


def test_folded_lookup_backward_shares_detection():
    rep = analyzer.analyze(_folded_embedding(), hw="a100", runtime="eager", train=True)
    names = [k.name for k in rep.training.backward_plan.kernels]
    # the folded position Gather the forward recomputes gets its embedding backward (zero fill
    # + scatter of dW, 32 indices <= EMBEDDING_SMALL), as the word lookup; the folded mask nodes
    # (integer and bool values) and the weight's Transpose none
    assert [n for n in names if n.startswith(("pos_gather/", "word_gather/"))] == [
        "pos_gather/zero", "pos_gather/dW", "word_gather/zero", "word_gather/dW"]
    assert not [n for n in names if n.split("/")[0] in ("ge", "where", "w2_t", "pos_ids", "q")]


# aten ops eager PyTorch runs for one forward of the fixtures' modules on the CPU (views and
# allocations excluded), recorded with `PYTHONPATH=$PWD python bench/eager_kernel_counts.py`
# (torch 2.14.1, transformers 5.24.0; bench/results/eager_kernel_counts_2026-12-02.md)
ATEN_OPS = {"bert": 58, "gpt2": 64}


@pytest.mark.parametrize("model, plan, missing", [
    # bert: 44 graph kernels + 6 recomputed folded nodes + 2 index Constants x 2 = 54; eager
    # runs 6 ops more (attention_mask.all(), the head and batch aranges of 1 element,
    # torch.tensor(0.0), kv_idx's arange + add: read through shape arithmetic here) and 2 fewer
    # (position_ids is a sliced buffer in eager, counted here as arange + add): 58 - 54 = 4
    ("bert", 54, 4),
    # gpt2: 51 + 4 folded nodes (wpe lookup, new_ones, le, bitwise_and) + 3 Constants x 2 = 61;
    # eager's other 3: the head and batch aranges of 1 element, torch.tensor(0.0)
    ("gpt2", 61, 3)])
def test_torch_fixture_counts_against_aten_ops(model, plan, missing):
    import os

    path = os.path.join(os.path.dirname(__file__), "..", "fixtures", "torch", f"{model}.onnx")
    p = analyzer.analyze(path, hw="h100", runtime="eager").predictions[0]
    assert p.launches == plan
    assert ATEN_OPS[model] - p.launches == missing


def _cross_entropy(n: int, c: int, op: str = "SoftmaxCrossEntropyLoss"):
    node = helper.make_node(op, ["x", "t"], ["y"], reduction="mean")
    return graph([node], {"x": (n, c), "t": ((n,), onnx.TensorProto.INT64)}, ["y"], opset=13)


def test_cross_entropy_is_log_softmax_and_nll_loss_kernels():
    # F.cross_entropy: log_softmax over C (reads and writes the [N, C] scores) and nll_loss (the
    # N picked log-probabilities, the int64 targets, the scalar loss) as an inserted launch
    n, c = 64, 4096
    eager = _pred(_cross_entropy(n, c))
    assert eager.launches == 2
    kt = eager.kernel_table
    assert [float(b) for b in kt.nbytes] == [2 * n * c * 4]
    assert kt.op_class == ("softmax_block",)         # a row of 4096 > 1024: the block kernel
    # the nll_loss launch: 64 picked log-probabilities (fp32) + 64 int64 targets + the fp32 loss
    assert kt.inserted == ((("NegativeLogLikelihoodLoss", n * 4 + n * 8 + 4),),)
    kernel = _pred(_cross_entropy(n, c), runtime="kernel")   # one fused kernel: the count's bytes
    assert kernel.launches == 1 and float(kernel.kernel_table.nbytes[0]) == n * c * 4 + n * 8 + 4
    nll = _pred(_cross_entropy(n, c, "NegativeLogLikelihoodLoss"))
    assert nll.launches == 1 and nll.kernel_table.op_class == ("reduce",)


@pytest.mark.parametrize("op", ["SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"])
def test_cross_entropy_search_scores_equal_analyze(op):
    model = _cross_entropy(32, 2048, op)
    assert_search_scores_equal_analyze(model, "a100", "kernel")    # the kernel-row fast path
    # eager-op: the search lowers each candidate in full (its kernel rows cover "none"/"xla")
    got = analyzer.CostModel("a100", runtime="eager-op").score([model.SerializeToString()])
    np.testing.assert_allclose(got, _pred(model, "eager-op").latency_s, rtol=1e-9)
