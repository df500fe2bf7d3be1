"""NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: each count against its closed form
(analyzer/counting/rules/onnx/loss.py's docstring), every reduction, weight, ignore_index,
[N, C] and [N, C, d1..dk], and the errors of inputs that do not match."""

from __future__ import annotations

import pytest
from onnx import TensorProto
from onnx_builders import one_node, weight

import analyzer
from analyzer.errors import AnalyzerError

I32, I64, F32 = TensorProto.INT32, TensorProto.INT64, TensorProto.FLOAT
NLL, SCE = "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"


def node(op, *args, opset, n_out=1, **attrs):
    r = analyzer.analyze(one_node(op, *args, opset=opset, n_out=n_out, **attrs))
    assert r.coverage.by_rule == 1 and r.coverage.decomposed == 0   # the rule, not the body
    return r.nodes[0]


@pytest.mark.parametrize("opset", [12, 13, 22])
@pytest.mark.parametrize("reduction, flops, written", [
    ("none", 8, 8 * 4),          # negate each of M = 8 picks; the [8] losses written
    ("sum", 8 + 7, 4),           # + M - 1 = 7 adds; one scalar
    ("mean", 8 + 7 + 1, 4),      # + 7 adds + 1 divide by the constant M
])
def test_nll_reductions(opset, reduction, flops, written):
    n = node(NLL, (8, 10), ((8,), I64), opset=opset, reduction=reduction)
    assert (n.vector_flops, n.transcendentals, n.functions) == (flops, 0, ())
    # X read at its 8 picks (8 x 4 B), the int64 targets whole (8 x 8 B)
    assert (n.activation_bytes_read, n.activation_bytes_written) == (8 * 4 + 8 * 8, written)


def test_nll_mean_with_weights_divides_by_the_picked_weights_sum():
    n = node(NLL, (8, 10), ((8,), I64), weight(10), opset=13, reduction="mean")
    # per pick: negate, x W[t] (2 x 8 = 16); 7 adds of the losses, 7 adds of the picked
    # weights (the divisor), 1 divide: 16 + 7 + 7 + 1 = 31
    assert n.vector_flops == 31
    assert n.weight_bytes == 8 * 4                      # W read at the 8 picks, not its 10
    assert n.activation_bytes_read == 8 * 4 + 8 * 8


def test_nll_ignore_index_masks_and_counts_the_divisor():
    n = node(NLL, (8, 10), ((8,), I64), opset=22, reduction="mean", ignore_index=3)
    # per pick: negate, compare t with 3, select 0 (3 x 8 = 24); 7 adds of the losses, 7 adds
    # counting the kept positions (the divisor), 1 divide: 24 + 7 + 7 + 1 = 39
    assert n.vector_flops == 39
    both = node(NLL, (8, 10), ((8,), I64), weight(10), opset=22, reduction="mean", ignore_index=3)
    assert both.vector_flops == 4 * 8 + 7 + 7 + 1       # negate, weight, compare, select: 54
    none = node(NLL, (8, 10), ((8,), I64), weight(10), opset=22, reduction="none", ignore_index=3)
    assert none.vector_flops == 4 * 8


def test_nll_spatial_positions():
    # [N, C, d1, d2] = [2, 7, 3, 5], targets [2, 3, 5]: M = 30 positions, int32 targets
    n = node(NLL, (2, 7, 3, 5), ((2, 3, 5), I32), opset=13, reduction="sum")
    assert n.vector_flops == 30 + 29
    assert n.activation_bytes_read == 30 * 4 + 30 * 4
    none = node(NLL, (2, 7, 3, 5), ((2, 3, 5), I64), opset=13, reduction="none")
    assert none.outputs == ("float32[2,3,5]",) and none.activation_bytes_written == 30 * 4


@pytest.mark.parametrize("opset", [12, 13])
def test_sce_is_log_softmax_then_nll(opset):
    n = node(SCE, (8, 10), ((8,), I64), opset=opset)      # reduction mean
    # log_softmax over C = 10 of 80 scores: 4 x 80 vector, 80 exp, 8 log (one per row);
    # then the mean NLL of 8 picks: 8 + 7 + 1
    assert (n.vector_flops, n.transcendentals) == (4 * 80 + 16, 80 + 8)
    assert n.functions == (("exp", 80), ("log", 8))
    assert n.activation_bytes_read == 80 * 4 + 8 * 8    # every score, the targets
    assert n.activation_bytes_written == 4
    assert n.kernel == "row=10 reduction=mean"           # C is the innermost axis; the reduction


def test_sce_log_prob_output_and_spatial():
    n = node(SCE, (2, 7, 3, 5), ((2, 3, 5), I64), weight(7), opset=13, n_out=2, reduction="none")
    # 210 scores in 30 rows of 7: 4 x 210 + 30 x (negate, weight) vector, 210 exp + 30 log
    assert (n.vector_flops, n.transcendentals) == (4 * 210 + 2 * 30, 210 + 30)
    assert n.weight_bytes == 30 * 4
    # the [2, 3, 5] losses and the [2, 7, 3, 5] log_prob
    assert n.activation_bytes_written == 30 * 4 + 210 * 4
    assert n.kernel == "reduction=none"                  # C is not innermost: no row word


def test_sce_ignore_index_weighted_mean():
    n = node(SCE, (4, 6), ((4,), I64), weight(6), opset=12, ignore_index=-100)
    # 4 x 24 + (4 per pick x 4 + 3 + 3 + 1) = 96 + 23
    assert n.vector_flops == 96 + 23


@pytest.mark.parametrize("args, words", [
    (((8, 10), ((9,), I64)), ["target int64[9]", "scores float32[8,10]", "[8]"]),
    (((8,), ((8,), I64)), ["[N, C]", "float32[8]"]),
    (((2, 7, 3), ((2, 4), I64)), ["target int64[2,4]", "[2, 3]"]),
    (((8, 10), ((8,), I64), weight(9)), ["weight float32[9]", "[C] = [10]"]),
])
@pytest.mark.parametrize("op", [NLL, SCE])
def test_bad_inputs_name_node_op_and_shapes(op, args, words):
    with pytest.raises(AnalyzerError) as e:
        analyzer.analyze(one_node(op, *args, opset=13))
    assert f"node 'n' ({op})" in str(e.value) and all(w in str(e.value) for w in words)


def test_bad_reduction_and_target_dtype():
    with pytest.raises(AnalyzerError, match="reduction"):
        analyzer.analyze(one_node(NLL, (8, 10), ((8,), I64), opset=13, reduction="avg"))
    with pytest.raises(AnalyzerError, match=r"NegativeLogLikelihoodLoss.*tensor\(float\)"):
        analyzer.analyze(one_node(NLL, (8, 10), ((8,), F32), opset=13))
