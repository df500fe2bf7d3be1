"""Dropout in a training step (analyzer.training.dropout, ``dropout=P``): where it is placed on
exported transformers, the bytes of one dropout's forward and backward kernels in closed form,
P = 0, a training-mode export's own Dropout nodes, and the options' checks."""

import os

import numpy as np
import pytest
from onnx import helper

import analyzer
from analyzer.errors import InputSpecError
from analyzer.training import dropout as D
from onnx_builders import graph

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "torch")


def _train(model, **kw):
    return analyzer.analyze(model, hw="a100", runtime="eager", train=True, **kw)


@pytest.mark.parametrize("model", ["bert", "gpt2", "vit"])
def test_two_layer_transformer_placements(model):
    rep = _train(os.path.join(FIX, f"{model}.onnx"), dropout=0.1)
    d = rep.training.to_dict()["dropout"]
    # 2 layers x (attention probabilities 1 + residual branches 2: attention output, MLP
    # output) + the embedding output 1 = 7; Hugging Face's train mode runs 7 dropouts in bert
    # and gpt2 (CPU aten log of model.train(): 7 bernoulli_; vit's config has p = 0)
    assert d["placed"] == 7
    assert d["by_where"] == {"embedding": 1, "attention": 2, "residual": 4}
    assert rep.training.backward_plan.dropouts == 7
    assert rep.training.to_dict()["backward_plan"]["dropout_kernels"] == 7
    assert d["p"] == 0.1 and all(x["p"] == 0.1 for x in d["nodes"])


def test_bert_placement_nodes():
    rep = _train(os.path.join(FIX, "bert.onnx"), dropout=0.1)
    names = [(x["node"].rsplit("/", 2)[-2], x["where"], x["elements"])
             for x in rep.training.to_dict()["dropout"]["nodes"]]
    # [1, 32, 128] hidden states: 4096 elements; [1, 2, 32, 32] probabilities: 2048
    assert names[:4] == [("LayerNorm", "embedding", 4096), ("self", "attention", 2048),
                         ("dense", "residual", 4096), ("dense", "residual", 4096)]


def test_one_dropout_bytes():
    pl = D.Placement(0, "residual", 0.1, (1, 32, 128), "float32")
    f, b = D.forward_kernel(pl, "x"), D.backward_kernel(pl, "x")
    n = 1 * 32 * 128    # 4096 elements of 4 bytes
    assert (f.bytes_read, f.bytes_written) == (4 * n, 4 * n + n) == (16384, 20480)   # x; y + mask
    assert (b.bytes_read, b.bytes_written) == (4 * n + n, 4 * n) == (20480, 16384)   # dY + mask; dX
    assert f.vector_flops == b.vector_flops == n
    half = D.Placement(0, "residual", 0.1, (1, 32, 128), "float16")
    assert D.forward_kernel(half, "x").bytes_written == 2 * n + n


def test_p_zero_places_none_and_prices_the_difference():
    path = os.path.join(FIX, "bert.onnx")
    base, zero, drop = _train(path), _train(path, dropout=0.0), _train(path, dropout=0.1)
    assert zero.training.to_dict()["dropout"]["placed"] == 0
    assert "dropout" not in base.training.to_dict()
    s0, sz, sd = base.training.steps[0], zero.training.steps[0], drop.training.steps[0]
    assert (sz.forward_s, sz.backward_s) == (s0.forward_s, s0.backward_s)
    assert len(drop.training.backward_plan.kernels) == len(base.training.backward_plan.kernels) + 7
    assert sd.dropout_forward_s > 0
    assert sd.forward_s == pytest.approx(s0.forward_s + sd.dropout_forward_s, rel=1e-12)
    assert sd.backward_s > s0.backward_s


def _onnx_dropout(training_mode: bool, ratio: float = 0.2):
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="fc"),
             helper.make_node("Dropout", ["h", "ratio", "mode"], ["y"], name="drop")]
    inits = {"W": np.ones((16, 32), np.float32), "ratio": np.asarray(ratio, np.float32),
             "mode": np.asarray(training_mode, np.bool_)}
    return graph(nodes, {"x": (4, 16)}, ["y"], inits)


def test_training_mode_export_dropout_nodes():
    rep = _train(_onnx_dropout(True))
    d = rep.training.to_dict()["dropout"]
    # placed without dropout=P, at the node's own ratio; [4, 32] = 128 elements
    assert d["placed"] == 1 and d["by_where"] == {"onnx": 1}
    assert d["nodes"] == [{"node": "drop", "where": "onnx", "p": pytest.approx(0.2), "elements": 128}]
    assert "dropout" not in _train(_onnx_dropout(False)).training.to_dict()
    assert "dropout" not in _train(_onnx_dropout(True, 0.0)).training.to_dict()


def test_options_checked():
    path = os.path.join(FIX, "bert.onnx")
    with pytest.raises(InputSpecError):
        analyzer.analyze(path, dropout=0.1)            # not a training step
    with pytest.raises(InputSpecError):
        _train(path, dropout=1.0)


def test_masks_kept_for_backward():
    path = os.path.join(FIX, "bert.onnx")
    base, drop = _train(path), _train(path, dropout=0.1)
    # 1 byte per dropped element: embedding 4096 + 2 x (probabilities 2048 + 2 x 4096) = 24576
    assert drop.training.steps[0].memory.activations - base.training.steps[0].memory.activations \
        == 4096 + 2 * (2048 + 2 * 4096) == 24576


def test_dropout_multiplies_in_the_step_counts():
    path = os.path.join(FIX, "bert.onnx")
    base, drop = _train(path).training.counts, _train(path, dropout=0.1).training.counts
    # one multiply per dropped element forward and backward (y = x * mask/(1-p); dX = dY *
    # mask/(1-p)): embedding 4096 + 2 layers x (probabilities 2048 + 2 residuals x 4096) = 24576
    n = 4096 + 2 * (2048 + 2 * 4096)
    assert (drop.dropout_forward, drop.dropout_backward) == (n, n) == (24576, 24576)
    assert drop.forward_vector - base.forward_vector == n
    assert drop.backward_vector - base.backward_vector == n
    assert drop.flops - base.flops == 2 * n
    d = drop.to_dict()
    assert d["forward"]["of_which_dropout_vector_flops"] == n
    assert "of_which_dropout_vector_flops" not in base.to_dict()["forward"]
    # an ONNX training-mode Dropout (an identity in the inference count): [4, 32] = 128
    onnx = _train(_onnx_dropout(True)).training.counts
    assert (onnx.dropout_forward, onnx.dropout_backward) == (128, 128)
