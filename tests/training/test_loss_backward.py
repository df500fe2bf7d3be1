"""The backward kernels of NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
(analyzer.training.backward_loss): nll_loss_backward's zero fill and target scatter, then
log_softmax's backward, in closed form for each reduction and for [N, C] and [N, C, d1, d2]."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import analyzer
from analyzer.training.backward_plan import backward_plan
from analyzer.training.counts import gradient_plan
from onnx_builders import graph

N, D, C = 4, 16, 8
E, I64 = 4, 8   # bytes per fp32 element, per int64 target


def _loss_model(op, reduction, spatial=(), weighted=False):
    """x @ W (or a 1x1 Conv for spatial scores) -> [LogSoftmax ->] the loss of targets t."""
    if spatial:
        first = helper.make_node("Conv", ["x", "W"], ["h"], name="fc")
        x, w = (N, D, *spatial), np.ones((C, D, 1, 1), np.float32)
    else:
        first = helper.make_node("MatMul", ["x", "W"], ["h"], name="fc")
        x, w = (N, D), np.ones((D, C), np.float32)
    nodes, scores = [first], "h"
    if op == "NegativeLogLikelihoodLoss":
        nodes.append(helper.make_node("LogSoftmax", ["h"], ["lp"], axis=1, name="logsoftmax"))
        scores = "lp"
    inits = {"W": w}
    ins = [scores, "t"]
    if weighted:
        inits["cw"], ins = np.ones(C, np.float32), ins + ["cw"]
    nodes.append(helper.make_node(op, ins, ["loss"], reduction=reduction, name="loss"))
    return graph(nodes, {"x": x, "t": ((N, *spatial), TensorProto.INT64)}, ["loss"], inits)


def _loss_kernels(model):
    r = analyzer.analyze(model)
    p = backward_plan(r.nodes, gradient_plan(r.nodes))
    assert p.fallback == ()
    return [(k.name, k.op, k.bytes_read, k.bytes_written) for k in p.kernels
            if k.name.startswith("loss/")]


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_cross_entropy_reduced_nc(reduction):
    m = N       # target positions
    tw = 1 if reduction == "mean" else 0     # total_weight: loaded by the mean kernel only
    assert _loss_kernels(_loss_model("SoftmaxCrossEntropyLoss", reduction)) == [
        # grad_input.zero_(): writes the [4, 8] scores' gradient
        ("loss/zero", "Mul", 0, N * C * E),
        # the scatter: reads dY (1) + total_weight (mean: 1) + 4 int64 targets; writes the 4
        ("loss/scatter", "ScatterND", (1 + tw) * E + m * I64, m * E),
        # _log_softmax_backward_data: log-probabilities and their gradient read, dX written
        ("loss/grad", "Softmax", 2 * N * C * E, N * C * E),
    ]


def test_cross_entropy_none_weighted_spatial():
    sp = (3, 5)
    m, n = N * 3 * 5, N * C * 3 * 5      # 60 positions, 480 scores
    assert _loss_kernels(_loss_model("SoftmaxCrossEntropyLoss", "none", sp, weighted=True)) == [
        ("loss/zero", "Mul", 0, n * E),
        # dY of [4, 3, 5] (60) + 60 int64 targets + W at the 60 picked classes; 60 written
        ("loss/scatter", "ScatterND", m * E + m * I64 + m * E, m * E),
        ("loss/grad", "Softmax", 2 * n * E, n * E),
    ]


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_nll_loss_is_zero_fill_and_scatter(reduction):
    dy = N if reduction == "none" else 2       # dY [4], or dY and total_weight (1 each)
    assert _loss_kernels(_loss_model("NegativeLogLikelihoodLoss", reduction)) == [
        ("loss/zero", "Mul", 0, N * C * E),
        ("loss/scatter", "ScatterND", dy * E + N * I64, N * E),
    ]


def test_nll_loss_spatial_sum_weighted():
    m = N * 3 * 5
    assert _loss_kernels(_loss_model("NegativeLogLikelihoodLoss", "sum", (3, 5), weighted=True)) == [
        ("loss/zero", "Mul", 0, N * C * 15 * E),
        # dY (1) + 60 int64 targets + 60 picked weights (sum: no total_weight load)
        ("loss/scatter", "ScatterND", 1 * E + m * I64 + m * E, m * E),
    ]


def test_training_step_ending_in_cross_entropy_lists_its_kernels():
    r = analyzer.analyze(_loss_model("SoftmaxCrossEntropyLoss", "mean"), "a100", train=True,
                         runtime="eager")
    plan, s = r.training.backward_plan, r.training.steps[0]
    assert [k.name for k in plan.kernels] == ["loss/zero", "loss/scatter", "loss/grad", "fc/dW"]
    assert plan.fallback == () and r.training.to_dict()["backward_plan"]["fallback_nodes"] == []
    assert (s.backward_method, s.backward_kernels, s.backward_fallback) == ("kernel plan", 4, 0)
    assert s.backward_s > 0
